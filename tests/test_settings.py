"""Settings loading: precedence, sources in error messages, template, redaction."""
from __future__ import annotations

import re
import stat
import tomllib
from pathlib import Path

import pytest

from bme_cli.errors import ConfigError, ExitCode
from bme_cli.settings import (Settings, config_file_path, config_template, default_config_path,
                              load_settings, redacted, write_config_template)


def _write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def test_no_sources_gives_the_st_bme_defaults(tmp_path):
    s = load_settings(env={"XDG_CONFIG_HOME": str(tmp_path)})
    assert s == Settings()
    assert s.memory.recall_top_k == 15 and s.chat.base_url is None and s.embedding.base_url is None


def test_flag_beats_env_beats_file_beats_default(tmp_path):
    cfg = _write(tmp_path / "c.toml", "[memory]\nrecall_top_k = 20\nrecall_max_nodes = 3\ninject_depth = 7\n")
    env = {"BME_RECALL_TOP_K": "30", "BME_RECALL_MAX_NODES": "4"}
    s = load_settings(flags={"recall_top_k": 40}, env=env, config_path=cfg)
    assert s.memory.recall_top_k == 40        # flag
    assert s.memory.recall_max_nodes == 4     # env over file
    assert s.memory.inject_depth == 7         # file over default
    assert s.memory.graph_weight == 0.6       # default


def test_flags_accept_nested_sections_dotted_names_and_skip_none(tmp_path):
    s = load_settings(flags={"memory": {"recall_top_k": 9, "budget": None}, "chat.model": "m1",
                             "cache": False}, env={"XDG_CONFIG_HOME": str(tmp_path)})
    assert s.memory.recall_top_k == 9 and s.memory.budget == 1500
    assert s.chat.model == "m1" and s.cache is False


def test_unknown_flag_is_a_config_error(tmp_path):
    with pytest.raises(ConfigError, match="recal_top_k"):
        load_settings(flags={"recal_top_k": 3}, env={"XDG_CONFIG_HOME": str(tmp_path)})


def test_endpoint_env_names_and_api_key_aliases(tmp_path):
    env = {"XDG_CONFIG_HOME": str(tmp_path), "BME_CHAT_BASE_URL": "http://h:1/v1", "BME_CHAT_MODEL": "cm",
           "BME_API_KEY": "k-generic", "BME_EMBEDDING_MODEL": "em", "BME_EMBEDDING_BATCH_SIZE": "8",
           "BME_CHAT_TIMEOUT": "5.5", "BME_ENABLE_REFLECTION": "true"}
    s = load_settings(env=env)
    assert (s.chat.base_url, s.chat.model, s.chat.timeout) == ("http://h:1/v1", "cm", 5.5)
    assert s.chat.api_key.get_secret_value() == "k-generic"
    assert (s.embedding.model, s.embedding.batch_size) == ("em", 8)
    assert s.memory.enable_reflection is True
    env["BME_CHAT_API_KEY"] = "k-chat"
    assert load_settings(env=env).chat.api_key.get_secret_value() == "k-chat"


def test_openai_variables_are_fallbacks_only(tmp_path):
    env = {"XDG_CONFIG_HOME": str(tmp_path), "OPENAI_API_KEY": "sk-openai", "OPENAI_BASE_URL": "https://o/v1"}
    s = load_settings(env=env)
    assert s.chat.base_url == "https://o/v1" and s.chat.api_key.get_secret_value() == "sk-openai"
    cfg = _write(tmp_path / "bme" / "config.toml", '[chat]\nbase_url = "https://file/v1"\napi_key = "k-file"\n')
    s = load_settings(env=env)
    assert s.chat.base_url == "https://file/v1" and s.chat.api_key.get_secret_value() == "k-file"
    assert cfg.exists()
    s = load_settings(env={**env, "BME_API_KEY": "k-env"})
    assert s.chat.api_key.get_secret_value() == "k-env"


def test_embedding_inherits_chat_base_url_and_key_for_the_same_origin_only(tmp_path):
    env = {"XDG_CONFIG_HOME": str(tmp_path), "BME_CHAT_BASE_URL": "https://api.x.com/v1", "BME_API_KEY": "k"}
    s = load_settings(env=env)
    assert s.embedding.base_url == "https://api.x.com/v1"
    assert s.embedding.api_key.get_secret_value() == "k"
    s = load_settings(env={**env, "BME_EMBEDDING_BASE_URL": "http://localhost:11434/v1"})
    assert s.embedding.base_url == "http://localhost:11434/v1"
    assert s.embedding.api_key is None      # the chat key never goes to another host
    s = load_settings(env={**env, "BME_EMBEDDING_BASE_URL": "https://api.x.com:443/other/v1"})
    assert s.embedding.api_key.get_secret_value() == "k"


def test_config_file_found_via_flag_env_or_user_dir(tmp_path):
    user = _write(tmp_path / "xdg" / "bme" / "config.toml", "[memory]\nbudget = 111\n")
    other = _write(tmp_path / "other.toml", "[memory]\nbudget = 222\n")
    explicit = _write(tmp_path / "explicit.toml", "[memory]\nbudget = 333\n")
    env = {"XDG_CONFIG_HOME": str(tmp_path / "xdg")}
    assert config_file_path(env=env) == user == default_config_path(env)
    assert load_settings(env=env).memory.budget == 111
    assert load_settings(env={**env, "BME_CONFIG": str(other)}).memory.budget == 222
    assert load_settings(env={**env, "BME_CONFIG": str(other)}, config_path=explicit).memory.budget == 333
    assert default_config_path({"HOME": "/home/u"}) == Path("/home/u/.config/bme/config.toml")


def test_missing_explicit_config_file_is_an_error_but_missing_default_is_not(tmp_path):
    with pytest.raises(ConfigError, match="does not exist"):
        load_settings(env={}, config_path=tmp_path / "nope.toml")
    with pytest.raises(ConfigError, match="nope2.toml"):
        load_settings(env={"BME_CONFIG": str(tmp_path / "nope2.toml")})
    assert load_settings(env={"XDG_CONFIG_HOME": str(tmp_path / "empty")}) == Settings()


def test_bad_env_value_names_the_variable_and_field(tmp_path):
    with pytest.raises(ConfigError) as e:
        load_settings(env={"XDG_CONFIG_HOME": str(tmp_path), "BME_RECALL_TOP_K": "500"})
    assert "BME_RECALL_TOP_K" in e.value.message and "memory.recall_top_k" in e.value.message
    assert e.value.exit_code == ExitCode.CONFIG


def test_bad_file_value_names_the_file_and_field(tmp_path):
    cfg = _write(tmp_path / "c.toml", '[chat]\ntemperature = "hot"\n')
    with pytest.raises(ConfigError) as e:
        load_settings(env={}, config_path=cfg)
    assert str(cfg) in e.value.message and "chat.temperature" in e.value.message


def test_bad_flag_value_names_the_flag(tmp_path):
    with pytest.raises(ConfigError, match="flag --conflict-threshold"):
        load_settings(flags={"memory": {"conflict_threshold": 2.0}}, env={"XDG_CONFIG_HOME": str(tmp_path)})


def test_invalid_api_key_value_is_not_echoed(tmp_path):
    cfg = _write(tmp_path / "c.toml", "[chat]\napi_key = 123456789\n")
    with pytest.raises(ConfigError) as e:
        load_settings(env={}, config_path=cfg)
    assert "chat.api_key" in e.value.message and "123456789" not in str(e.value)


def test_unknown_keys_in_file_are_named_with_a_suggestion(tmp_path):
    cfg = _write(tmp_path / "c.toml", "[memory]\nrecal_top_k = 3\n")
    with pytest.raises(ConfigError, match=r"recal_top_k.*did you mean 'recall_top_k'"):
        load_settings(env={}, config_path=cfg)
    cfg = _write(tmp_path / "d.toml", "[chatt]\nmodel = 'x'\n")
    with pytest.raises(ConfigError, match="'chatt'.*did you mean 'chat'"):
        load_settings(env={}, config_path=cfg)
    cfg = _write(tmp_path / "e.toml", "recall_top_k = 3\n")
    with pytest.raises(ConfigError, match=r"\[memory\] table"):
        load_settings(env={}, config_path=cfg)


def test_invalid_toml_names_the_file(tmp_path):
    cfg = _write(tmp_path / "c.toml", "[memory\nbudget = 1\n")
    with pytest.raises(ConfigError, match="not valid TOML") as e:
        load_settings(env={}, config_path=cfg)
    assert str(cfg) in e.value.message


def test_empty_string_in_file_unsets_an_optional_field(tmp_path):
    cfg = _write(tmp_path / "c.toml", '[chat]\nbase_url = ""\n[embedding]\ndimensions = ""\n')
    s = load_settings(env={"OPENAI_BASE_URL": "https://o/v1"}, config_path=cfg)
    assert s.chat.base_url is None and s.embedding.dimensions is None


def test_load_settings_reads_os_environ_only_when_called(monkeypatch):
    monkeypatch.setenv("BME_BUDGET", "999")
    assert load_settings().memory.budget == 999
    monkeypatch.delenv("BME_BUDGET")
    assert load_settings().memory.budget == 1500


def test_template_lists_every_setting_and_uncommented_gives_defaults(tmp_path):
    text = config_template()
    for section in ("memory", "story", "sillytavern", "chat", "embedding", "rerank"):
        fields = type(getattr(Settings(), section)).model_fields
        for name in fields:
            assert re.search(rf"^# {name} = ", text, re.M), name
    assert tomllib.loads(text) == {"memory": {}, "story": {}, "sillytavern": {}, "chat": {}, "embedding": {},
                                   "rerank": {}}
    uncommented = re.sub(r"^# (\w+ = )", r"\1", text, flags=re.M)
    cfg = _write(tmp_path / "full.toml", uncommented)
    assert load_settings(env={}, config_path=cfg) == Settings()


def test_write_config_template_is_private_and_refuses_to_overwrite(tmp_path):
    path = tmp_path / "cfgdir" / "config.toml"
    write_config_template(path)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert path.read_text() == config_template()
    path.write_text("# mine\n")
    with pytest.raises(ConfigError, match="already exists"):
        write_config_template(path)
    assert path.read_text() == "# mine\n"
    path.chmod(0o644)
    write_config_template(path, force=True)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600 and path.read_text() == config_template()
    assert [p.name for p in path.parent.iterdir()] == ["config.toml"]   # no temp files left


def test_redacted_masks_every_key_and_keeps_the_rest(tmp_path):
    env = {"XDG_CONFIG_HOME": str(tmp_path), "BME_CHAT_BASE_URL": "https://a/v1", "BME_API_KEY": "sk-SECRET",
           "BME_RERANK_API_KEY": "rr-SECRET"}
    data = redacted(load_settings(env=env))
    assert data["chat"]["api_key"] == "***" and data["embedding"]["api_key"] == "***"
    assert data["rerank"]["api_key"] == "***" and data["chat"]["base_url"] == "https://a/v1"
    assert "SECRET" not in repr(data)
    assert redacted(Settings())["chat"]["api_key"] is None


def test_story_tags_come_as_a_toml_list_or_a_string_and_bad_names_are_refused(tmp_path):
    cfg = _write(tmp_path / "c.toml", '[story]\ndrop_tags = ["options", "Choices"]\nkeep_tags = "summary"\n')
    s = load_settings(env={"BME_STORY_STORY_TAGS": "content, <main_text>"}, config_path=cfg)
    assert s.story.drop_tags == ("options", "Choices") and s.story.keep_tags == ("summary",)
    assert s.story.story_tags == ("content", "main_text")
    with pytest.raises(ConfigError, match=r"story.drop_tags from environment variable BME_STORY_DROP_TAGS"):
        load_settings(env={"BME_STORY_DROP_TAGS": "ok, not a tag!"})


@pytest.mark.skipif(not hasattr(stat, "S_IRGRP") or __import__("os").name != "posix", reason="POSIX modes")
@pytest.mark.parametrize("holds_key, mode, warned", [(True, 0o644, True), (True, 0o640, True),
                                                     (True, 0o600, False), (False, 0o644, False)])
def test_a_config_file_holding_a_key_that_others_can_read_is_warned_about(tmp_path, holds_key, mode, warned):
    cfg = tmp_path / "config.toml"
    cfg.write_text('[chat]\nbase_url = "http://127.0.0.1:9/v1"\n' + ('api_key = "sk-HIDDEN"\n' if holds_key else ""))
    cfg.chmod(mode)
    warning = load_settings(env={}, config_path=cfg).key_file_warning
    if not warned:
        assert warning is None
        return
    assert str(cfg) in warning and f"chmod 600 {cfg}" in warning and "HIDDEN" not in warning


def test_the_size_settings_default_is_the_chat_readers(tmp_path):
    from bme_cli.chat import MAX_INPUT_BYTES
    assert Settings().max_input_bytes == MAX_INPUT_BYTES
    assert "# max_input_mb = 2048" in config_template()
