"""``python -m benchmarks.load_test``: see :mod:`benchmarks.load_test` and ``--help``."""

import signal
import sys

from benchmarks.load_test.cli import main

if __name__ == "__main__":
    signal.signal(signal.SIGTERM, signal.default_int_handler)  # until asyncio's handler: finally blocks run
    signal.signal(signal.SIGHUP, signal.default_int_handler)
    sys.exit(main())
