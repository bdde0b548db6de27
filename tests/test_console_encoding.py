"""Output never crashes on a character the console's encoding lacks (a Windows cp1252
console), and files and pipes get UTF-8 whatever the locale says."""
from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path

import pytest

from bme_cli.cli import text_streams

SAMPLES = Path(__file__).resolve().parent.parent / "sample_chats"


def _stream(encoding: str) -> io.TextIOWrapper:
    return io.TextIOWrapper(io.BytesIO(), encoding=encoding)


def test_a_pipe_in_a_cp1252_locale_gets_utf8(monkeypatch: pytest.MonkeyPatch) -> None:
    out, err = _stream("cp1252"), _stream("cp1252")
    monkeypatch.setattr(sys, "stdout", out)
    monkeypatch.setattr(sys, "stderr", err)
    monkeypatch.delenv("PYTHONIOENCODING", raising=False)
    text_streams()
    print("苏晚晴")
    out.flush()
    assert out.buffer.getvalue().decode("utf-8") == "苏晚晴\n"


def test_an_encoding_the_user_chose_is_kept_and_never_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    out = _stream("cp1252")
    monkeypatch.setattr(sys, "stdout", out)
    monkeypatch.setenv("PYTHONIOENCODING", "cp1252")
    text_streams()
    print("Rowan · 苏晚晴")
    out.flush()
    assert out.buffer.getvalue() == "Rowan · ???\n".encode("cp1252")


@pytest.mark.parametrize("encoding", ["cp1252", "ascii"])
def test_the_console_script_prints_chinese_into_a_narrow_encoding(tmp_path: Path, encoding: str) -> None:
    chat = tmp_path / "chinese.jsonl"
    chat.write_bytes((SAMPLES / "chinese.jsonl").read_bytes())
    env = {**os.environ, "PYTHONIOENCODING": encoding, "BME_EMBEDDING_OFFLINE_MODEL": "hash"}
    env = {k: v for k, v in env.items() if not k.startswith(("BME_CHAT", "OPENAI_"))}
    for args in (["show", str(chat), "-m", "1"], ["stats", str(chat)]):
        done = subprocess.run([sys.executable, "-m", "bme_cli", *args], capture_output=True, env=env, timeout=120)
        assert done.returncode == 0, done.stderr
        assert b"Traceback" not in done.stderr
