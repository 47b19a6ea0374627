import sys

from explorer.cli import main

if __name__ == "__main__":  # guarded: sandbox workers are spawned and re-import __main__
    sys.exit(main())
