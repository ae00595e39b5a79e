"""``python -m scheduler simulate STATE.yaml [--conf CONF.yaml] [--cycles N]``."""

from __future__ import annotations

import sys

from scheduler.cli import main

if __name__ == "__main__":
    sys.exit(main())
