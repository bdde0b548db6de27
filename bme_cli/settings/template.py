"""The config file as bme writes it: a commented TOML template of every setting, its
default and its range (`bme config init`).
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal, get_args, get_origin

from ..atomic import atomic_write
from ..errors import ConfigError
from .model import SECTIONS


def _toml_value(value: Any) -> str:
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(map(_toml_value, value)) + "]"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    return json.dumps("" if value is None else str(value), ensure_ascii=False)


def _field_note(info: Any) -> str:
    def bound(attr: str) -> Any:
        return next((getattr(m, attr) for m in info.metadata if hasattr(m, attr)), None)
    lo, hi, gt = bound("ge"), bound("le"), bound("gt")
    rng = f" [{'' if lo is None else lo}..{'' if hi is None else hi}]" if (lo, hi) != (None, None) else ""
    rng += f" (> {gt})" if gt is not None else ""
    choices = get_args(info.annotation) if get_origin(info.annotation) is Literal else ()
    rng += f" (one of: {', '.join(choices)})" if choices else ""
    unset = " (unset)" if info.default is None else ""
    return f"{info.description or ''}{rng}{unset}".strip()


_TEMPLATE_HEADER = """\
# bme configuration (TOML). Every setting is shown commented out with its default.
# Precedence: command-line flags > BME_* environment variables > this file > defaults.
# Environment names: BME_<SETTING> for [memory] (e.g. BME_RECALL_TOP_K), BME_STORY_<SETTING>,
# BME_CHAT_<SETTING>, BME_EMBEDDING_<SETTING>, BME_RERANK_<SETTING>; the chat key is
# BME_API_KEY and this file BME_CONFIG. Tag lists from the environment: "options, choices".
# OPENAI_API_KEY and OPENAI_BASE_URL are used when nothing else sets the chat key / base_url.
# With no chat base_url bme works offline (heuristic extractor, local embedder).
# Prefer putting API keys in the environment; this file is created readable by you only.

# use the on-disk response cache (--no-cache turns it off for one run)
# cache = true
# record every model call (task, chat, model, endpoint origin, tokens, time, outcome) in
# $XDG_DATA_HOME/bme/calls.sqlite3; `bme log` lists them. Never the API key.
# call_log = true
# also record the prompts and replies (they hold chat text; --log-text for one run)
# call_log_text = false
# the largest chat or graph file bme reads, in MB: a bigger one is refused before reading [1..1048576]
# max_input_mb = 2048
"""


def config_template() -> str:
    """A commented TOML template listing every setting with its default and range."""
    out = [_TEMPLATE_HEADER]
    for section, model in SECTIONS.items():
        out.append(f"\n[{section}]  # {(model.__doc__ or '').strip()}")
        for name, info in model.model_fields.items():
            note = _field_note(info)
            line = f"# {name} = {_toml_value(info.default)}"
            out.append(f"{line}  # {note}" if note else line)
    return "\n".join(out) + "\n"


def write_config_template(path: Path, force: bool = False) -> Path:
    """Write the template to path (mode 0600, atomically); refuse to overwrite unless force.

    OSErrors (a full disk, a read-only folder) propagate, with nothing left behind: the
    caller says what failed in the words of its command.
    """
    path = Path(path)
    if path.exists() and not force:
        raise ConfigError(f"{path} already exists; nothing was written", "use --force to overwrite it")
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    atomic_write(path, [config_template().encode("utf-8")], mode=0o600)  # 0600 even over a wider file
    return path
