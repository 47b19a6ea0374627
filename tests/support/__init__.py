"""What the tests, the benchmarks and the deployment's test driver share, one copy of each.

* :mod:`tests.support.require`: skip on a developer's machine, fail in CI, when a framework,
  a browser or a tool is missing;
* :mod:`tests.support.net`: a free port, waiting for a server to answer;
* :mod:`tests.support.browser`: Debian's Chromium, its flags, Playwright's launch, axe-core;
* :mod:`tests.support.page`: reading and driving the app's page in a browser;
* :mod:`tests.support.voila`: starting and stopping a Voila server (the app's, or Voila's own);
* :mod:`tests.support.processes`: waiting for a condition, holding a worker slot from another process;
* :mod:`tests.support.oracles`, :mod:`tests.support.registry_oracle`,
  :mod:`tests.support.shipped_registries`: independent readings to check explorer against;
* :mod:`tests.support.hostile`: payloads for the escaping tests;
* :mod:`tests.support.faults`: functions that misbehave on purpose inside sandbox workers.

Imported as packages from the repository root (``from tests.support.browser import
CHROMIUM_ARGS``); benchmarks run as modules from there (``python -m benchmarks.bench_app_browser``).
"""
