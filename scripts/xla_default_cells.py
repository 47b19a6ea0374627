"""How many registry cells the DEFAULT-kernel rule decides: (op, float dtype, device type) cells
that are ``ok`` only through a DEFAULT kernel, per device type, and which of them sit on a
symbolic (XLA JIT) device, where TensorFlow does not look DEFAULT kernels up.

    python scripts/xla_default_cells.py
"""

from __future__ import annotations

from explorer.backends import tensorflow_registry
from explorer.runtime.registry import get_registry


def main() -> None:
    reg = get_registry()
    ops = [n for n, info in reg.ops.items() if info.data_attr is not None]
    now = reg.matrix(ops=ops)
    original = tensorflow_registry.is_symbolic_device
    tensorflow_registry.is_symbolic_device = lambda device_type: False  # DEFAULT everywhere
    try:
        everywhere = tensorflow_registry.Registry(reg.data).matrix(ops=ops)
    finally:
        tensorflow_registry.is_symbolic_device = original
    changed = now[now["status"] != everywhere["status"]]
    print(f"TensorFlow {reg.tf_version}: {len(ops)} ops with a float type attribute, {len(now)} cells")
    ops_changed = changed["op"].nunique()
    print(f"cells ok only if DEFAULT kernels served XLA JIT devices: {len(changed)} in {ops_changed} ops")
    for device, n in changed.groupby("device_type").size().items():
        print(f"  {device}: {n}")


if __name__ == "__main__":
    main()
