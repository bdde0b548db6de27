"""bme's settings: every ST-BME setting (spec §8) in snake_case with the same defaults,
plus the endpoints and bme's own additions. One frozen model; nothing reads the
environment at import time (loading with precedence lives in `load_settings`).
"""
from __future__ import annotations

import difflib
import json
import os
import re
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, Literal, get_args, get_origin
from urllib.parse import urlsplit

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, PrivateAttr, SecretStr, ValidationError

from .atomic import atomic_write
from .errors import ConfigError


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class MemorySettings(_Frozen):
    """ST-BME's algorithm settings (spec §8), clamped to ST-BME's code ranges, plus bme's."""

    enabled: bool = Field(False, description="ST-BME's master switch; unused: bme runs when you call it")
    extract_every: int = Field(1, ge=1, le=50, description="assistant turns per extraction batch")
    extract_context_turns: int = Field(2, ge=0, le=20, description="the window reaches back 2x this many messages")
    recall_enabled: bool = True
    recall_top_k: int = Field(15, ge=1, le=100)
    recall_max_nodes: int = Field(8, ge=1, le=50)
    recall_enable_llm: bool = True
    inject_position: str = Field("atDepth", description="unused in ST-BME too; kept for compatibility")
    inject_depth: int = Field(4, ge=0, le=9999, description="where SillyTavern would inject; informational in bme")
    inject_role: int = Field(0, ge=0, le=2, description="unused in ST-BME too (0 system, 1 user, 2 assistant)")
    graph_weight: float = Field(0.6, ge=0, le=1)
    vector_weight: float = Field(0.3, ge=0, le=1)
    importance_weight: float = Field(0.1, ge=0, le=1)
    node_type_schema: str | None = Field(None, description="path of a custom schema JSON file")
    extract_prompt: str = ""
    enable_evolution: bool = True
    evo_neighbor_count: int = Field(5, ge=1, le=20)
    evo_consolidate_every: int = Field(50, ge=1, le=500, description="unused in ST-BME too; kept for compatibility")
    enable_precise_conflict: bool = True
    conflict_threshold: float = Field(0.85, ge=0.5, le=0.99)
    enable_synopsis: bool = True
    synopsis_every_n: int = Field(5, ge=1, le=100)
    enable_visibility: bool = False
    enable_cross_recall: bool = False
    enable_smart_trigger: bool = False
    trigger_patterns: str = Field("", description="one regex per line")
    smart_trigger_threshold: int = Field(2, ge=1, le=10)
    enable_sleep_cycle: bool = False
    forget_threshold: float = Field(0.5, ge=0.1, le=1)
    sleep_every_n: int = Field(10, ge=1, le=200)
    enable_prob_recall: bool = False
    prob_recall_chance: float = Field(0.15, ge=0.01, le=0.5)
    enable_reflection: bool = False
    reflect_every_n: int = Field(10, ge=1, le=200)
    # bme's own
    budget: int = Field(1500, ge=50, le=200_000, description="token budget of the injected block")
    lexical_weight: float = Field(0.3, ge=0, le=1,
                                  description="weight of BM25 in the fused recall score; 0 = ST-BME's score")
    context_window: int = Field(0, ge=0, description="messages the model already sees (echo suppression); 0 = off")
    memory_lang: Literal["auto", "zh", "en"] = "auto"
    update_events_core: bool = Field(False, description="ST-BME behaviour: state-update events are Core")
    sleep_age: Literal["story", "wall"] = Field("story", description="age for forgetting: messages or wall clock")
    include_greeting: bool = Field(True, description="extract the greeting (message 0) too; false = ST-BME's skip")
    excerpts: bool = Field(True, description="quote the chat's own sentences beside the nodes; "
                                              "false = ST-BME's nodes-only block")
    query_cells: bool = Field(True, description="a cell over 200 characters keeps the sentences the query "
                                                 "asks about, cut at a word; false = ST-BME's first 200")


def _tag_names(value: Any) -> Any:
    """Tag names from a TOML list or a string ("options, choices" or one a line)."""
    items = re.split(r"[\s,]+", value) if isinstance(value, str) else value
    if not isinstance(items, (list, tuple)):
        return value
    names = [str(v).strip().strip("<>/").strip() for v in items if str(v).strip()]
    bad = [n for n in names if not re.fullmatch(r"[A-Za-z][\w:.\-]*", n)]
    if bad:
        raise ValueError(f"not a tag name: {bad[0]!r}")
    return tuple(names)


TagNames = Annotated[tuple[str, ...], BeforeValidator(_tag_names)]


class StorySettings(_Frozen):
    """What bme reads of a message as story (docs/story-text.md); bme's own."""

    story_tags: TagNames = Field(("content",), description="when one is present, only its inside is story")
    drop_tags: TagNames = Field((), description="more tags whose blocks are never story")
    keep_tags: TagNames = Field((), description="tags kept as story even where bme would drop them")
    drop_panels: bool = Field(True, description="drop status panels, tables and fenced boards by their shape")
    drop_notes: bool = Field(True, description="drop OOC notes and planning notes before the story")


def _paths(value: Any) -> Any:
    """File paths from a TOML list or a string (several separated by os.pathsep)."""
    if isinstance(value, str):
        return tuple(p for p in value.split(os.pathsep) if p.strip())
    return tuple(value) if isinstance(value, list) else value


class SillyTavernSettings(_Frozen):
    """Files of the user's SillyTavern that seed every ingest (docs/sillytavern.md); bme's own."""

    lorebooks: Annotated[tuple[str, ...], BeforeValidator(_paths)] = Field(
        (), description="World Info files whose names and constant rules seed each chat's graph")
    cards: Annotated[tuple[str, ...], BeforeValidator(_paths)] = Field(
        (), description="character cards (.png or .json) whose character and lorebook seed each graph")
    detect_branches: bool = Field(True, description="a new chat sharing its first messages with a processed chat "
                                                    "beside it starts from that chat's graph")


class ChatEndpoint(_Frozen):
    """An OpenAI-compatible /chat/completions endpoint; base_url None means offline."""

    base_url: str | None = None
    model: str = "gpt-4o-mini"
    api_key: SecretStr | None = None
    timeout: float = Field(60.0, gt=0)
    max_retries: int = Field(4, ge=0, le=20)
    concurrency: int = Field(4, ge=1, le=256)
    temperature: float = Field(0.2, ge=0, le=2)
    max_tokens: int = Field(2048, ge=16)
    price_prompt_per_m: float | None = Field(None, ge=0, description="USD per million prompt tokens")
    price_completion_per_m: float | None = Field(None, ge=0, description="USD per million completion tokens")
    json_mode: Literal["auto", "json_schema", "json_object", "plain"] = Field(
        "auto", description="how to ask for JSON; auto tries json_schema, then json_object, then plain")


class EmbeddingEndpoint(_Frozen):
    """An OpenAI-compatible /embeddings endpoint; base_url None falls back to the chat one."""

    base_url: str | None = None
    model: str = "text-embedding-3-small"
    api_key: SecretStr | None = None
    batch_size: int = Field(64, ge=1, le=2048)
    dimensions: int | None = Field(None, ge=1)
    timeout: float = Field(60.0, gt=0)
    max_retries: int = Field(4, ge=0, le=20)
    concurrency: int = Field(4, ge=1, le=256)
    price_per_m: float | None = Field(None, ge=0, description="USD per million input tokens")
    give_up_after: int = Field(3, ge=1, le=100, description="failed embedding requests in a row after which "
                               "a run stops asking the endpoint (circuit breaker)")
    give_up_seconds: float = Field(120.0, gt=0, description="seconds of failing embedding requests in a row "
                                   "after which a run stops asking the endpoint")
    offline: bool = Field(False, description="use the built-in offline embedder even when an API is configured")
    offline_model: Literal["use-m3", "hash"] = "use-m3"
    # True when base_url was not set for embeddings but taken from the chat endpoint (said once a run).
    _from_chat: bool = PrivateAttr(False)

    @property
    def from_chat(self) -> bool:
        """base_url came from the chat endpoint, not from an embedding setting."""
        return self._from_chat


class RerankEndpoint(_Frozen):
    """An optional /rerank endpoint (Jina/Cohere style) that reorders recall's best candidates."""

    base_url: str | None = Field(None, description="POST {base_url}/rerank (as is when it already ends in /rerank)")
    model: str | None = Field(None, description="the reranking model; required with base_url")
    api_key: SecretStr | None = None
    top_n: int = Field(30, ge=2, le=200, description="recalled candidates sent to be reranked")
    timeout: float = Field(10.0, gt=0, description="seconds before recall falls back to its own ranking")
    max_retries: int = Field(1, ge=0, le=10)


class Settings(_Frozen):
    """Everything bme can be configured with."""

    memory: MemorySettings = MemorySettings()
    story: StorySettings = StorySettings()
    sillytavern: SillyTavernSettings = SillyTavernSettings()
    chat: ChatEndpoint = ChatEndpoint()
    embedding: EmbeddingEndpoint = EmbeddingEndpoint()
    rerank: RerankEndpoint = RerankEndpoint()
    cache: bool = True
    call_log: bool = Field(True, description="record every model call in the user data dir (bme log)")
    call_log_text: bool = Field(False, description="record prompts and replies in the call log too")
    max_input_mb: int = Field(2048, ge=1, le=1 << 20, description="largest chat or graph file bme reads, in MB; "
                              "a bigger one is refused before it is read")

    # The config file when it holds an API key and others may read it (said once a run).
    _exposed_key_file: str | None = PrivateAttr(None)

    @property
    def max_input_bytes(self) -> int:
        """max_input_mb in bytes."""
        return self.max_input_mb << 20

    @property
    def key_file_warning(self) -> str | None:
        """A warning when the config file holds an API key and other users may read it."""
        f = self._exposed_key_file
        return f and f"warning: {f} holds an API key and other users can read it; run `chmod 600 {f}`"


# ---------------------------------------------------------------- loading
# Precedence (highest first): flags > BME_* environment > config file > OPENAI_* fallbacks
# > defaults. Values are gathered per field with the place they came from, so an invalid
# value is reported with its source (file path, variable name or flag).

SECTIONS: dict[str, type[_Frozen]] = {
    "memory": MemorySettings, "story": StorySettings, "sillytavern": SillyTavernSettings, "chat": ChatEndpoint,
    "embedding": EmbeddingEndpoint, "rerank": RerankEndpoint,
}
_TOP_LEVEL = ("cache", "call_log", "call_log_text", "max_input_mb")
_SECRET_FIELDS = ("api_key",)
_Key = tuple[str, str]                      # (section, field); section "" for top-level keys
_Layer = dict[_Key, tuple[Any, str]]        # -> (raw value, where it came from)


def _is_optional(section: str, name: str) -> bool:
    return bool(section) and SECTIONS[section].model_fields[name].default is None


def _known(section: str) -> list[str]:
    return list(SECTIONS[section].model_fields) if section else list(_TOP_LEVEL)


def _suggest(name: str, choices: list[str]) -> str:
    close = difflib.get_close_matches(name, choices, n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


def default_config_path(env: Mapping[str, str] | None = None) -> Path:
    """$XDG_CONFIG_HOME/bme/config.toml, else ~/.config/bme/config.toml."""
    env = os.environ if env is None else env
    base = env.get("XDG_CONFIG_HOME") or os.path.join(env.get("HOME") or str(Path.home()), ".config")
    return Path(base) / "bme" / "config.toml"


def config_file_path(config_path: Path | None = None, env: Mapping[str, str] | None = None) -> Path:
    """The config file bme reads: --config, else $BME_CONFIG, else the user config dir."""
    env = os.environ if env is None else env
    if config_path is not None:
        return Path(config_path)
    if env.get("BME_CONFIG"):
        return Path(env["BME_CONFIG"])
    return default_config_path(env)


def _file_layer(path: Path) -> _Layer:
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as e:
        raise ConfigError(f"cannot read config file {path}: {e.strerror or e}") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
        raise ConfigError(f"config file {path} is not valid TOML: {e}",
                          "fix the file or run `bme config init --force`") from None
    layer: _Layer = {}
    for key, value in data.items():
        if key in SECTIONS:
            if not isinstance(value, dict):
                raise ConfigError(f"config file {path}: {key!r} must be a table ([{key}])")
            for name, v in value.items():
                if name not in SECTIONS[key].model_fields:
                    raise ConfigError(f"config file {path}: unknown setting [{key}] {name}"
                                      + _suggest(name, _known(key)))
                v = None if v == "" and _is_optional(key, name) else v
                layer[(key, name)] = (v, f"config file {path} ([{key}] {name})")
        elif key in _TOP_LEVEL:
            layer[("", key)] = (value, f"config file {path} ({key})")
        elif key in MemorySettings.model_fields:
            raise ConfigError(f"config file {path}: {key!r} must be under the [memory] table")
        else:
            raise ConfigError(f"config file {path}: unknown setting {key!r}"
                              + _suggest(key, list(SECTIONS) + list(_TOP_LEVEL)))
    return layer


def _env_name(section: str, name: str) -> str:
    return f"BME_{section.upper() + '_' if section and section != 'memory' else ''}{name.upper()}"


def _env_layer(env: Mapping[str, str]) -> _Layer:
    layer: _Layer = {}
    for section in ("", *SECTIONS):
        for name in _known(section):
            var = _env_name(section, name)
            if env.get(var):        # an empty variable counts as unset
                layer[(section, name)] = (env[var], f"environment variable {var}")
    if ("chat", "api_key") not in layer and env.get("BME_API_KEY"):
        layer[("chat", "api_key")] = (env["BME_API_KEY"], "environment variable BME_API_KEY")
    return layer


def _fallback_layer(env: Mapping[str, str]) -> _Layer:
    layer: _Layer = {}
    for var, key in (("OPENAI_BASE_URL", ("chat", "base_url")), ("OPENAI_API_KEY", ("chat", "api_key"))):
        if env.get(var):
            layer[key] = (env[var], f"environment variable {var}")
    return layer


def _flag_layer(flags: Mapping[str, Any]) -> _Layer:
    """Flags as {"chat.model": ..., "recall_top_k": ..., "cache": ...} or nested sections; None = unset."""
    layer: _Layer = {}
    items: list[tuple[str, Any]] = []
    for key, value in flags.items():
        if key in SECTIONS and isinstance(value, Mapping):
            items += [(f"{key}.{k}", v) for k, v in value.items()]
        else:
            items.append((key, value))
    for key, value in items:
        section, _, name = key.rpartition(".")
        if not section and name not in _TOP_LEVEL:
            section = "memory"
        if (section and section not in SECTIONS) or name not in _known(section):
            raise ConfigError(f"unknown setting {key!r} given as a flag")
        if value is not None:
            flag = name if section in ("", "memory") else f"{section}-{name}"
            layer[(section, name)] = (value, f"flag --{flag.replace('_', '-')}")
    return layer


def _origin(url: Any) -> tuple[str, str, int | None] | None:
    if not isinstance(url, str) or not url:
        return None
    parts = urlsplit(url)
    try:
        port = parts.port or {"http": 80, "https": 443}.get(parts.scheme)
    except ValueError:
        return None
    return parts.scheme, (parts.hostname or ""), port


def _inherit_embedding(merged: _Layer) -> bool:
    """Embedding base_url defaults to the chat one; its key (and the rerank key) too, but only for
    the same origin (a chat key is never sent to another host). True when base_url was taken."""
    chat_url = merged.get(("chat", "base_url"))
    inherited = ("embedding", "base_url") not in merged and chat_url is not None
    if inherited:
        merged[("embedding", "base_url")] = chat_url
    chat_key = merged.get(("chat", "api_key"))
    for section in ("embedding", "rerank"):  # a rerank endpoint has no base_url default: opt-in only
        url = merged.get((section, "base_url"))
        if (section, "api_key") not in merged and chat_key is not None and url is not None \
                and chat_url is not None and _origin(url[0]) == _origin(chat_url[0]):
            merged[(section, "api_key")] = chat_key
    return inherited


def _validation_error(exc: ValidationError, merged: _Layer) -> ConfigError:
    # A key pasted into the wrong field must not be echoed either.
    secrets = [str(v) for (_, name), (v, _) in merged.items() if name in _SECRET_FIELDS and v]
    lines = []
    for err in exc.errors():
        loc = tuple(str(x) for x in err["loc"])
        key: _Key = (loc[0], loc[1]) if loc[0] in SECTIONS and len(loc) > 1 else ("", loc[0])
        source = merged.get(key, (None, "defaults"))[1]
        name = ".".join(k for k in key if k)
        shown = "" if key[1] in _SECRET_FIELDS else f" (got {err.get('input')!r})"
        for secret in secrets:
            shown = shown.replace(secret, "***")
        lines.append(f"{name} from {source}: {err['msg']}{shown}")
    return ConfigError("invalid setting: " + "; ".join(lines), "see `bme config init` for every setting and its range")


def load_settings(flags: Mapping[str, Any] | None = None, env: Mapping[str, str] | None = None,
                  config_path: Path | None = None) -> Settings:
    """Settings from flags > BME_* env > TOML config file > OPENAI_* fallbacks > defaults."""
    env = os.environ if env is None else env
    path = config_file_path(config_path, env)
    explicit = config_path is not None or bool(env.get("BME_CONFIG"))
    if explicit and not path.is_file():
        raise ConfigError(f"config file {path} does not exist", "create it with `bme config init`")
    merged: _Layer = {}
    merged.update(_fallback_layer(env))
    exposed = None
    if path.is_file():
        from_file = _file_layer(path)
        merged.update(from_file)
        exposed = str(path) if _readable_by_others(path, from_file) else None
    merged.update(_env_layer(env))
    merged.update(_flag_layer(flags or {}))
    inherited = _inherit_embedding(merged)
    tree: dict[str, Any] = {}
    for (section, name), (value, _) in merged.items():
        (tree.setdefault(section, {}) if section else tree)[name] = value
    try:
        settings = Settings.model_validate(tree)
    except ValidationError as e:
        raise _validation_error(e, merged) from None
    settings.embedding._from_chat = inherited
    settings._exposed_key_file = exposed
    return settings


def _readable_by_others(path: Path, layer: _Layer) -> bool:
    """A config file with a key in it that its group or everyone may read (POSIX modes only)."""
    if os.name != "posix" or not any(name in _SECRET_FIELDS and value for (_, name), (value, _) in layer.items()):
        return False
    try:
        return bool(path.stat().st_mode & 0o044)
    except OSError:
        return False


# ---------------------------------------------------------------- template, redaction

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


def redacted(settings: Settings) -> dict[str, Any]:
    """The settings as plain data for display, with every API key shown as '***'."""
    data = settings.model_dump()
    for section in ("chat", "embedding", "rerank"):
        if data[section].get("api_key") is not None:
            data[section]["api_key"] = "***"
    return data
