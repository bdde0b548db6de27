"""The layering and the code habits of conventions.md, checked by reading every module with `ast`.

docs/architecture.md ("Dependency rules") states the same rules in prose; LAYERS is the one
place the layer order is written. Each rule is a function from the parsed sources to the set of
(module, what) pairs that break it, so the tests at the end can plant a violation in the
in-memory text of a real module and see the rule report it.
"""
from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterator

import pytest

PKG = Path(__file__).resolve().parent.parent / "bme_cli"

# Lowest layer first. A module may import its own entry (package) and the entries of lower
# layers, never a sibling entry of its own layer nor anything above. "__version__" is the
# constant the package root defines before anything else, so any module may read it.
LAYERS: list[tuple[str, ...]] = [
    ("errors", "__version__"),
    ("text", "sentences", "reltime", "dates", "blas", "task", "atomic", "chat_lines"),
    ("story",),
    ("chat", "settings", "graph"),
    ("chat_stream",),
    ("prompts",),
    ("providers",),
    ("memory",),
    ("exporters", "sillytavern", "index_cache", "render"),
    ("workflow",),
    ("ingest_runner", "recall_session", "watcher", "doctor"),
    ("api",),
    ("cli",),
    ("__main__", "__init__"),
]
LAYER_OF = {entry: i for i, entries in enumerate(LAYERS) for entry in entries}

# Never print, read the environment, touch files or processes, or exit: handed what they need.
PURE = ("errors", "text", "sentences", "reltime", "dates", "task", "story", "prompts", "memory", "exporters",
        "providers.base", "providers.heuristic", "graph.model", "graph.ops", "graph.schema")
IO_MODULES = {"os", "sys", "io", "builtins", "pathlib", "shutil", "tempfile", "glob", "subprocess", "socket",
              "sqlite3", "fcntl", "msvcrt", "mmap", "signal", "select", "urllib", "http", "importlib", "logging",
              "multiprocessing", "webbrowser", "shelve"}
FILE_MODULES = ("atomic", "graph.files", "graph.store", "graph.lock", "graph.arrays", "index_cache")
IO_METHODS = {"read_text", "read_bytes", "write_text", "write_bytes", "open", "fdopen", "mkdir", "makedirs",
              "unlink", "rmdir", "touch", "iterdir", "glob", "rglob", "readline", "readlines", "popen", "chmod"}
BUILTIN_IO = {"print", "open", "input", "breakpoint", "exit", "quit", "__import__"}
ENV = ("os.environ", "os.environb", "os.getenv", "os.putenv", "os.unsetenv")
# Who may read the environment (never at import time), and why.
ENV_READERS = {
    "settings": "load_settings: flags > BME_* environment > config file > defaults",
    "render": "NO_COLOR and COLUMNS decide colour and width (habit 4)",
    "cli": "the stream encoding (PYTHONIOENCODING) and $VISUAL/$EDITOR for `bme node edit`",
    "providers.cache": "default_cache_dir: $XDG_CACHE_HOME, read when called, env= injectable",
    "providers.calllog": "default_data_dir: $XDG_DATA_HOME, read when called, env= injectable",
}
# The one place that formats output; __main__ answers --version/--help before anything loads;
# cli.static_help is the maintainer's script that regenerates the stored help text.
WRITERS = ("render", "__main__", "cli.static_help")
THIRD_PARTY = {"typer": ("cli",), "rich": ("cli", "render"), "httpx": ("providers.http",),
               "httpcore": ("providers.http",)}
MAX_LINES = 450

# Non-constant dynamic imports: module -> (the module constant naming every target, why).
DYNAMIC = {
    "__init__": ("_FROM", "the package root loads api, settings and errors on first attribute use, "
                          "so `import bme_cli` and `bme --version` stay cheap"),
    "providers.offline": ("HEURISTIC_MODULES", "the offline chat model imports each task's heuristic when "
                                              "first asked, so offline start-up stays lazy"),
    "index_cache": ("_BUILDERS", "finds the files of the modules that build an index (find_spec, which "
                                 "imports only their package) to digest their source for the cache key"),
}
# Departures judged right: (module, what, or a prefix of it before a ".") -> why.
ALLOWED = {
    ("exporters.html", "importlib"): "reads its own page template, shipped as package data",
    ("providers.heuristic.gazetteer", "importlib"): "reads its own lists of real places, shipped as package data",
    ("providers.heuristic.ja_names", "importlib"): "reads its own list of Japanese family names, shipped as package data",
}
# Real violations found and not yet fixed (none today): each is a debt to pay, then delete.
UNOWNED: set[tuple[str, str]] = set()


@dataclass
class Facts:
    """What one module imports, references and calls, read from its source."""

    name: str
    lines: int
    internal: dict[str, set[str]] = field(default_factory=dict)   # bme_cli module -> names taken from it
    external: set[str] = field(default_factory=set)               # top-level third-party/stdlib names
    dynamic: list[str] = field(default_factory=list)              # dynamic imports no constant names
    refs: set[tuple[str, bool]] = field(default_factory=set)      # (qualified chain, at import time)
    swallowed: list[int] = field(default_factory=list)            # lines of broad excepts not re-raising
    constants: dict[str, ast.expr] = field(default_factory=dict)  # module-level assignments
    bound: set[str] = field(default_factory=set)                  # top-level names its imports bind

    def take(self, absolute: str, names: set[str] | frozenset[str] = frozenset()) -> None:
        """Record an import of absolute (dotted), and the names taken from it."""
        internal = _internal(absolute)
        if internal is None:
            self.external.add(absolute.split(".")[0])
        else:
            self.internal.setdefault(internal, set()).update(names)


def module_name(path: Path) -> str:
    """bme_cli/graph/ops.py -> graph.ops; a package's __init__ is the package; the root is __init__."""
    parts = list(path.relative_to(PKG).with_suffix("").parts)
    if parts[-1] == "__init__" and len(parts) > 1:
        parts = parts[:-1]
    return ".".join(parts)


def real_sources() -> dict[str, tuple[str, str]]:
    """module -> (its package, dotted, "" for the root; source text)."""
    out = {}
    for path in sorted(PKG.rglob("*.py")):
        name = module_name(path)
        package = name if path.name == "__init__.py" and name != "__init__" else name.rpartition(".")[0]
        out[name] = (package, path.read_text(encoding="utf-8"))
    return out


def _walk(node: ast.AST, parent: ast.AST | None = None,
          now: bool = True) -> Iterator[tuple[ast.AST, ast.AST | None, bool]]:
    """Every node with its parent and whether it runs at import time (function bodies do not)."""
    yield node, parent, now
    for name, value in ast.iter_fields(node):
        late = isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)) and name == "body"
        for child in value if isinstance(value, list) else [value]:
            if isinstance(child, ast.AST):
                yield from _walk(child, node, now and not late)


def _absolute(internal: str) -> str:
    return f"bme_cli.{internal}" if internal else "bme_cli"


def _internal(absolute: str) -> str | None:
    if absolute == "bme_cli":
        return "__init__"
    return absolute[len("bme_cli."):] if absolute.startswith("bme_cli.") else None


def _relative(name: str, anchor: str) -> str:
    """What `from <dots>name` means inside package anchor (dotted, absolute)."""
    level = len(name) - len(name.lstrip("."))
    parts = anchor.split(".")
    return ".".join([*parts[: len(parts) - (level - 1)], *filter(None, [name.lstrip(".")])])


def _constant(node: ast.expr | None, package: str, name: str) -> str | None:
    """A string known before running: a constant, or an f-string of only __package__/__name__."""
    env = {"__package__": _absolute(package), "__name__": _absolute("" if name == "__init__" else name)}
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.Name) and node.id in env:
        return env[node.id]
    if isinstance(node, ast.JoinedStr):
        pieces = [_constant(v.value if isinstance(v, ast.FormattedValue) else v, package, name) for v in node.values]
        return None if None in pieces else "".join(pieces)  # type: ignore[arg-type]
    return None


def _dynamic_target(call: ast.Call, package: str, name: str) -> str | None:
    """The absolute module an import_module/__import__ call loads, when its text says so."""
    target = _constant(call.args[0] if call.args else None, package, name)
    if target and target.startswith("."):   # relative to package=, as importlib resolves it
        anchor = next((k.value for k in call.keywords if k.arg == "package"),
                      call.args[1] if len(call.args) > 1 else None)
        anchor_name = _constant(anchor, package, name)
        return _relative(target, anchor_name) if anchor_name else None
    return target


def _imports(facts: Facts, tree: ast.Module, package: str, known: set[str]) -> dict[str, str]:
    """Fill facts.internal/external from the import statements; local name -> what it names."""
    aliases: dict[str, str] = {}
    for node, _, _ in _walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                facts.take(a.name)
                aliases[a.asname or a.name.split(".")[0]] = a.name if a.asname else a.name.split(".")[0]
        elif isinstance(node, ast.ImportFrom):
            base = _relative("." * node.level + (node.module or ""), _absolute(package)) if node.level else node.module
            for a in node.names:
                if _internal(f"{base}.{a.name}") in known:      # a module: `from . import workflow`
                    facts.take(f"{base}.{a.name}")
                elif base == "bme_cli" and a.name == "__version__":
                    facts.take("bme_cli.__version__")
                else:
                    facts.take(base or "", {a.name})
                aliases[a.asname or a.name] = f"{base}.{a.name}"
    return aliases


def analyse(name: str, package: str, source: str, known: set[str]) -> Facts:
    """The facts of one module's source."""
    tree = ast.parse(source)
    facts = Facts(name, source.count("\n") + 1)
    aliases = _imports(facts, tree, package, known)
    facts.bound = {v.split(".")[0] for v in aliases.values()}
    facts.constants = {s.targets[0].id: s.value for s in tree.body
                       if isinstance(s, ast.Assign) and len(s.targets) == 1 and isinstance(s.targets[0], ast.Name)}

    def qualify(e: ast.AST) -> str:
        if isinstance(e, ast.Attribute):
            return f"{qualify(e.value)}.{e.attr}"
        if isinstance(e, ast.Name):
            return aliases.get(e.id, f"builtins.{e.id}" if e.id in BUILTIN_IO else e.id)
        return qualify(e.func) + "()" if isinstance(e, ast.Call) else "?"

    for node, parent, now in _walk(tree):
        inner = isinstance(parent, ast.Attribute) and parent.value is node   # part of a longer chain
        if isinstance(node, (ast.Attribute, ast.Name)) and not inner:
            called = isinstance(parent, ast.Call) and parent.func is node
            facts.refs.add((qualify(node) + ("()" if called else ""), now))
        elif isinstance(node, ast.Call) and qualify(node.func) in ("importlib.import_module", "builtins.__import__"):
            target = _dynamic_target(node, package, name)
            if target:
                facts.take(target)
            else:
                facts.dynamic.append(f"dynamic import {ast.unparse(node)}")
        elif isinstance(node, ast.Call) and qualify(node.func) == "random.Random" and not (node.args or node.keywords):
            facts.refs.add(("random.Random() unseeded", now))
        elif isinstance(node, ast.ExceptHandler) and _broad(node.type) and not any(
                isinstance(n, ast.Raise) for s in node.body for n in ast.walk(s)):
            facts.swallowed.append(node.lineno)
    return facts


def _broad(t: ast.expr | None) -> bool:
    if t is None:
        return True
    names = t.elts if isinstance(t, ast.Tuple) else [t]
    return any(isinstance(n, ast.Name) and n.id in ("Exception", "BaseException") for n in names)


def facts_of(sources: dict[str, tuple[str, str]]) -> dict[str, Facts]:
    """module -> Facts, for every module of the given sources."""
    return {m: analyse(m, pkg, text, set(sources)) for m, (pkg, text) in sources.items()}


SOURCES = real_sources()
FACTS = facts_of(SOURCES)


def within(module: str, prefixes: tuple[str, ...] | str) -> bool:
    """module is one of prefixes or inside one of them."""
    prefixes = (prefixes,) if isinstance(prefixes, str) else prefixes
    return any(module == p or module.startswith(p + ".") for p in prefixes)


_ENTRIES = sorted(LAYER_OF, key=len, reverse=True)


def entry_of(module: str) -> str | None:
    """The LAYERS entry a module belongs to."""
    return next((e for e in _ENTRIES if within(module, e)), None)


def may_import(importer: str, target: str) -> bool:
    """The layer rule: own entry, or an entry of a lower layer."""
    mine, theirs = entry_of(importer), entry_of(target)
    if mine is None or theirs is None:
        return False
    return mine == theirs or LAYER_OF[theirs] < LAYER_OF[mine]


# -- the rules: parsed sources -> {(module, what)} ------------------------------------------------

Rule = Callable[[dict[str, Facts]], set[tuple[str, str]]]


def every_module_has_a_layer(facts: dict[str, Facts]) -> set[tuple[str, str]]:
    return {(m, "not in LAYERS") for m in facts if entry_of(m) is None}


def layer_rule(facts: dict[str, Facts]) -> set[tuple[str, str]]:
    return {(m, t) for m, f in facts.items() for t in f.internal if not may_import(m, t)}


def dynamic_imports_are_constant(facts: dict[str, Facts]) -> set[tuple[str, str]]:
    bad = {(m, d) for m, f in facts.items() if m not in DYNAMIC for d in f.dynamic}
    for m, (constant, _why) in DYNAMIC.items():    # the allowed ones: check what they load instead
        node = facts[m].constants.get(constant) if m in facts else None
        targets = [n.value for n in ast.walk(node) if isinstance(n, ast.Constant)] if node is not None else []
        if m in facts and facts[m].dynamic and not targets:
            bad.add((m, f"{constant} names no module"))
        bad |= {(m, t) for t in targets if isinstance(t, str) and entry_of(t) and not may_import(m, t)}
    return bad


def third_party_rule(facts: dict[str, Facts]) -> set[tuple[str, str]]:
    return {(m, lib) for m, f in facts.items() for lib, owners in THIRD_PARTY.items()
            if lib in f.external and not within(m, owners)}


def pure_modules_do_no_io(facts: dict[str, Facts]) -> set[tuple[str, str]]:
    bad: set[tuple[str, str]] = set()
    for m, f in facts.items():
        if not within(m, PURE):
            continue
        bad |= {(m, lib) for lib in f.external & IO_MODULES}
        bad |= {(m, t) for t in f.internal if within(t, FILE_MODULES)}
        for ref, _ in f.refs:
            root = ref.split(".")[0]
            if root in IO_MODULES & f.bound or ref.rstrip("()") in {f"builtins.{b}" for b in BUILTIN_IO}:
                bad.add((m, ref))
            elif ref.endswith("()") and ref[:-2].rpartition(".")[2] in IO_METHODS and "." in ref:
                bad.add((m, ref))
    return bad


def environment_readers(facts: dict[str, Facts]) -> set[tuple[str, str]]:
    bad = set()
    for m, f in facts.items():
        for ref, at_import in f.refs:
            if ref.startswith(ENV) and (at_import or not within(m, tuple(ENV_READERS))):
                bad.add((m, ref + (" at import time" if at_import else "")))
    return bad


def only_render_writes_output(facts: dict[str, Facts]) -> set[tuple[str, str]]:
    streams = ("sys.stdout.", "sys.stderr.", "sys.__stdout__.", "sys.__stderr__.")
    printers = {"builtins.print()", "typer.echo()", "typer.secho()", "rich.print()", "rich.console.Console()"}
    return {(m, ref) for m, f in facts.items() if not within(m, WRITERS) for ref, _ in f.refs
            if ref in printers or (ref.startswith(streams) and ref.endswith("()"))}


def only_the_cli_exits(facts: dict[str, Facts]) -> set[tuple[str, str]]:
    exits = ("sys.exit()", "os._exit()", "builtins.exit()", "builtins.quit()", "SystemExit", "SystemExit()")
    return {(m, ref) for m, f in facts.items() if not within(m, ("cli", "__main__"))
            for ref, _ in f.refs if ref in exits}


def broad_excepts_re_raise(facts: dict[str, Facts]) -> set[tuple[str, str]]:
    return {(m, f"line {n}: broad except without raise") for m, f in facts.items() for n in f.swallowed}


def memory_is_handed_what_it_needs(facts: dict[str, Facts]) -> set[tuple[str, str]]:
    bad = set()
    clock = re.compile(r"^(time\.\w+|datetime\.(datetime|date)\.(now|today|utcnow)|random\.\w+|uuid\.\w+|"
                       r"bme_cli\.graph\.model\.(now_ms|new_uuid))\(\)$")
    for m, f in facts.items():
        if not within(m, "memory"):
            continue
        bad |= {(m, t) for t in f.internal if within(t, "providers") and t != "providers.base"}
        bad |= {(m, f"{t}.{n}") for t, names in f.internal.items() if within(t, ("settings", "chat"))
                for n in (names or {"*"}) if not n[:1].isupper()}       # their data classes only
        bad |= {(m, ref) for ref, _ in f.refs
                if (clock.match(ref) and ref != "random.Random()") or ref == "random.Random() unseeded"}
    return bad


def exporters_are_pure_views(facts: dict[str, Facts]) -> set[tuple[str, str]]:
    return {(m, t) for m, f in facts.items() if within(m, "exporters") for t in f.internal
            if not within(t, ("exporters", "graph", "memory", "errors", "text"))}


def the_cli_only_constructs_providers(facts: dict[str, Facts]) -> set[tuple[str, str]]:
    # factory builds them; calllog and cache are the stores `bme log` and `bme cache` show
    return {(m, t) for m, f in facts.items() if within(m, "cli") for t in f.internal
            if within(t, "providers") and t not in ("providers.factory", "providers.calllog", "providers.cache")}


def modules_stay_small(facts: dict[str, Facts]) -> set[tuple[str, str]]:
    return {(m, "lines") for m, f in facts.items() if f.lines > MAX_LINES}


RULES: list[Rule] = [every_module_has_a_layer, layer_rule, dynamic_imports_are_constant, third_party_rule,
                     pure_modules_do_no_io, environment_readers, only_render_writes_output, only_the_cli_exits,
                     broad_excepts_re_raise, memory_is_handed_what_it_needs, exporters_are_pure_views,
                     the_cli_only_constructs_providers, modules_stay_small]


def excused(violation: tuple[str, str]) -> bool:
    """Listed in UNOWNED, or ALLOWED (exactly or by a prefix)."""
    m, what = violation
    return violation in UNOWNED or any(
        m == am and (what == aw or what.startswith(aw + ".")) for am, aw in ALLOWED)


# -- the real code ------------------------------------------------------------------------------


@pytest.mark.parametrize("rule", RULES, ids=lambda r: r.__name__)
def test_the_code_keeps_the_rule(rule: Rule):
    bad = sorted(v for v in rule(FACTS) if not excused(v))
    assert not bad, f"{rule.__name__}: {bad} (docs/architecture.md, Dependency rules)"


def test_every_excuse_is_still_needed():
    found = set().union(*(rule(FACTS) for rule in RULES))
    stale = sorted(v for v in UNOWNED if v not in found)
    stale += sorted(k for k in ALLOWED if not any(v[0] == k[0] and (v[1] == k[1] or v[1].startswith(k[1] + "."))
                                                  for v in found))
    assert not stale, f"fixed, so delete from UNOWNED/ALLOWED: {stale}"


def test_docs_state_the_same_layer_table():
    doc = (PKG.parent / "docs" / "architecture.md").read_text(encoding="utf-8")
    section = doc.split("## Dependency rules", 1)[1]
    rows = re.findall(r"^\| (\d+) \| (.*) \|$", section, flags=re.M)
    assert [tuple(n.rstrip("/") for n in re.findall(r"`([^`]+)`", names)) for _, names in rows] == LAYERS
    assert [int(n) for n, _ in rows] == list(range(len(LAYERS)))


def test_the_reader_sees_the_real_imports():
    # a guard on the parser itself: known edges of today's code are read
    assert "graph.model" in FACTS["memory.recall"].internal and "httpx" in FACTS["providers.http"].external
    assert "__version__" in FACTS["index_cache"].internal and "cli" in FACTS["__main__"].internal
    assert "render" in FACTS["render.tables"].internal      # `from . import printable`: a name, not a module


# -- the rules catch what they should: violations planted in the text of real modules -------------


def planted(module: str, snippet: str, rule: Rule) -> set[tuple[str, str]]:
    """What rule reports once snippet is appended to module's source (in memory), less what it reported before."""
    package, text = SOURCES[module]
    facts = {**FACTS, module: analyse(module, package, text + "\n" + snippet + "\n", set(SOURCES))}
    return rule(facts) - rule(FACTS)


PLANTS = [
    ("prompts.common", "from ..ingest_runner import run_chats", layer_rule, "ingest_runner"),
    ("prompts.common", "from .. import ingest_runner", layer_rule, "ingest_runner"),
    ("prompts.common", "def f():\n    from ..providers import factory", layer_rule, "providers.factory"),
    ("render", "from .. import workflow", layer_rule, "workflow"),
    ("render", "from ..workflow import open_chat_graph", layer_rule, "workflow"),
    ("render", "import bme_cli.workflow", layer_rule, "workflow"),
    ("render.tables", "from bme_cli.workflow import open_chat_graph", layer_rule, "workflow"),
    ("workflow", "from .recall_session import RecallSession", layer_rule, "recall_session"),
    ("memory.query", "def f(p):\n    return p.read_text()", pure_modules_do_no_io, "p.read_text()"),
    ("memory.query", "from pathlib import Path\ndef f(p):\n    return Path(p).read_text()",
     pure_modules_do_no_io, "pathlib.Path().read_text()"),
    ("memory.query", "import sys\ndef f(t):\n    sys.stdout.write(t)", pure_modules_do_no_io, "sys.stdout.write()"),
    ("memory.query", "import os\ndef f():\n    return os.environ.get('HOME')",
     pure_modules_do_no_io, "os.environ.get()"),
    ("memory.query", "import os as o\ndef f():\n    return o.getenv('HOME')", pure_modules_do_no_io, "os.getenv()"),
    ("memory.query", "import builtins\ndef f(p):\n    return builtins.open(p)",
     pure_modules_do_no_io, "builtins.open()"),
    ("memory.query", "def f(p):\n    return open(p)", pure_modules_do_no_io, "builtins.open()"),
    ("memory.query", "def f(t):\n    print(t)", pure_modules_do_no_io, "builtins.print()"),
    ("memory.query", "import subprocess\ndef f():\n    subprocess.run(['ls'])",
     pure_modules_do_no_io, "subprocess.run()"),
    ("memory.query", "def f():\n    from ..graph.store import load_graph", pure_modules_do_no_io, "graph.store"),
    ("memory.query", "from os import environ\nHOME = environ['HOME']",
     environment_readers, "os.environ at import time"),
    ("settings", "import os\nHOME = os.environ.get('HOME')", environment_readers, "os.environ.get() at import time"),
    ("workflow", "def f():\n    return os.getenv('BME_X')", environment_readers, "os.getenv()"),
    ("graph.ops", "import importlib\ndef f():\n    return importlib.import_module('bme_cli.memory.recall')",
     layer_rule, "memory.recall"),
    ("graph.ops", "def f():\n    return __import__('bme_cli.memory.recall')", layer_rule, "memory.recall"),
    ("graph.ops", "from importlib import import_module\n"
                  "def f():\n    return import_module('..memory.recall', package=__package__)",
     layer_rule, "memory.recall"),
    ("graph.ops", "import importlib\ndef f():\n    return importlib.import_module('.memory.recall', 'bme_cli')",
     layer_rule, "memory.recall"),
    ("graph.ops", "import importlib\ndef f(n):\n    return importlib.import_module(n)",
     dynamic_imports_are_constant, "dynamic import importlib.import_module(n)"),
    ("memory.recall", "from ..providers.factory import build_providers",
     memory_is_handed_what_it_needs, "providers.factory"),
    ("memory.trigger", "from ..settings import load_settings",
     memory_is_handed_what_it_needs, "settings.load_settings"),
    ("memory.stats", "from ..chat import read_chat", memory_is_handed_what_it_needs, "chat.read_chat"),
    ("memory.recall", "def f():\n    return time.time()\nimport time", memory_is_handed_what_it_needs, "time.time()"),
    ("memory.recall", "def f():\n    return random.Random()",
     memory_is_handed_what_it_needs, "random.Random() unseeded"),
    ("memory.recall", "def f(xs):\n    return random.choice(xs)", memory_is_handed_what_it_needs, "random.choice()"),
    ("memory.sleep", "def f():\n    return new_uuid()",
     memory_is_handed_what_it_needs, "bme_cli.graph.model.new_uuid()"),
    ("render.tables", "import typer", third_party_rule, "typer"),
    ("memory.inject", "from rich.table import Table", third_party_rule, "rich"),
    ("providers.openai", "import httpx", third_party_rule, "httpx"),
    ("exporters.dot", "from ..providers.base import Embedder", exporters_are_pure_views, "providers.base"),
    ("workflow", "def f():\n    raise SystemExit(1)", only_the_cli_exits, "SystemExit()"),
    ("workflow", "import sys\ndef f():\n    sys.exit(1)", only_the_cli_exits, "sys.exit()"),
    ("workflow", "def f(t):\n    print(t)", only_render_writes_output, "builtins.print()"),
    ("cli.show_cmd", "import typer\ndef f(t):\n    typer.echo(t)", only_render_writes_output, "typer.echo()"),
    ("cli.show_cmd", "from rich import print\ndef f(t):\n    print(t)", only_render_writes_output, "rich.print()"),
    ("cli.show_cmd", "from rich.console import Console\ndef f(t):\n    Console().print(t)",
     only_render_writes_output, "rich.console.Console()"),
    ("cli.show_cmd", "def f(t):\n    sys.stderr.write(t)\nimport sys",
     only_render_writes_output, "sys.stderr.write()"),
    ("chat", "def f():\n    try:\n        pass\n    except Exception:\n        return None",
     broad_excepts_re_raise, None),
    ("cli.tool_cmds", "from ..providers.openai import OpenAIChatModel",
     the_cli_only_constructs_providers, "providers.openai"),
    ("errors", "from .cli import app", layer_rule, "cli"),
    ("memory.query", "\n" * MAX_LINES, modules_stay_small, "lines"),
]


@pytest.mark.parametrize("module, snippet, rule, what", PLANTS, ids=[f"{p[0]}:{p[3] or p[2].__name__}" for p in PLANTS])
def test_a_planted_violation_fails_the_rule(module, snippet, rule, what):
    new = planted(module, snippet, rule)
    assert ((module, what) in new) if what else new, f"{rule.__name__} missed {snippet!r} in {module}: {new}"


def test_a_module_outside_the_table_fails():
    spare = {m: analyse(m, pkg, "", set(SOURCES)) for m, pkg in (("memory.spare", "memory"), ("spare", ""))}
    facts = {**FACTS, **spare}
    assert every_module_has_a_layer(facts) == {("spare", "not in LAYERS")}


def test_a_dynamic_import_allowed_by_name_still_obeys_the_layers():
    package, text = SOURCES["index_cache"]
    assert text.count('"index_cache")') == 1
    text = text.replace('"index_cache")', '"index_cache", "cli.common")')
    facts = {**FACTS, "index_cache": analyse("index_cache", package, text, set(SOURCES))}
    assert ("index_cache", "cli.common") in dynamic_imports_are_constant(facts)
