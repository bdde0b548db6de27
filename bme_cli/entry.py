"""The `bme` console script: Ctrl-C while the modules load exits 130 quietly, as it does later.

Kept free of imports beyond sys so that nearly all start-up happens inside the guard.
"""
from __future__ import annotations

import sys


def main() -> None:
    """Load the command line and run it; a KeyboardInterrupt during loading is exit 130."""
    try:
        from .cli import main as run
    except KeyboardInterrupt:
        sys.stderr.write("bme: interrupted\n")
        raise SystemExit(130) from None
    run()
