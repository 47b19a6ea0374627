"""The error messages :func:`~explorer.analysis.error_text.parse_error` recognises: one
:class:`Pattern` (a kind, a framework, a regular expression) per kind of message."""

from __future__ import annotations

import re

from explorer.analysis.error_text._kind_patterns import MORE_PATTERNS, Pattern

_NODE_ATTRS = r"\{\{node (?P<node>[^}\n]{0,2000})\}\} = (?P<op>\w+)\[(?P<attrs>[^\]\n]{0,2000})\]"

#: every kind of error message that is recognised, TensorFlow first
PATTERNS: tuple[Pattern, ...] = (
    Pattern(
        "no_kernel_for_device",
        "tensorflow",
        "Could not find device for node: {{node X}} = X[T=DT_HALF] (All kernels registered for op X: ...)",
        re.compile(r"Could not find device for node:? " + _NODE_ATTRS),
    ),
    Pattern(
        "no_opkernel_registered",
        "tensorflow",
        "No OpKernel was registered to support Op 'X' with these attrs (Registered kernels: ...)",
        re.compile(
            r"No OpKernel was registered to support Op '(?P<op>\w+)'(?: used by \{\{node [^}]{0,300}\}\})?"
            r"\s*with these attrs:?\s*(?:\[(?P<attrs>[^\]\n]{0,2000})\])?"
        ),
    ),
    Pattern(
        "xla_unsupported_op",
        "tensorflow",
        "Detected unsupported operations when trying to compile graph ... on XLA_CPU_JIT: X "
        "(No registered 'X' OpKernel for XLA_CPU_JIT devices ...)",
        re.compile(
            r"Detected unsupported operations when trying to compile graph \S{0,2000} on (?P<device>\w+): "
            r"(?P<op>\w+) \(No registered '\w+' OpKernel for \w+ devices compatible with node"
        ),
    ),
    Pattern(
        "no_registered_kernel",
        "tensorflow",
        "No registered 'X' OpKernel for CPU devices compatible with node ...",
        re.compile(r"No registered '(?P<op>\w+)' OpKernel for (?P<device>\w+) devices compatible with node"),
    ),
    Pattern(
        "attr_not_allowed",
        "tensorflow",
        "Value for attr 'T' of bfloat16 is not in the list of allowed values: ...",
        re.compile(
            r"Value for attr '(?P<attr>\w+)' of (?P<dtype>\w+) is not in the list of allowed values: "
            r"(?P<allowed>[\w, ]{0,1000})"
        ),
    ),
    Pattern(
        "param_not_allowed",
        "tensorflow",
        "Value passed to parameter 'x' has DataType bfloat16 not in list of allowed values: ...",
        re.compile(
            r"Values? passed to parameter '(?P<param>\w+)' has (?:a )?DataType (?:of )?(?P<dtype>\w+) "
            r"not in (?:the )?list of allowed values: (?P<allowed>[\w, ]{0,1000})"
        ),
    ),
    Pattern(
        "xla_unsupported_dtype",
        "tensorflow",
        "Unsupported dtype19 for '{{node X}} = X[T=DT_HALF](...)' (XLA compilation)",
        re.compile(r"Unsupported dtype(?P<enum>\d+) for '" + _NODE_ATTRS),
    ),
    Pattern(
        "xla_invalid_type",
        "tensorflow",
        "Invalid type for X half (XLA compilation)",
        re.compile(r"Invalid type for (?P<op>[A-Z]\w*) (?P<dtype>\w+)"),
    ),
    Pattern(
        "torch_not_implemented",
        "torch",
        "\"<kernel>\" not implemented for 'Half' (or 'BFloat16', 'Float8_e4m3fn', ...)",
        re.compile(
            r"\"(?P<kernel>[^\"\n]{1,200})\"(?: \"(?P<kernel2>[^\"\n]{1,100})\")? "
            r"not implemented for '(?P<dtype>[^'\n]{1,60})'"
        ),
    ),
    Pattern(
        "jax_fft_dtype",
        "jax",
        "RFFT requires f32 or f64 input type, but is given 'f16' (JAX 0.10: RFFT input must be "
        "float32 or float64, got float16)",
        re.compile(
            r"(?P<fft>I?R?FFT) (?:requires (?P<allowed>[\w ]{0,100}?) input type, but is given "
            r"'(?P<dtype>\w{1,40})'|input must be (?P<allowed2>[\w ]{0,100}?), got (?P<dtype2>\w{1,40}))"
        ),
    ),
    Pattern(
        "unsupported_dtype",
        "jax or torch",
        "Unsupported dtype bfloat16 (JAX linear algebra; PyTorch: Unsupported dtype Half)",
        re.compile(
            r"(?:Unsupported dtype|doesn't support tensors of type:) (?:torch\.)?(?P<dtype>[A-Za-z]\w{0,40})"
        ),
    ),
    *MORE_PATTERNS,
)
