"""`python -m bme_cli` and the `bme` console script: Ctrl-C while the modules load exits 130
quietly, as it does later. Nothing but sys is imported before the guard."""
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


if __name__ == "__main__":
    main()
