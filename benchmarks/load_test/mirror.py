"""A light client's copy of the kernel's widget states, and the questions it asks of it: which
model is the Tab or the op dropdown, what a tab holds, whether its view is drawn or loading."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from benchmarks.load_test.protocol import WIDGET_VIEW


def references(value: Any) -> Iterator[str]:
    """Model ids a widget state refers to: ``IPY_MODEL_`` strings and Output widget views."""
    if isinstance(value, str):
        if value.startswith("IPY_MODEL_"):
            yield value.removeprefix("IPY_MODEL_")
    elif isinstance(value, list | tuple):
        for item in value:
            yield from references(item)
    elif isinstance(value, dict):
        view = value.get(WIDGET_VIEW)
        if isinstance(view, dict) and isinstance(view.get("model_id"), str):
            yield view["model_id"]
        for item in value.values():
            yield from references(item)


class WidgetMirror:
    """The client's copy of the kernel's widget states (``update_states``, then updates)."""

    def __init__(self) -> None:
        self.states: dict[str, dict[str, Any]] = {}

    def load(self, states: dict[str, Any]) -> None:
        for model_id, entry in states.items():
            self.states[model_id] = dict(entry.get("state", {}))

    def update(self, model_id: str, state: dict[str, Any]) -> None:
        self.states.setdefault(model_id, {}).update(state)

    def by_class(self, css_class: str) -> str | None:
        for model_id, state in self.states.items():
            if css_class in (state.get("_dom_classes") or ()):
                return model_id
        return None

    def state_of(self, css_class: str) -> dict[str, Any]:
        model_id = self.by_class(css_class)
        return self.states.get(model_id, {}) if model_id else {}

    def reachable(self, root: str) -> set[str]:
        """Every model inside ``root`` (children, outputs, marks, ...)."""
        seen: set[str] = set()
        todo = [root]
        while todo:
            model_id = todo.pop()
            if model_id in seen:
                continue
            seen.add(model_id)
            todo.extend(r for r in references(self.states.get(model_id, {})) if r not in seen)
        return seen

    def tab_index(self, title: str) -> int | None:
        """The index of the tab titled ``title`` in the Tab widget."""
        titles = [str(t) for t in self.state_of("px-tabs").get("titles") or []]
        return titles.index(title) if title in titles else None

    def tab_root(self, index: int) -> str | None:
        """The model of the Tab's child ``index`` (the tab, or the slot it is built into when shown)."""
        children = self.state_of("px-tabs").get("children") or []
        return str(children[index]).removeprefix("IPY_MODEL_") if index < len(children) else None

    def loading(self, key: str) -> bool:
        return "px-msg-loading" in str(self.state_of(f"px-{key}-status").get("value", ""))

    def has_content(self, key: str) -> bool:
        """The tab shows a plot or details output, or a status message that is not 'loading'."""
        if self.loading(key):
            return False
        if self.state_of(f"px-{key}-plot").get("outputs") or self.state_of(f"px-{key}-details").get("value"):
            return True
        return "px-msg" in str(self.state_of(f"px-{key}-status").get("value", ""))

    def plot_mimes(self, key: str) -> list[str]:
        outputs = self.state_of(f"px-{key}-plot").get("outputs") or []
        return sorted(
            {m for o in outputs if isinstance(o, dict) for m in o.get("data", {}) if m != "text/plain"}
        )

    def kernels_view_ready(self) -> bool:
        outputs = self.state_of("px-kernels-plot").get("outputs") or []
        shown = any(
            isinstance(o, dict) and set(o.get("data", {})) & {WIDGET_VIEW, "image/png", "image/svg+xml"}
            for o in outputs
        )
        return self.by_class("px-app") is not None and shown and not self.loading("kernels")

    def op_choice(self, op: str) -> tuple[int | None, str | None]:
        """(index of ``op`` in the op dropdown, the op shown now)."""
        state = self.state_of("px-op")
        labels = [
            str(label).split()[0] if str(label).split() else "" for label in state.get("_options_labels", [])
        ]
        current_index = state.get("index")
        current = (
            labels[current_index] if isinstance(current_index, int) and current_index < len(labels) else None
        )
        return (labels.index(op) if op in labels else None), current

    def app_errors(self) -> int:
        return sum("px-msg-error" in str(s.get("value", "")) for s in self.states.values())
