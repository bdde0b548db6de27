"""The layering of conventions.md, checked by reading every module's imports."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

PKG = Path(__file__).resolve().parent.parent / "bme_cli"


def _modules() -> dict[str, set[str]]:
    """module path (dotted, relative to bme_cli) -> absolute names it imports."""
    out: dict[str, set[str]] = {}
    for path in PKG.rglob("*.py"):
        rel = path.relative_to(PKG).with_suffix("")
        parts = list(rel.parts)
        name = ".".join(parts)
        package = parts[:-1] if parts[-1] != "__init__" else parts[:-1]
        if parts[-1] == "__init__":
            name = ".".join(parts[:-1]) or "__init__"
        imported: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                imported.update(a.name for a in node.names)
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package[: len(package) - (node.level - 1)] if node.level > 1 else package
                    mod = ".".join(["bme_cli", *base, *(node.module.split(".") if node.module else [])])
                    imported.add(mod)
                    imported.update(f"{mod}.{a.name}" for a in node.names)
                else:
                    imported.add(node.module or "")
        out[name] = imported
    return out


MODULES = _modules()


def _importers(prefix: str) -> set[str]:
    return {m for m, imps in MODULES.items()
            if any(i == prefix or i.startswith(prefix + ".") for i in imps)}


def _internal(imps: set[str]) -> set[str]:
    return {i[len("bme_cli."):] for i in imps if i.startswith("bme_cli.")}


def test_only_the_cli_imports_typer():
    assert {m for m in _importers("typer")} <= {m for m in MODULES if m == "cli" or m.startswith("cli.")}


def test_only_cli_and_render_import_rich():
    allowed = {m for m in MODULES if m.startswith("cli") or m == "render" or m.startswith("render.")}
    assert _importers("rich") <= allowed


def test_only_the_http_transport_imports_httpx():
    assert _importers("httpx") <= {"providers.http"}


@pytest.mark.parametrize("layer", ["graph", "chat", "chat_lines", "story", "dates", "settings", "atomic", "errors",
                                   "text", "sentences", "reltime"])
def test_base_layers_depend_only_on_errors_and_each_other(layer):
    # story/ is pure text (no settings, no I/O): chat.py reads story text with it. atomic.py is
    # the one file writer, below graph/ and settings/ that write through it.
    allowed = {"graph": ("errors", "graph", "text", "atomic"),
               "chat": ("errors", "text", "dates", "story", "chat_lines"),
               "settings": ("errors", "text", "settings", "atomic"),
               "story": ("story", "errors", "text")}.get(layer, ("errors", "text"))
    for mod, imps in MODULES.items():
        if mod == layer or mod.startswith(layer + "."):
            bad = {i for i in _internal(imps) if not i.startswith(allowed) and i != "__version__"}
            assert not bad, f"{mod} imports {bad}"


def test_memory_depends_only_on_lower_layers_and_never_on_io_or_presentation():
    allowed = ("memory", "graph", "prompts", "providers.base", "errors", "text", "sentences", "reltime",
               "settings", "chat")
    for mod, imps in MODULES.items():
        if mod.startswith("memory"):
            bad = {i for i in _internal(imps) if not i.startswith(allowed)}
            assert not bad, f"{mod} imports {bad}"
            assert not {"os", "typer", "rich", "httpx", "subprocess"} & imps, mod


def test_memory_never_prints_or_opens_files():
    for path in (PKG / "memory").rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        calls = {n.func.id for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)}
        assert not {"print", "open", "input"} & calls, path.name


def test_prompts_and_heuristics_stay_below_memory():
    for mod, imps in MODULES.items():
        if mod.startswith(("prompts", "providers")):
            bad = {i for i in _internal(imps) if i.startswith(("memory", "cli", "workflow", "render"))}
            assert not bad, f"{mod} imports {bad}"


def test_no_module_imports_the_cli():
    for mod, imps in MODULES.items():
        if not mod.startswith("cli") and mod != "__main__":
            assert not {i for i in _internal(imps) if i == "cli" or i.startswith("cli.")}, mod


def test_exporters_are_pure_views_of_the_graph():
    # bme_cli/exporters turns a Graph into text: no CLI, no Rich, no providers, no files
    allowed = ("exporters", "graph", "memory", "errors", "text")
    for mod, imps in MODULES.items():
        if mod.startswith("exporters"):
            bad = {i for i in _internal(imps) if not i.startswith(allowed)}
            assert not bad, f"{mod} imports {bad}"
            assert not {i for i in imps if i.split(".")[0] in ("typer", "rich", "httpx")}, mod
