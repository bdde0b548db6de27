"""Tools around the pipeline: doctor, config, cache, reembed."""
from __future__ import annotations

from typing import Annotated, Optional
from pathlib import Path

import typer

from ..errors import ExitCode
from .common import ChatArg, FormatOpt, GraphOpt, WaitOpt, app, check_format, handled, runtime

config_app = typer.Typer(no_args_is_help=True, help="Show, locate or create the configuration file.")
cache_app = typer.Typer(no_args_is_help=True, help="Inspect or clear the model response cache.")
app.add_typer(config_app, name="config")
app.add_typer(cache_app, name="cache")


@app.command()
@handled
def doctor(ctx: typer.Context, fmt: FormatOpt = "table",
           time_limit: Annotated[Optional[float], typer.Option("--time-limit", min=1, help="seconds for the whole check (default 50)")] = None,
           ) -> None:
    """Check the configuration, make one tiny chat and one embedding call, and report."""
    from .. import render
    from ..doctor import TIME_LIMIT, run_doctor
    time_limit = TIME_LIMIT if time_limit is None else time_limit
    check_format(fmt, ("table", "json"))
    rt = runtime(ctx)
    settings = rt.load_settings()
    report = run_doctor(settings, rt.providers(settings, quiet=True), time_limit=time_limit)
    if fmt == "json":
        render.write_json(report.as_dict())
    else:
        rows = [(c.name, c.status, "" if c.latency_ms is None else f"{c.latency_ms:.0f} ms", c.detail)
                for c in report.checks]
        render.out().print(render.rows_table(f"bme doctor ({report.seconds:.1f} s)", ["check", "status", "latency", "detail"], rows))
    if not report.ok:
        raise typer.Exit(int(ExitCode.PROVIDER))


@config_app.command("show")
@handled
def config_show(ctx: typer.Context) -> None:
    """Print the effective settings (flags > BME_* env > config file > defaults), keys as ***."""
    from .. import render
    from ..settings import redacted
    render.write_json(redacted(runtime(ctx).load_settings()))


@config_app.command("path")
@handled
def config_path(ctx: typer.Context) -> None:
    """Print where the config file is read from."""
    from .. import render
    from ..settings import config_file_path
    render.write_text(str(config_file_path(runtime(ctx).config)))


@config_app.command("init")
@handled
def config_init(
    ctx: typer.Context,
    path: Annotated[Optional[Path], typer.Argument(help="where to write it (default: the config path)")] = None,
    force: Annotated[bool, typer.Option("--force", help="overwrite an existing file")] = False,
) -> None:
    """Write a commented config template with every setting (mode 0600)."""
    from .. import render
    from ..graph.files import store_error
    from ..settings import config_file_path, write_config_template
    target = path or config_file_path(runtime(ctx).config)
    try:
        written = write_config_template(target, force=force)
    except OSError as exc:  # a full disk or read-only folder: one line, exit 1
        raise store_error(exc, "writing", target) from None
    render.notice(f"wrote {written}")


@cache_app.command("stats")
@handled
def cache_stats(fmt: FormatOpt = "table") -> None:
    """Show how many responses the cache holds and its size."""
    from .. import render
    from ..providers.cache import ResponseCache, default_cache_dir
    check_format(fmt, ("table", "json"))
    cache_dir = default_cache_dir()
    entries, size = ResponseCache(cache_dir).stats()
    if fmt == "json":
        render.write_json({"dir": str(cache_dir), "entries": entries, "bytes": size})
    else:
        render.out().print(render.key_value_table("response cache", [("dir", cache_dir), ("entries", entries),
                                                                     ("size", f"{size / 1024:.1f} KB")]))


@cache_app.command("clear")
@handled
def cache_clear() -> None:
    """Delete every cached response."""
    from .. import render
    from ..providers.cache import ResponseCache, default_cache_dir
    removed = ResponseCache(default_cache_dir()).clear()
    render.notice(f"removed {removed} cached response(s)")


@app.command()
@handled
def reembed(ctx: typer.Context, chat: ChatArg, graph: GraphOpt = None, wait: WaitOpt = 0.0) -> None:
    """Replace every vector of a graph with the configured embedding model's."""
    from .. import render, workflow
    rt = runtime(ctx)
    settings = rt.load_settings()
    schema = workflow.load_schema(settings.memory.node_type_schema)
    count = workflow.reembed(chat, graph, schema, rt.providers(settings), lock_wait=wait,
                             settings=settings)
    render.notice(f"re-embedded {count} active node(s)")
