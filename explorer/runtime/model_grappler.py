"""TensorFlow's grappler auto-mixed-precision rewrite of a Keras model, read from the optimised
graph.

Grappler rewrites a float32 graph when it runs: ``auto_mixed_precision`` (CUDA: float16 on a
GPU), ``auto_mixed_precision_onednn_bfloat16`` (oneDNN: bfloat16 on a CPU).  Which ops it moves
is decided by lists compiled into TensorFlow, so they are read here by running grappler itself
on the model's graph (``tensorflow.python.grappler.tf_optimizer.OptimizeGraph``, the function
TensorFlow's own grappler tests call) with only that optimizer on, and reading each node's dtype
attribute in the graph it returns.  Grappler skips the CUDA rewrite on a machine without a GPU
(the graph comes back unchanged); :attr:`GrapplerRewrite.changed` says whether it did anything.

TensorFlow is imported inside the functions.
"""

from __future__ import annotations

import weakref
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

#: the rewrites read, by the name a check shows -> grappler's RewriterConfig option
REWRITES: dict[str, str] = {
    "grappler_float16": "auto_mixed_precision",
    "grappler_onednn_bfloat16": "auto_mixed_precision_onednn_bfloat16",
}
#: the format each rewrite moves ops to
REWRITE_FORMATS: dict[str, str] = {"grappler_float16": "float16", "grappler_onednn_bfloat16": "bfloat16"}
#: type attributes that carry a node's data dtype, in the order they are read (as model_keras)
_DTYPE_ATTRS = ("T", "dtype", "DstT", "Tout")


@dataclass(frozen=True)
class GrapplerRewrite:
    """What one grappler rewrite did to the model's float32 graph on this machine."""

    #: the name a check shows (a key of :data:`REWRITES`)
    name: str
    #: grappler's option
    option: str
    #: node name -> its data dtype after the rewrite, for the nodes of the original graph
    dtypes: dict[str, str] = field(default_factory=dict)
    #: how many Cast nodes the rewrite added
    casts_added: int = 0
    #: why it could not be read ("" when it was)
    error: str = ""

    @property
    def changed(self) -> bool:
        """True when the rewrite changed the graph here (it ran)."""
        return self.casts_added > 0

    def in_format(self) -> list[str]:
        """The nodes the rewrite moved to its format."""
        fmt = REWRITE_FORMATS[self.name]
        return [name for name, dtype in self.dtypes.items() if dtype == fmt]


def _node_dtype(node: Any) -> str | None:
    import tensorflow as tf

    for attr in _DTYPE_ATTRS:
        if attr in node.attr and node.attr[attr].type:
            return str(tf.dtypes.as_dtype(node.attr[attr].type).name)
    return None


def _optimised(graph: Any, outputs: Sequence[Any], option: str) -> Any:
    """The GraphDef grappler returns for ``graph`` with only the rewrite ``option`` on."""
    from tensorflow.core.protobuf import config_pb2, rewriter_config_pb2
    from tensorflow.python.grappler import tf_optimizer
    from tensorflow.python.training import saver

    meta = saver.export_meta_graph(graph_def=graph.as_graph_def(add_shapes=True), graph=graph)
    meta.collection_def["train_op"].node_list.value.extend(t.op.name for t in outputs)
    config = config_pb2.ConfigProto()
    rewrite = config.graph_options.rewrite_options
    rewrite.min_graph_nodes = -1  # small graphs too
    rewrite.meta_optimizer_iterations = rewriter_config_pb2.RewriterConfig.ONE
    for other in ("constant_folding", "arithmetic_optimization", "remapping", "layout_optimizer",
                  "dependency_optimization", "loop_optimization", "function_optimization",
                  "shape_optimization", "common_subgraph_elimination", "debug_stripper"):  # fmt: skip
        setattr(rewrite, other, rewriter_config_pb2.RewriterConfig.OFF)
    setattr(rewrite, option, rewriter_config_pb2.RewriterConfig.ON)
    return tf_optimizer.OptimizeGraph(config, meta)


def read_rewrites(
    model: Any, inputs: Sequence[np.ndarray], names: Sequence[str] = tuple(REWRITES)
) -> list[GrapplerRewrite]:
    """Each rewrite in ``names`` applied by grappler to the float32 graph of ``model(*inputs)``
    (the graph :func:`explorer.runtime.model_keras.trace` reads), one :class:`GrapplerRewrite`
    each."""

    key = (tuple(names), tuple((tuple(x.shape), str(x.dtype)) for x in inputs))
    try:
        cache = _READ.setdefault(model, {})
    except TypeError:  # not weakly referable: read every time
        cache = {}
    if key not in cache:
        cache[key] = _read_rewrites(model, inputs, names)
    return list(cache[key])


#: model -> (rewrites, input shapes and dtypes) -> what was read (the graph's structure only:
#: read once per process and model)
_READ: weakref.WeakKeyDictionary[Any, dict[Any, list[GrapplerRewrite]]] = weakref.WeakKeyDictionary()


def _read_rewrites(model: Any, inputs: Sequence[np.ndarray], names: Sequence[str]) -> list[GrapplerRewrite]:
    import tensorflow as tf

    specs = [tf.TensorSpec(x.shape, tf.as_dtype(x.dtype)) for x in inputs]
    concrete = tf.function(lambda *xs: model(*xs, training=False)).get_concrete_function(*specs)
    original = {op.name for op in concrete.graph.get_operations()}
    out = []
    for name in names:
        option = REWRITES[name]
        try:
            graph_def = _optimised(concrete.graph, concrete.outputs, option)
        except (ImportError, AttributeError, ValueError, tf.errors.OpError) as exc:
            out.append(GrapplerRewrite(name, option, error=f"{type(exc).__name__}: {exc}".splitlines()[0]))
            continue
        dtypes = {}
        casts = 0
        for node in graph_def.node:
            if node.name in original:
                dtype = _node_dtype(node)
                if dtype is not None:
                    dtypes[node.name] = dtype
            elif node.op == "Cast":
                casts += 1
        out.append(GrapplerRewrite(name, option, dtypes, casts))
    return out


def notes(rewrites: Sequence[GrapplerRewrite], amp: Sequence[Mapping[str, Any]]) -> list[str]:
    """What each rewrite did here, in words; ``amp``: the ``amp`` entries of the ops that compute
    (data movement left out), which hold each rewrite's dtype of that op.

    >>> notes([GrapplerRewrite("grappler_float16", "auto_mixed_precision")], [])[0][:60]
    "grappler's auto_mixed_precision (float16, CUDA) left the flo"
    """
    out = []
    for r in rewrites:
        fmt = REWRITE_FORMATS[r.name]
        seen = [entry[r.name]["dtype"] for entry in amp if r.name in entry]
        where = "float16, CUDA" if r.name == "grappler_float16" else "bfloat16, oneDNN on CPU"
        if r.error:
            out.append(f"grappler's {r.option} ({where}) could not be read here: {r.error}")
        elif r.changed:
            out.append(
                f"grappler's {r.option} ({where}) read from the optimised float32 graph on this machine: "
                f"{seen.count(fmt)} of {len(seen)} computing ops in {fmt}, {r.casts_added} casts added "
                f"(amp key {r.name})"
            )
        elif r.name == "grappler_float16":
            out.append(
                f"grappler's {r.option} ({where}) left the float32 graph unchanged here: grappler runs it "
                "only with a GPU, so its float16 lists are not observed on this machine"
            )
        else:
            out.append(f"grappler's {r.option} ({where}) left the float32 graph unchanged on this machine")
    return out


__all__ = ["REWRITES", "REWRITE_FORMATS", "GrapplerRewrite", "notes", "read_rewrites"]
