"""Loading settings with their precedence (highest first): flags > BME_* environment >
config file > OPENAI_* fallbacks > defaults.

Values are gathered per field with the place they came from, so an invalid value is
reported with its source (file path, variable name or flag). Nothing reads the environment
at import time.
"""
from __future__ import annotations

import difflib
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from pydantic import ValidationError

from ..errors import ConfigError
from .model import SECTIONS, MemorySettings, Settings

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
    import tomllib   # only when there is a config file: its parser compiles regexes as it loads
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
