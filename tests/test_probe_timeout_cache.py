"""A timeout is a condition of the run that hit it (a busy machine), not the op's status: it is
never served from the probe store; the next ask runs the probe again (issue 40, item 2)."""

from __future__ import annotations

import pytest

from explorer.outcome import Status
from explorer.queries.availability import availability
from explorer.runtime import envcache, probe_store
from explorer.runtime.probe import Probe, failure_record

pytestmark = pytest.mark.usefixtures("cache_dir")


def _numpy_statuses(result) -> list[str]:
    return [r["status"] for r in result.records() if r["backend"] == "numpy"]


def test_a_stored_timeout_is_run_again_and_a_stored_answer_is_not() -> None:
    first = availability("exp", "float16", backends="numpy", modes="eager", progress=False)
    assert first.probed == 1 and _numpy_statuses(first) == ["ok"]

    key = Probe("numpy", "exp", "float16", "CPU", "eager").key
    env_key = envcache.environment_key(envcache.environment())  # the key availability() stores under
    starved = failure_record(Status.TIMEOUT, "the probe did not finish within 1 s at load 16.0 on 2 cores")
    with probe_store.open_store() as store:
        assert key in store.keys(env_key)
        store.save(env_key, key, starved)

    again = availability("exp", "float16", backends="numpy", modes="eager", progress=False)
    assert (again.probed, again.cached) == (1, 0)  # run again, not read back
    assert _numpy_statuses(again) == ["ok"]
    with probe_store.open_store() as store:  # and the fresh answer replaced the timeout
        assert store.load(env_key, {key})[key]["status"] == "ok"

    third = availability("exp", "float16", backends="numpy", modes="eager", progress=False)
    assert (third.probed, third.cached) == (0, 1)  # an answer is served from the store


def test_a_timeout_says_the_load_it_happened_at() -> None:
    from explorer.runtime.probe import _record_of
    from explorer.runtime.sandbox import SandboxTimeout
    from explorer.runtime.worker_pool import ItemResult

    error = SandboxTimeout("numpy", 3.0)
    record = _record_of(ItemResult(0, None, error), 3.0)
    assert record["status"] == "timeout"
    assert " at load " in record["error"] and "run again on the next ask" in record["error"]
