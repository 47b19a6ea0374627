"""``precision-explorer kernels``'s rows: catalog ops through
:func:`~explorer.queries.availability.availability`, raw ops as their registry rows, from the
installed registry or the one shipped for ``--tf-version``."""

from __future__ import annotations

import argparse
from typing import Any


def answer_environment(env: dict[str, Any]) -> dict[str, Any]:
    """The keys of a sweep's environment that say which TensorFlow registry answered."""
    return {k: env[k] for k in ("tf_version", "tf_release", "registry_source") if k in env}


def _release_registry(args: argparse.Namespace) -> tuple[Any, str] | None:
    """The registry ``--tf-version`` asks for and where it comes from (None: the installed one,
    as :func:`~explorer.runtime.registry.get_registry` finds it); checked by
    :func:`~explorer.cli.kernels.args.check_release_options`."""
    from explorer.analysis import releases
    from explorer.runtime import registry

    if args.tf_version is None:
        return None
    if args.tf_version in releases.shipped_releases():
        return releases.release_registry(args.tf_version), releases.release_source(args.tf_version)
    return registry.get_registry(), registry.registry_source()  # the installed release, not shipped


def sweep(args: argparse.Namespace) -> Any:
    """Availability of the requested ops: catalog ops through
    :func:`~explorer.queries.availability.availability`, raw ops (by the spelling rule) as
    their registry rows; from the registry of ``--tf-version`` when given."""
    from explorer.cli.kernels.args import installed_version
    from explorer.queries.availability import availability
    from explorer.queries.op_names import resolve_op_names
    from explorer.runtime import registry

    chosen = _release_registry(args)
    modes, backends = args.mode, args.backend
    if chosen is not None and args.tf_version != installed_version():
        modes, backends = ["registry"], ["tensorflow"]  # another release: its registry only
    answering = (lambda: chosen[0]) if chosen is not None else registry.get_registry
    catalog_ops: list[str] | None = None
    raw_ops: list[str] = []
    if args.op:
        if chosen is not None:
            _check_raw_ops_of_release(args.op, chosen[0])
        catalog_ops, raw_ops = resolve_op_names(args.op, answering)
    if raw_ops:
        _check_raw_op_request(raw_ops, args)
    result = availability(
        ops=catalog_ops,
        dtypes=args.dtype,
        backends=backends,
        devices=args.device,
        modes=modes,
        use_cache=not args.no_cache,
        progress=not args.json,
        probe_timeout=args.timeout,
        registry=answering() if raw_ops or chosen is not None else None,
    )
    reg = answering()
    if raw_ops:
        result.rows = _with_raw_op_rows(result.rows, reg, raw_ops, args)
    if args.group:
        result = result.filter(group=args.group)
    source = chosen[1] if chosen is not None else registry.registry_source()
    result.environment.update(tf_version=reg.tf_version, registry_source=source)
    if args.tf_version is not None:
        result.environment["tf_release"] = args.tf_version
    return result


def _check_raw_ops_of_release(names: list[str], reg: Any) -> None:
    """ValueError for a raw op name (not a catalog name) that ``reg``'s release lacks but another
    shipped release has, naming those releases."""
    from explorer.analysis import releases
    from explorer.ops import catalog

    for name in names:
        if name in catalog() or name.lower() in catalog() or reg.has_op(name):
            continue
        known = releases.known_op(name)
        if known is not None:
            have = releases.releases_with_op(known)
            raise ValueError(
                f"TensorFlow {reg.tf_version} has no op {known}; the shipped releases that have it: "
                f"{', '.join(have)}"
            )


def _check_raw_op_request(raw_ops: list[str], args: argparse.Namespace) -> None:
    """ValueError when raw ops are asked for where they have no rows (no registry mode, or
    no tensorflow backend), naming the catalog ops that run them."""
    missing = []
    if args.mode and "registry" not in args.mode:
        missing.append("--mode registry")
    if args.backend and "tensorflow" not in args.backend:
        missing.append("--backend tensorflow")
    if not missing:
        return
    from explorer.ops import find_by_raw_op

    users = sorted({op.name for raw in raw_ops for op in find_by_raw_op(raw)})
    names = ", ".join(raw_ops)
    hint = f", or ask for a catalog op that runs it: {', '.join(users)}" if users else ""
    raise ValueError(
        f"{names}: a TensorFlow raw op as TensorFlow spells it has registry rows only; "
        f"add {' and '.join(missing)}{hint}"
    )


def _with_raw_op_rows(rows: Any, reg: Any, raw_ops: list[str], args: argparse.Namespace) -> Any:
    """``rows`` and the registry rows of each raw op (alone, not the catalog ops that call it);
    :func:`_check_raw_op_request` made sure the selection has registry rows."""
    import pandas as pd

    from explorer.queries.availability_build import Target, declared_rows

    dtypes = [d for d in (args.dtype or reg.float_dtypes) if d in reg.float_dtypes]
    targets = [Target(raw, (raw,), False) for raw in raw_ops]
    extra = pd.DataFrame(declared_rows(reg, targets, dtypes, args.device or ["CPU"]), columns=rows.columns)
    if extra.empty:
        return rows
    if rows.empty:
        return extra
    return pd.concat([rows, extra], ignore_index=True)
