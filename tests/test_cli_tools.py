"""`bme --version`, every command's --help, usage errors, doctor, config and cache."""
from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest
import typer

from bme_cli import __version__
from bme_cli.cli import app
from bme_cli.providers.cache import ResponseCache, cache_key, default_cache_dir
from cli_support import chats, cli_env, error_lines, ingested, ingested_template, invoke, ok  # noqa: F401

pytestmark = pytest.mark.usefixtures("cli_env")

SECRET = "sk-test-NEVER-PRINT-4242"


def _command_paths() -> list[list[str]]:
    """Every command and sub-command name path, read from the app itself."""
    paths: list[list[str]] = []

    def walk(group, prefix: list[str]) -> None:  # noqa: ANN001 - a click group
        for name, cmd in sorted(group.commands.items()):
            paths.append([*prefix, name])
            if hasattr(cmd, "commands"):
                walk(cmd, [*prefix, name])

    walk(typer.main.get_command(app), [])
    return paths


def test_version_prints_the_package_version() -> None:
    result = ok("--version")
    assert result.stdout == f"bme {__version__}\n"
    assert result.stderr == ""


def test_version_and_help_load_no_command_machinery() -> None:
    """Start-up stays cheap: a command module that imports its work at the top (numpy, the
    graph, workflow) makes every `bme --version` pay for it."""
    import subprocess
    import sys
    code = ("import sys; from bme_cli.cli import main; sys.argv = ['bme', '--version']\n"
            "try: main()\nexcept SystemExit: pass\n"
            "heavy = [m for m in ('numpy', 'pydantic', 'bme_cli.workflow', 'bme_cli.graph.model', 'rich.table')"
            " if m in sys.modules]\nprint(','.join(heavy))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines()[-1] == "", f"loaded at start-up: {out.stdout.splitlines()[-1]}"


def test_the_entry_point_answers_version_without_loading_the_command_line() -> None:
    """`bme --version` alone prints what the typer option prints, before typer is imported."""
    import subprocess
    import sys
    code = ("import sys; from bme_cli.__main__ import main; sys.argv = ['bme', '--version']; main()\n"
            "print(','.join(m for m in ('typer', 'bme_cli.cli', 'numpy') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert (out.returncode, out.stderr) == (0, "")
    assert out.stdout == f"bme {__version__}\n\n"   # the version line, then no module loaded
    assert ok("--version").stdout == f"bme {__version__}\n"   # the same as the option says


def test_the_app_lists_every_documented_command() -> None:
    names = {" ".join(p) for p in _command_paths()}
    assert {"stats", "export", "import", "ingest", "recall", "compress", "sleep", "synopsis", "reflect",
            "doctor", "config", "config show", "config path", "config init", "cache", "cache stats",
            "cache clear", "reembed", "log", "show"} <= names


@pytest.mark.parametrize("path", _command_paths(), ids=lambda p: " ".join(p))
def test_every_command_has_help(path: list[str]) -> None:
    result = ok(*path, "--help")
    assert "Usage:" in result.stdout
    # the docstring's first line is the help text: no command is left undocumented
    cmd = typer.main.get_command(app)
    for name in path:
        cmd = cmd.commands[name]
    assert cmd.help and cmd.help.split("\n")[0].strip()[:30] in " ".join(result.stdout.split())


def test_top_level_help_and_no_arguments_show_usage() -> None:
    assert "ingest" in ok("--help").stdout
    bare = invoke()
    assert bare.exit_code in (0, 2)  # no_args_is_help
    assert "Usage:" in bare.stdout + bare.stderr


@pytest.mark.parametrize("args", [
    ["stats", "{chat}", "--format", "yaml"],
    ["recall", "{chat}", "--format", "html"],
    ["doctor", "--format", "xml"],
    ["cache", "stats", "--format", "csv"],
    ["compress", "{chat}", "--format", "csv"],
    ["sleep", "{chat}", "--format", "csv"],
    ["show", "{chat}", "--format", "table"],
])
def test_an_unknown_format_is_a_usage_error(args: list[str], ingested: dict[str, Path]) -> None:
    before = ingested["group"].with_name("group.bme.json").read_bytes()
    result = invoke(*(a.format(chat=ingested["group"]) for a in args))
    assert result.exit_code == 2
    assert result.stdout == ""
    assert error_lines(result) == [line for line in result.stderr.splitlines() if "--format" in line]
    assert ingested["group"].with_name("group.bme.json").read_bytes() == before


def test_an_unknown_option_is_a_usage_error() -> None:
    result = invoke("stats", "--no-such-option", "x.jsonl")
    assert result.exit_code == 2
    assert "No such option" in result.stderr
    assert result.stdout == ""


def test_doctor_offline_passes_and_reports_each_check() -> None:
    result = ok("doctor")
    assert "embedding" in result.stdout and "offline" in result.stdout
    data = json.loads(ok("doctor", "--format", "json").stdout)
    assert data["ok"] is True
    assert {c["name"] for c in data["checks"]} >= {"config", "chat", "embedding"}
    assert all(c["status"] in ("ok", "warn") for c in data["checks"])


def test_doctor_never_prints_the_api_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BME_API_KEY", SECRET)
    result = ok("doctor")
    assert SECRET not in result.stdout + result.stderr


def test_config_show_redacts_keys_from_env_and_file(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    cfg = tmp_path / "bme.toml"
    cfg.write_text(f'[embedding]\napi_key = "{SECRET}-emb"\n[memory]\nrecall_top_k = 7\n', encoding="utf-8")
    monkeypatch.setenv("BME_API_KEY", SECRET)
    result = ok("--config", cfg, "config", "show")
    assert SECRET not in result.stdout + result.stderr
    data = json.loads(result.stdout)
    assert data["chat"]["api_key"] == "***"
    assert data["embedding"]["api_key"] == "***"
    assert data["memory"]["recall_top_k"] == 7           # the file was read
    assert data["embedding"]["offline_model"] == "hash"  # and the environment


def test_config_show_reports_a_bad_value_as_a_config_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BME_RECALL_TOP_K", "lots")
    result = invoke("config", "show")
    assert result.exit_code == 5
    assert result.stdout == ""
    assert len(error_lines(result)) == 1 and "BME_RECALL_TOP_K" in result.stderr


def test_config_init_writes_a_private_template_and_refuses_to_overwrite(tmp_path: Path) -> None:
    target = tmp_path / "conf" / "config.toml"
    result = ok("config", "init", target)
    assert target.exists()
    assert stat.S_IMODE(target.stat().st_mode) == 0o600
    assert "[memory]" in target.read_text(encoding="utf-8")
    assert str(target) in result.stderr and result.stdout == ""
    target.write_text("# mine\n", encoding="utf-8")
    again = invoke("config", "init", target)
    assert again.exit_code == 5
    assert target.read_text(encoding="utf-8") == "# mine\n"
    ok("config", "init", target, "--force")
    assert "[memory]" in target.read_text(encoding="utf-8")
    assert stat.S_IMODE(target.stat().st_mode) == 0o600


def test_config_init_without_a_path_writes_where_config_path_points() -> None:
    where = Path(ok("config", "path").stdout.strip())
    assert where == Path(os.environ["XDG_CONFIG_HOME"]) / "bme" / "config.toml"
    ok("config", "init")
    assert stat.S_IMODE(where.stat().st_mode) == 0o600


def test_config_path_follows_the_flag_then_the_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("BME_CONFIG", str(tmp_path / "env.toml"))
    assert ok("config", "path").stdout == f"{tmp_path / 'env.toml'}\n"
    assert ok("--config", tmp_path / "flag.toml", "config", "path").stdout == f"{tmp_path / 'flag.toml'}\n"


def test_cache_stats_counts_entries_and_clear_removes_them() -> None:
    cache = ResponseCache(default_cache_dir())
    for i in range(3):
        cache.put(cache_key(n=i), f"reply {i}")
    data = json.loads(ok("cache", "stats", "--format", "json").stdout)
    assert data["entries"] == 3 and data["bytes"] > 0
    assert Path(data["dir"]) == Path(os.environ["XDG_CACHE_HOME"]) / "bme"
    table = ok("cache", "stats").stdout
    assert "entries" in table and "3" in table
    cleared = ok("cache", "clear")
    assert "removed 3" in cleared.stderr
    assert json.loads(ok("cache", "stats", "--format", "json").stdout)["entries"] == 0
    assert cache.get(cache_key(n=0)) is None


def test_cache_stats_on_a_missing_cache_is_empty() -> None:
    data = json.loads(ok("cache", "stats", "--format", "json").stdout)
    assert data["entries"] == 0 and data["bytes"] == 0
    assert "removed 0" in ok("cache", "clear").stderr


def test_the_console_entry_point_maps_errors_without_a_traceback(tmp_path: Path) -> None:
    """The real `bme` entry point (not CliRunner): exit codes and one error line."""
    import subprocess
    import sys

    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"name": "A", "is_user": true, "mes": "hi"}\n{oops\n', encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("BME_", "OPENAI_"))}
    env["BME_EMBEDDING_OFFLINE_MODEL"] = "hash"
    entry = "from bme_cli.cli import main; main()"
    version = subprocess.run([sys.executable, "-c", entry, "--version"], capture_output=True, text=True, env=env)
    assert (version.returncode, version.stdout) == (0, f"bme {__version__}\n")
    failed = subprocess.run([sys.executable, "-c", entry, "stats", str(bad)], capture_output=True, text=True,
                            env=env)
    assert failed.returncode == 3
    assert failed.stdout == ""
    assert failed.stderr.splitlines() == [line for line in failed.stderr.splitlines() if "line 2" in line]
    assert len(failed.stderr.splitlines()) == 1 and "Traceback" not in failed.stderr
    usage = subprocess.run([sys.executable, "-c", entry, "stats", str(bad), "--format", "x"],
                           capture_output=True, text=True, env=env)
    assert usage.returncode == 2 and "Traceback" not in usage.stderr
