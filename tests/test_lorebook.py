"""Lorebooks and cards: `bme export --format lorebook`, `bme ingest --lorebook/--card`."""
from __future__ import annotations

import base64
import json
import struct
import zlib
from pathlib import Path

import pytest

from bme_cli.errors import BadInputError
from bme_cli.graph import store
from bme_cli.sillytavern.card import read_card
from bme_cli.sillytavern.seeds import entry_seed
from bme_cli.sillytavern.worldinfo import ENTRY_DEFAULTS, LoreEntry, read_lorebook
from fakes import NOW
from cli_support import (chats, cli_env, error_lines, ingested, ingested_template, invoke, ok,  # noqa: F401
                         sidecar)

pytestmark = pytest.mark.usefixtures("cli_env")
DATA = Path(__file__).resolve().parent / "data" / "sillytavern"


def png(*chunks: tuple[bytes, bytes]) -> bytes:
    """A real 1x1 PNG with the given extra chunks before its image data."""
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)
    body = b"".join(chunk(k, d) for k, d in chunks)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0)) + body
            + chunk(b"IDAT", zlib.compress(b"\x00\xff\x00\x00")) + chunk(b"IEND", b""))


def card_text(card: dict) -> bytes:
    return base64.b64encode(json.dumps(card, ensure_ascii=False).encode())


def lorebook(chat: Path, *extra: str) -> dict:
    return json.loads(ok("export", chat, "--format", "lorebook", *extra).stdout)


# -- out -------------------------------------------------------------------------------------
def test_the_lorebook_has_every_field_of_sillytaverns_entry_template(ingested: dict[str, Path]) -> None:
    doc = lorebook(ingested["adventure"])
    assert list(doc) == ["entries"]
    entries = list(doc["entries"].values())
    assert entries and [e["uid"] for e in entries] == list(range(len(entries)))
    assert list(doc["entries"]) == [str(e["uid"]) for e in entries]
    for e in entries:
        assert list(e) == ["uid", *ENTRY_DEFAULTS, "displayIndex"]
        assert e["key"] and e["content"].split("\n")[0] == e["key"][0]
        kind = e["comment"].split(": ")[0]
        assert kind in ("character", "location", "rule", "thread")
        assert e["constant"] == (kind in ("rule", "thread") and "status: completed" not in e["content"])
        assert e["position"] == 0 and e["probability"] == 100 and e["depth"] == 4
    g = store.load_graph(sidecar(ingested["adventure"]), NOW)
    names = {n.fields["name"] for n in g.active_nodes("character")}
    assert names == {e["key"][0] for e in entries if e["comment"].startswith("character: ")}


def test_lorebook_to_a_file_and_an_empty_graph(ingested: dict[str, Path], tmp_path: Path) -> None:
    out = tmp_path / "lore.json"
    result = ok("export", ingested["chinese"], "--format", "lorebook", "-o", out)
    assert "lorebook entries" in result.stderr and result.stdout == ""
    assert json.loads(out.read_text(encoding="utf-8"))["entries"]
    assert "苏晚晴" in out.read_text(encoding="utf-8")       # non-ASCII as is, as SillyTavern writes it
    bad = invoke("export", ingested["chinese"], "--format", "yaml")
    assert bad.exit_code == 2 and "--format" in error_lines(bad)[0]


def test_export_ingest_export_gives_the_same_lorebook(ingested: dict[str, Path], chats: dict[str, Path],
                                                      tmp_path: Path) -> None:
    for name in ("adventure", "chinese"):
        first = tmp_path / f"{name}.json"
        ok("export", ingested[name], "--format", "lorebook", "-o", first)
        fresh = chats[name]
        ok("ingest", "--quiet", fresh, "--lorebook", first, "--until", "0")   # seeds, and nothing extracted
        assert lorebook(fresh) == json.loads(first.read_text(encoding="utf-8"))


# -- in --------------------------------------------------------------------------------------
def test_a_sillytavern_lorebook_seeds_names_aliases_places_and_core_rules(chats: dict[str, Path]) -> None:
    chat = chats["adventure"]
    result = ok("ingest", chat, "--lorebook", DATA / "lorebook.json")
    assert "seeded 3 new nodes" in result.stderr and "2 entries neither" in result.stderr
    g = store.load_graph(sidecar(chat), NOW)
    miras = [n for n in g.active_nodes("character") if "mira" in n.fields["name"].casefold()]
    assert [n.fields["name"] for n in miras] == ["Mira"]          # extraction merged into the seed
    assert miras[0].fields["aliases"] == "Mira Vale, the ranger"
    assert "ranger of the Whispering Wood" in miras[0].fields["core_note"]
    assert any(n.fields["name"] == "Saltmere" and "fishing town" in n.fields.get("features", "")
               for n in g.active_nodes("location"))
    [rule] = [n for n in g.active_nodes("rule") if n.fields["title"] == "Price of magic"]
    assert rule.fields["constraint"] == "Every spell costs its caster one memory, chosen by the spell."
    block = ok("recall", chat, "--budget", "20000").stdout
    assert "Every spell costs its caster one memory" in block.split("[Memory - Recalled]")[0]
    assert "Lantern of Vael" not in {n.fields["name"] for n in g.active_nodes("character")}
    again = ok("ingest", chat, "--lorebook", DATA / "lorebook.json")
    assert "seeded" not in again.stderr   # seeding twice changes nothing
    assert len(store.load_graph(sidecar(chat), NOW).nodes) == len(g.nodes)


def test_an_alias_in_the_story_merges_into_the_canonical_name(tmp_path: Path) -> None:
    chat = tmp_path / "alias.jsonl"
    rows = [{"user_name": "Rowan", "character_name": "Narrator", "chat_metadata": {}},
            {"name": "Narrator", "is_user": False, "mes": "The gate is shut."},
            {"name": "Rowan", "is_user": True, "mes": "Who guards it?"},
            {"name": "Narrator", "is_user": False,
             "mes": "Mira Vale steps out of the shadows. Mira Vale is wounded and tired."}]
    chat.write_text("\n".join(json.dumps(r) for r in rows), encoding="utf-8")
    ok("ingest", "--quiet", chat, "--lorebook", DATA / "lorebook.json")
    names = [n.fields["name"] for n in store.load_graph(sidecar(chat), NOW).active_nodes("character")]
    assert "Mira" in names and "Mira Vale" not in names


def test_a_png_card_seeds_its_character_and_its_character_book(chats: dict[str, Path]) -> None:
    chat = chats["chinese"]
    ok("ingest", "--quiet", chat, "--card", DATA / "card.png")
    g = store.load_graph(sidecar(chat), NOW)
    [su] = [n for n in g.active_nodes("character") if n.fields["name"] == "苏晚晴"]
    assert su.fields["traits"] == "冷静、谨慎、嘴硬心软"
    assert su.fields["core_note"].startswith("苏晚晴是临安城医馆的女大夫") and "{{" not in su.fields["core_note"]
    assert any(n.fields["name"] == "临安城" for n in g.active_nodes("location"))
    assert any(n.fields["title"] == "医馆门规" for n in g.active_nodes("rule"))


def test_card_chunks_v3_wins_and_json_cards_and_v1_cards_read(tmp_path: Path) -> None:
    v2 = {"spec": "chara_card_v2", "data": {"name": "Old", "description": "x"}}
    v3 = {"spec": "chara_card_v3", "data": {"name": "New", "description": "y", "character_book": {
        "entries": [{"keys": ["Vell"], "content": "A port town.", "enabled": True, "comment": "place: Vell"}]}}}
    path = tmp_path / "c.png"
    path.write_bytes(png((b"tEXt", b"chara\0" + card_text(v2)), (b"tEXt", b"ccv3\0" + card_text(v3))))
    card = read_card(path)
    assert card.name == "New" and card.entries[0].keys == ("Vell",)
    (tmp_path / "c.json").write_text(json.dumps(v2), encoding="utf-8")
    assert read_card(tmp_path / "c.json").name == "Old"
    (tmp_path / "v1.json").write_text(json.dumps({"name": "Plain", "personality": "kind"}), encoding="utf-8")
    assert read_card(tmp_path / "v1.json").personality == "kind"


@pytest.mark.parametrize("content, message", [
    (png(), "without a character card in it"),
    (png((b"tEXt", b"chara\0" + base64.b64encode(b"[1, 2]"))), "not a character card (a JSON list"),
    (png((b"tEXt", b"chara\0" + base64.b64encode(b'{"data": {"description": "no name"}}'))), 'no "name"'),
    (png((b"tEXt", b"chara\0" + base64.b64encode(b"{oops"))), "not valid JSON"),
    (png()[:30], "truncated PNG"),
    (b"\xff\xfe{", "not UTF-8"),
])
def test_a_bad_card_is_one_line_and_exit_3_before_anything_is_written(
        chats: dict[str, Path], tmp_path: Path, content: bytes, message: str) -> None:
    bad = tmp_path / "bad.png"
    bad.write_bytes(content)
    result = invoke("ingest", chats["adventure"], "--card", bad)
    assert result.exit_code == 3
    [line] = error_lines(result)
    assert str(bad) in line and message in line
    assert not sidecar(chats["adventure"]).exists()


@pytest.mark.parametrize("content, message", [
    (b'{"name": "x"}', 'no "entries" object'),
    (b"{", "not valid JSON"),
    (b'{"entries": {"0": 5}}', "entry 1 is not an object"),
    (b'{"entries": {"0": {"key": ["a"], "order": NaN}}}', "NaN is not a JSON value"),
])
def test_a_bad_lorebook_is_one_line_and_exit_3(chats: dict[str, Path], tmp_path: Path, content: bytes,
                                               message: str) -> None:
    bad = tmp_path / "bad.json"
    bad.write_bytes(content)
    result = invoke("ingest", chats["adventure"], "--lorebook", bad)
    assert result.exit_code == 3
    [line] = error_lines(result)
    assert str(bad) in line and message in line
    for wrong, hint in ((DATA / "card.png", "a PNG image"), (tmp_path / "card.json", "a character card")):
        (tmp_path / "card.json").write_text(json.dumps({"spec": "chara_card_v2", "data": {"name": "x"}}))
        result = invoke("ingest", chats["adventure"], "--lorebook", wrong)
        assert result.exit_code == 3 and hint in error_lines(result)[0] and "--card" in error_lines(result)[0]
    missing = invoke("ingest", chats["adventure"], "--lorebook", tmp_path / "nope.json")
    assert missing.exit_code == 3 and "no such file" in error_lines(missing)[0]


def test_the_sillytavern_setting_seeds_like_the_flag(chats: dict[str, Path], tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text(f'[sillytavern]\nlorebooks = ["{DATA / "lorebook.json"}"]\n', encoding="utf-8")
    ok("--config", config, "ingest", "--quiet", chats["adventure"], "--until", "0")
    g = store.load_graph(sidecar(chats["adventure"]), NOW)
    assert any(n.fields.get("title") == "Price of magic" for n in g.active_nodes("rule"))


def test_entry_kinds_need_evidence() -> None:
    def kind(**kw: object) -> str | None:
        seed = entry_seed(LoreEntry(**{"content": "", **kw}))
        return seed.type if seed else None
    assert kind(keys=("Ada",), content="She is a smith, forty years old.") == "character"
    assert kind(keys=("Ada",), content="A sword of legend.") is None          # a name, no person in the text
    assert kind(keys=("iron sword",), content="He forged it.") is None
    assert kind(keys=("Blackwater Harbor",), content="Ships.") == "location"
    assert kind(keys=("落霞镇",), content="小镇。") == "location"
    assert kind(keys=("林婉",), content="她是掌柜的女儿。") == "character"
    assert kind(keys=("x",), comment="Rule", content="No guns.", constant=True) == "rule"
    assert kind(keys=("Ada",), content="She is here.", disabled=True) is None
    assert read_lorebook(DATA / "lorebook.json")[0].keys == ("Mira", "Mira Vale", "the ranger")
    with pytest.raises(BadInputError):
        read_lorebook(DATA)
