"""The app's selection as a plain object with observers: no widgets, no plotting.

Widgets write to it (``state.set(dtypes=("bfloat16",))``) and observe it; each tab
renders from it.  Every value is validated and normalised on the way in, so a
tab can trust what it reads.

>>> from explorer.app.state import AppState
>>> state = AppState()
>>> seen = []
>>> _ = state.observe(lambda changes: seen.append(sorted(changes)))
>>> state.set(dtypes=["fp32", "bf16"])
>>> state.dtypes, seen
(('float32', 'bfloat16'), [['dtypes']])
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from typing import Any

from explorer.analysis.availability_rows import AVAILABILITY_MODES
from explorer.backends import BACKEND_NAMES, DEVICE_TYPES
from explorer.formats import FORMAT_NAMES, resolve
from explorer.ops import catalog, get_op
from explorer.training import ALL_POLICY_NAMES

#: The fields of the selection, in display order.
FIELDS: tuple[str, ...] = ("op", "dtypes", "device", "backends", "mode", "value", "policies")

Changes = dict[str, tuple[Any, Any]]
Observer = Callable[[Changes], None]


class AppState:
    """The current selection: op, dtypes, device, backends, mode, bit-inspector value, policies.

    ``observe(callback, names)`` registers ``callback(changes)`` where ``changes``
    maps each changed field to ``(old, new)``; it returns a function that removes
    the observer.  ``set(**fields)`` validates everything first, then assigns and
    notifies once, so a bad value leaves the state untouched.
    """

    def __init__(self, **fields: Any) -> None:
        self._lock = threading.RLock()
        self._observers: list[tuple[Observer, frozenset[str] | None]] = []
        self._raw_op_checker: Callable[[str], bool] | None = None
        self._policy_choices: tuple[str, ...] = ALL_POLICY_NAMES
        self._values: dict[str, Any] = {
            "op": "range",
            "dtypes": ("float16", "bfloat16"),
            "device": "CPU",
            "backends": ("tensorflow", "numpy", "emulated"),
            "mode": "registry",
            "value": "0.1",
            "policies": ("float32", "mixed_float16", "mixed_bfloat16"),
        }
        if fields:
            self.set(**fields)

    # ------------------------------------------------------------------ reading

    def __getattr__(self, name: str) -> Any:
        values = self.__dict__.get("_values")
        if values is not None and name in values:
            return values[name]
        raise AttributeError(f"{type(self).__name__} has no attribute {name!r}; fields: {', '.join(FIELDS)}")

    def __setattr__(self, name: str, value: Any) -> None:
        if name in FIELDS:
            self.set(**{name: value})
        else:
            super().__setattr__(name, value)

    def as_dict(self) -> dict[str, Any]:
        """A copy of the selection."""
        with self._lock:
            return dict(self._values)

    @property
    def dtype(self) -> str:
        """The first selected dtype: the one single-format views show."""
        return str(self._values["dtypes"][0])

    @property
    def registry_device_type(self) -> str:
        """TensorFlow's registry device type of the selected device and mode: the device type
        itself for mode registry or eager, its XLA compilation device type for xla.

        >>> AppState(device="GPU", mode="xla").registry_device_type
        'XLA_GPU_JIT'
        """
        from explorer.backends.tensorflow_registry import registry_device

        mode = "xla" if self._values["mode"] == "xla" else "eager"
        return registry_device(str(self._values["device"]), mode)

    @property
    def policy_choices(self) -> tuple[str, ...]:
        """Policies the Training tab offers."""
        return self._policy_choices

    def __repr__(self) -> str:
        inner = ", ".join(f"{k}={v!r}" for k, v in self._values.items())
        return f"AppState({inner})"

    # ------------------------------------------------------------------ writing

    def set(self, **fields: Any) -> None:
        """Validate and assign fields, then notify the observers of what changed."""
        unknown = [k for k in fields if k not in FIELDS]
        if unknown:
            raise ValueError(
                f"unknown state field(s) {', '.join(unknown)}; valid fields: {', '.join(FIELDS)}"
            )
        clean = {name: getattr(self, f"_clean_{name}")(value) for name, value in fields.items()}
        with self._lock:
            changes = {k: (self._values[k], v) for k, v in clean.items() if self._values[k] != v}
            self._values.update(clean)
        if changes:
            self._notify(changes)

    def observe(self, callback: Observer, names: Iterable[str] | None = None) -> Callable[[], None]:
        """Call ``callback(changes)`` after every change (of ``names`` only, if given)."""
        if not callable(callback):
            raise TypeError(f"callback must be callable, got {type(callback).__name__}")
        wanted = None if names is None else frozenset(names)
        if wanted is not None and not wanted <= set(FIELDS):
            raise ValueError(
                f"unknown field(s) {sorted(wanted - set(FIELDS))}; valid fields: {', '.join(FIELDS)}"
            )
        entry = (callback, wanted)
        self._observers.append(entry)

        def unobserve() -> None:
            if entry in self._observers:
                self._observers.remove(entry)

        return unobserve

    def set_raw_op_checker(self, checker: Callable[[str], bool] | None) -> None:
        """Let TensorFlow raw op names (``"Cholesky"``) be selected; ``checker(name)`` says which exist."""
        self._raw_op_checker = checker

    def set_policy_choices(self, choices: Iterable[str]) -> None:
        """Replace the policies offered (the training module knows the real list)."""
        choices = tuple(choices)
        if not choices:
            raise ValueError("policy choices must not be empty")
        self._policy_choices = choices
        kept = tuple(p for p in self._values["policies"] if p in choices) or choices[:1]
        self.set(policies=kept)

    def _notify(self, changes: Changes) -> None:
        for callback, wanted in list(self._observers):
            if wanted is None or wanted & changes.keys():
                callback(changes)

    # ------------------------------------------------------------------ validation

    def _clean_op(self, value: Any) -> str:
        if not isinstance(value, str):
            raise TypeError(f"op must be a string, got {type(value).__name__}")
        name = value.strip()
        if name in catalog() or name.lower() in catalog():
            return get_op(name).name
        if self._raw_op_checker is not None and self._raw_op_checker(name):
            return name
        if self._raw_op_checker is None and name[:1].isupper() and name.isidentifier():
            return name  # a raw op name; checked against the registry once it has loaded
        get_op(name)  # raises ValueError naming the closest ops and the valid ones
        return name

    def _clean_dtypes(self, value: Any) -> tuple[str, ...]:
        items = [value] if isinstance(value, str) or not isinstance(value, Iterable) else list(value)
        if not items:
            raise ValueError(f"select at least one dtype; valid dtypes: {', '.join(FORMAT_NAMES)}")
        names: list[str] = []
        for item in items:
            name = resolve(item).name
            if name not in names:
                names.append(name)
        return tuple(names)

    def _clean_device(self, value: Any) -> str:
        from explorer.backends.base import normalize_device

        return normalize_device(value) if isinstance(value, str) else _bad("device", value, DEVICE_TYPES)

    def _clean_backends(self, value: Any) -> tuple[str, ...]:
        items = [value] if isinstance(value, str) else list(value)
        if not items:
            raise ValueError(f"select at least one backend; valid backends: {', '.join(BACKEND_NAMES)}")
        for item in items:
            if item not in BACKEND_NAMES:
                _bad("backend", item, BACKEND_NAMES)
        return tuple(b for b in BACKEND_NAMES if b in items)

    def _clean_mode(self, value: Any) -> str:
        if value not in AVAILABILITY_MODES:
            _bad("mode", value, AVAILABILITY_MODES)
        return str(value)

    def _clean_value(self, value: Any) -> str:
        # kept as text: a decimal string ("0.1") gives the bit inspector an exact rounding error
        if isinstance(value, bool) or not isinstance(value, int | float | str):
            raise TypeError(f"value must be a number or a numeric string, got {type(value).__name__}")
        text = value.strip() if isinstance(value, str) else repr(float(value))
        try:
            float(text)
        except ValueError:
            raise ValueError(
                f"value must be a number such as 0.1, 1e-5, -inf or nan, got {value!r}"
            ) from None
        return text

    def _clean_policies(self, value: Any) -> tuple[str, ...]:
        items = [value] if isinstance(value, str) else list(value)
        if not items:
            raise ValueError(f"select at least one policy; valid policies: {', '.join(self._policy_choices)}")
        for item in items:
            if item not in self._policy_choices:
                _bad("policy", item, self._policy_choices)
        return tuple(p for p in self._policy_choices if p in items)


def _bad(what: str, value: Any, choices: Iterable[str]) -> Any:
    raise ValueError(f"unknown {what} {value!r}; valid {what}s: {', '.join(choices)}")
