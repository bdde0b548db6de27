"""What every command shares: the Typer app, global options, error handling, option types.

Imports stay light here and at the top of every command module: a command imports the
library modules it uses inside its body, so `bme --version`, `bme --help` and shell
completion load typer and little else (docs/performance.md, start-up).
"""
from __future__ import annotations

import functools
import gc
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Callable, Iterator, Optional

import typer

from .. import __version__
from ..errors import BmeError, ExitCode, UsageError
from .global_flags import GlobalFlagsGroup
from .lazy import LazyTyper

if TYPE_CHECKING:
    from ..providers.factory import Providers
    from ..settings import Settings

app = LazyTyper(name="bme", no_args_is_help=True, rich_markup_mode=None, cls=GlobalFlagsGroup,
                  pretty_exceptions_enable=False,
                  help="Long-term graph memory for SillyTavern chats (ST-BME compatible).")


@dataclass
class Runtime:
    """Global options, and the settings and providers built from them on first use."""

    config: Path | None = None
    verbose: bool = False
    use_cache: bool = True
    log_text: bool = False
    quiet: bool = False
    _providers: Providers | None = field(default=None, repr=False)
    _notice: str | None = field(default=None, repr=False)
    _warned_key_file: bool = field(default=False, repr=False)

    def load_settings(self, flags: dict[str, Any] | None = None) -> Settings:
        """The settings, read anew from env and config file on each call (flags differ per
        command, so nothing is cached); a key file others can read is said once."""
        from ..settings import load_settings
        flags = {**(flags or {}), **({"call_log_text": True} if self.log_text else {})}
        settings = load_settings(flags=flags or None, config_path=self.config)
        if settings.key_file_warning and not (self.quiet or self._warned_key_file):
            from .. import render
            render.notice(settings.key_file_warning)
            self._warned_key_file = True
        return settings

    def close(self) -> None:
        """Close the HTTP clients of the providers, if any were built."""
        if self._providers is not None:
            self._providers.close()

    def providers(self, settings: Settings, quiet: bool = False) -> Providers:
        """The chat model and embedder for this run, built once. What they are (offline, say)
        is told once, when the command has succeeded (`finish`), unless quiet."""
        if self._providers is None:
            from .. import render
            from ..providers.factory import build_providers
            log = render.notice if self.verbose else None
            self._providers = build_providers(settings, cache_dir=None,
                                              use_cache=self.use_cache and settings.cache, log=log)
            if not (quiet or self.quiet):
                self._notice = self._providers.notice
        return self._providers

    def told(self) -> None:
        """The command's own output already said what the providers are: no notice at the end."""
        self._notice = None

    def finish(self) -> None:
        """After a command succeeded: the providers' notice, once."""
        if self._notice:
            from .. import render
            render.notice(self._notice)
            self._notice = None


def handled(fn: Callable) -> Callable:
    """Turn bme's errors and Ctrl-C into one stderr line and the documented exit code."""
    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            result = fn(*args, **kwargs)
            rt = getattr(kwargs.get("ctx"), "obj", None)
            if isinstance(rt, Runtime):
                rt.finish()
            return result
        except BmeError as e:
            from .. import render
            render.error_line(str(e))
            raise typer.Exit(int(e.exit_code)) from None
        except KeyboardInterrupt:
            from .. import render
            render.error_line("interrupted")
            raise typer.Exit(int(ExitCode.INTERRUPTED)) from None
        except BrokenPipeError:
            raise typer.Exit(0) from None
    return wrapper


@contextmanager
def loading() -> Iterator[None]:
    """Load a command's library modules with the cyclic GC paused; in the `bme` process, whose
    start-up __main__ froze, freeze what they made too: it lives as long as the process, and
    the GC would walk it again at every collection."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if gc.get_freeze_count():   # bme's own process (its start-up froze); a test or library caller
            # only if it already froze something itself (store._settle does after a big graph)
            gc.freeze()
        if enabled:
            gc.enable()


def runtime(ctx: typer.Context) -> Runtime:
    """The global options of this invocation."""
    return ctx.ensure_object(Runtime)


def memory_flags(**values: Any) -> dict[str, Any]:
    """Command-line overrides of memory settings (None means not given)."""
    given = {k: v for k, v in values.items() if v is not None}
    return {"memory": given} if given else {}


def one_graph(chats: list[Path], graph: Path | None) -> None:
    """--graph names a single file, so it goes with a single chat."""
    if graph is not None and len(chats) > 1:
        raise UsageError("--graph names one graph file, so it takes exactly one chat")


def check_format(fmt: str, allowed: tuple[str, ...]) -> None:
    """Refuse an unknown --format value with a usage error."""
    if fmt not in allowed:
        raise UsageError(f"--format must be one of: {', '.join(allowed)}")


def _version(value: bool) -> None:
    if value:
        from .. import render
        render.write_text(f"bme {__version__}")
        raise typer.Exit()


GraphOpt = Annotated[Optional[Path], typer.Option("--graph", "-g", help="graph file (default: <chat>.bme.json beside the chat)")]
SkipOpt = Annotated[bool, typer.Option("--skip-bad-lines", help="skip chat lines that are not JSON objects, with a warning")]
WaitOpt = Annotated[float, typer.Option("--wait", min=0, help="seconds to wait for another bme process holding the graph")]
FormatOpt = Annotated[str, typer.Option("--format", "-f", help="output format: table or json")]
ChatArg = Annotated[Path, typer.Argument(help="a SillyTavern chat file (.jsonl)")]
DryRunOpt = Annotated[bool, typer.Option("--dry-run", help="show what would change; write nothing")]


@app.callback()
def main_options(
    ctx: typer.Context,
    config: Annotated[Optional[Path], typer.Option("--config", help="config file (default: $BME_CONFIG or the user config dir)")] = None,
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="log model requests to stderr (keys redacted)")] = False,
    no_cache: Annotated[bool, typer.Option("--no-cache", help="do not read or write the model response cache")] = False,
    log_text: Annotated[bool, typer.Option("--log-text", help="record prompts and replies in the call log (bme log)")] = False,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="print only results and errors: no progress, notices or summaries (for cron)")] = False,
    version: Annotated[bool, typer.Option("--version", callback=_version, is_eager=True, help="print the version and exit")] = False,
) -> None:
    """Long-term graph memory for SillyTavern chats (ST-BME compatible)."""
    ctx.obj = rt = Runtime(config=config, verbose=verbose, use_cache=not no_cache, log_text=log_text, quiet=quiet)
    ctx.call_on_close(rt.close)
