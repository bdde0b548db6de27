"""`python -m bme_cli` and the `bme` console script: Ctrl-C while the modules load exits 130
quietly, as it does later. Nothing but sys is imported before the guard, and `bme --version`
and `bme --help` alone answer without loading the command line (the same text as `bme
--config X --version`; the help as Typer renders it, see cli/static_help.py)."""
from __future__ import annotations

import sys

# click lays help out min(columns, 80) - 2 wide: from 80 columns on, the stored text is exact.
_STATIC_HELP_COLUMNS = 80


def _static_help() -> str | None:
    """The stored `bme --help` text when it is what Typer would print here, else None."""
    import os
    import shutil
    if shutil.get_terminal_size().columns < _STATIC_HELP_COLUMNS:
        return None
    try:
        with open(os.path.join(os.path.dirname(__file__), "cli", "top_help.txt"), encoding="utf-8") as f:
            return f.read()
    except OSError:   # not installed with it: Typer renders the help
        return None


def main() -> None:
    """Load the command line and run it; a KeyboardInterrupt during loading is exit 130."""
    if sys.argv[1:] == ["--version"]:  # scripts ask this to check bme is there: no need to load typer
        from . import __version__
        sys.stdout.write(f"bme {__version__}\n")
        return
    if sys.argv[1:] == ["--help"] and (text := _static_help()) is not None:
        sys.stdout.write(text)
        return
    import gc
    # What loading the modules makes lives as long as the process: the cyclic GC would only
    # walk it again and again (a tenth of `bme recall`'s start-up), so it waits until they are
    # loaded, and then leaves them out of its walks for good (freeze).
    gc.disable()
    try:
        from .cli import main as run
    except KeyboardInterrupt:
        sys.stderr.write("bme: interrupted\n")
        raise SystemExit(130) from None
    finally:
        gc.freeze()
        gc.enable()
    run()


if __name__ == "__main__":
    main()
