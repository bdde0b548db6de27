"""`bme export --format html|graphml|mermaid|dot`: views of the graph, the page in a real browser."""
from __future__ import annotations

import html as html_lib
import json
import os
import re
import shutil
import subprocess
import xml.dom.minidom
from pathlib import Path

import numpy as np
import pytest
from fakes import NOW
from cli_support import cli_env, error_lines, ingested, ingested_template, invoke, ok, sidecar  # noqa: F401
from png_pixels import read_png

from bme_cli.exporters import html as html_export, render
from bme_cli.graph import store
from bme_cli.graph.model import Graph
from bme_cli.graph.ops import add_edge, add_node, invalidate_edge, make_node
from bme_cli.graph.schema import Schema

HOSTILE = 'A "quote" # <b>bold</b> </script><img src=x onerror=alert(1)> | pipe \x01 end'


def _hostile_graph() -> Graph:
    g = Graph()
    a = add_node(g, make_node("character", {"name": HOSTILE, "state": "line\nbreak"}, 1, 1000, new_id=lambda: "a"))
    b = add_node(g, make_node("event", {"summary": "Mira meets 萧寒 at the ford"}, 2, 1000, new_id=lambda: "b"))
    c = add_node(g, make_node("location", {"name": "Ford"}, 2, 1000, new_id=lambda: "c"))
    c.archived = True
    add_edge(g, "b", "a", "involved_in", 0.9, 1000, new_id=lambda: "e1")
    old = add_edge(g, "b", "c", "occurred_at", 0.9, 1000, new_id=lambda: "e2").edge
    invalidate_edge(old, 2000)
    add_edge(g, "a", "b", "related", 0.5, 1000, new_id=lambda: "e3")
    invalidate_edge(g.edges[-1], 3000)
    return g


def test_graphml_is_valid_xml_with_every_node_and_typed_attributes() -> None:
    text = render("graphml", _hostile_graph(), Schema.default(), "t")
    doc = xml.dom.minidom.parseString(text.encode("utf-8"))
    assert len(doc.getElementsByTagName("node")) == 3 and len(doc.getElementsByTagName("edge")) == 3
    keys = {k.getAttribute("id"): k.getAttribute("attr.type") for k in doc.getElementsByTagName("key")}
    assert keys["level"] == "int" and keys["valid"] == "boolean"
    values = [d.firstChild.data for d in doc.getElementsByTagName("data") if d.firstChild]
    assert "archived" in values and "false" in values and any("</script>" in v for v in values)


def test_mermaid_escapes_labels_and_dots_invalidated_edges() -> None:
    text = render("mermaid", _hostile_graph(), Schema.default(), "t")
    lines = text.splitlines()
    assert lines[3] == "flowchart LR"
    box = next(line for line in lines if ":::t_character" in line)
    inside = box[box.index('["') + 2:box.rindex('"]')]
    assert '"' not in inside and "<" not in inside and "#quot;" in inside and "#35;" in inside
    assert not any("Ford" in line for line in lines)            # archived: left out
    assert any("-.->|related|" in line for line in lines)        # invalidated: dotted
    assert any("-->|involved_in|" in line for line in lines)


def test_mermaid_never_hands_the_terminal_a_control_character() -> None:
    g = Graph()
    add_node(g, make_node("character", {"name": "Evil\x1b]0;pwned\x07Bob"}, 1, 1000, new_id=lambda: "a"))
    text = render("mermaid", g, Schema.default(), "t")
    assert "Evil ]0;pwned Bob" in text and not re.search(r"[\x00-\x09\x0b-\x1f\x7f-\x9f]", text)


def test_dot_quotes_everything_and_dashes_invalidated_edges() -> None:
    text = render("dot", _hostile_graph(), Schema.default(), "t")
    assert text.startswith("digraph bme {") and text.rstrip().endswith("}")
    assert json.dumps(HOSTILE[:59] + "…", ensure_ascii=False) in text
    assert re.search(r'"a" -> "b" \[label="related", style=dashed', text)
    assert '"b" -> "a" [label="involved_in"];' in text
    if shutil.which("dot"):
        done = subprocess.run(["dot", "-Tsvg"], input=text.encode(), capture_output=True, timeout=60)
        assert done.returncode == 0, done.stderr


def test_html_is_self_contained_and_chat_text_cannot_break_out() -> None:
    page = render("html", _hostile_graph(), Schema.default(), "a <title>")
    assert "<script src" not in page and "<link" not in page
    assert not re.search(r"(src|href)\s*=\s*[\"']?(https?:)?//", page)
    assert page.count("</script>") == 2 and "&lt;title&gt;" in page
    data = page[page.index('id="bme-data">') + len('id="bme-data">'):page.index("</script>")]
    parsed = json.loads(data)
    assert parsed == json.loads(json.dumps(html_export.page_data(_hostile_graph(), Schema.default(), "a <title>")))
    assert {n["id"]: n["archived"] for n in parsed["nodes"]} == {"a": False, "b": False, "c": True}
    assert [e["valid"] for e in parsed["edges"]] == [True, False, False]
    assert "innerHTML" not in page and "eval(" not in page


def test_export_formats_through_the_command(ingested: dict[str, Path], tmp_path: Path) -> None:
    chat = ingested["adventure"]
    for fmt in ("html", "graphml", "mermaid", "dot"):
        out = tmp_path / f"g.{fmt}"
        result = ok("export", chat, "--format", fmt, "-o", out)
        assert f"wrote {fmt}" in result.stderr and out.stat().st_size > 100
    assert ok("export", chat, "-f", "mermaid").stdout.splitlines()[3] == "flowchart LR"
    assert json.loads(ok("export", chat).stdout)["version"] == 3   # the default is still ST-BME's
    bad = invoke("export", chat, "--format", "xml")
    assert bad.exit_code == 2 and "st-bme, html" in error_lines(bad)[0]
    assert invoke("export", chat, "-f", "dot", "--with-embeddings").exit_code == 2


# -- the page in a real browser ---------------------------------------------------------------
def _browser() -> str | None:
    return shutil.which("chromium-headless-shell") or shutil.which("chromium")


needs_browser = pytest.mark.skipif(
    _browser() is None and not os.environ.get("BROWSER_TESTS_REQUIRED"),
    reason="no headless Chromium (Debian: apt-get install chromium-headless-shell)")


def _load(page: Path, *extra: str) -> subprocess.CompletedProcess:
    browser = _browser()
    assert browser, "BROWSER_TESTS_REQUIRED is set but no Chromium is installed"
    args = [browser, "--no-sandbox", "--disable-gpu", "--enable-logging=stderr", "--v=0",
            "--window-size=900,650", "--virtual-time-budget=5000", *extra, page.resolve().as_uri()]
    return subprocess.run(args, capture_output=True, text=True, timeout=120)


def _console_errors(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if "CONSOLE" in line or "Uncaught" in line]


@needs_browser
def test_the_checks_see_a_broken_page(tmp_path: Path) -> None:
    broken = tmp_path / "broken.html"
    broken.write_text("<html><body><script>document.documentElement.dataset.x = nope.y;</script></body></html>")
    done = _load(broken, "--dump-dom")
    assert _console_errors(done.stderr), done.stderr[-2000:]


@needs_browser
def test_graph_page_renders_in_headless_chromium_without_console_errors(ingested: dict[str, Path],
                                                                        tmp_path: Path) -> None:
    chat = ingested["adventure"]
    page = tmp_path / "graph.html"
    ok("export", chat, "--format", "html", "-o", page)
    dom = _load(page, "--dump-dom")
    assert dom.returncode == 0, dom.stderr[-2000:]
    assert 'data-bme-ready="true"' in dom.stdout and "data-bme-errors" not in dom.stdout
    drawn = int(re.search(r'data-bme-drawn="(\d+)"', dom.stdout).group(1))
    assert drawn == len(store.load_graph(sidecar(chat), NOW).active_nodes())
    assert _console_errors(dom.stderr) == []
    shot = tmp_path / "shot.png"
    done = _load(page, f"--screenshot={shot}")
    assert done.returncode == 0 and shot.exists(), done.stderr[-2000:]
    pixels = read_png(shot)[..., :3]
    canvas = pixels[120:, :500].reshape(-1, 3)   # the graph area, below the header, left of the panel
    background = np.array([0xfa, 0xfa, 0xfa])
    painted = np.any(np.abs(canvas.astype(int) - background) > 40, axis=1).mean()
    assert painted > 0.002, f"the graph area is blank ({painted:.4%} painted)"
    assert len(np.unique(canvas, axis=0)) > 8


@needs_browser
def test_graph_page_search_and_side_panel_work_in_the_browser(ingested: dict[str, Path], tmp_path: Path) -> None:
    chat = ingested["adventure"]
    page = tmp_path / "graph.html"
    ok("export", chat, "--format", "html", "-o", page)
    rule = next(n for n in store.load_graph(sidecar(chat), NOW).active_nodes("rule"))
    word = rule.fields["title"].split()[-1]
    link = page.resolve().as_uri() + f"#search={word}&node={rule.id}"
    done = subprocess.run([_browser(), "--no-sandbox", "--disable-gpu", "--enable-logging=stderr", "--v=0",
                           "--virtual-time-budget=5000", "--dump-dom", link],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and _console_errors(done.stderr) == []
    panel = done.stdout[done.stdout.index('<aside id="panel"'):done.stdout.index("</aside>")]
    assert rule.id in panel and html_lib.escape(rule.fields["constraint"], quote=False) in panel
    assert int(re.search(r'data-bme-matches="(\d+)"', done.stdout).group(1)) >= 1
