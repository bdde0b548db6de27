"""bme's settings: every ST-BME setting (spec §8) in snake_case with the same defaults,
plus the endpoints and bme's own additions.

One frozen model (model.py); loading it with flags > BME_* env > TOML file > defaults
(loading.py); the commented config template `bme config init` writes (template.py).
Nothing reads the environment at import time.
"""
from __future__ import annotations

from .loading import config_file_path, default_config_path, load_settings
from .model import (SECTIONS, ChatEndpoint, EmbeddingEndpoint, MemorySettings, RerankEndpoint, Settings,
                    SillyTavernSettings, StorySettings, redacted)
from .template import config_template, write_config_template

__all__ = ["SECTIONS", "ChatEndpoint", "EmbeddingEndpoint", "MemorySettings", "RerankEndpoint", "Settings",
           "SillyTavernSettings", "StorySettings", "config_file_path", "config_template", "default_config_path",
           "load_settings", "redacted", "write_config_template"]
