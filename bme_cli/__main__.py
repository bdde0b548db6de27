"""`python -m bme_cli` and the `bme` console script: Ctrl-C while the modules load exits 130
quietly, as it does later. Nothing but sys is imported before the guard, and `bme --version`
alone answers without loading the command line (the same line as `bme --config X --version`)."""
from __future__ import annotations

import sys


def main() -> None:
    """Load the command line and run it; a KeyboardInterrupt during loading is exit 130."""
    if sys.argv[1:] == ["--version"]:  # scripts ask this to check bme is there: no need to load typer
        from . import __version__
        sys.stdout.write(f"bme {__version__}\n")
        return
    try:
        from .cli import main as run
    except KeyboardInterrupt:
        sys.stderr.write("bme: interrupted\n")
        raise SystemExit(130) from None
    run()


if __name__ == "__main__":
    main()
