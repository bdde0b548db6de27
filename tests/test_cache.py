"""The on-disk response cache."""
from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from bme_cli.errors import StoreError
from bme_cli.providers.cache import ResponseCache, cache_key, default_cache_dir


def test_put_then_get_round_trips_text_including_unicode(tmp_path):
    cache = ResponseCache(tmp_path / "c")
    key = cache_key(model="m", user="hi")
    assert cache.get(key) is None
    cache.put(key, '{"名字": "小明"}')
    assert cache.get(key) == '{"名字": "小明"}'
    cache.put(key, "second")
    assert cache.get(key) == "second"


def test_entries_are_private_sharded_and_leave_no_temp_files(tmp_path):
    cache = ResponseCache(tmp_path / "c")
    key = cache_key(a=1)
    cache.put(key, "x")
    path = tmp_path / "c" / key[:2] / f"{key}.json"
    assert path.is_file()
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE((tmp_path / "c").stat().st_mode) == 0o700
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert [p.name for p in path.parent.iterdir()] == [path.name]


def test_cache_key_is_stable_and_sensitive_to_every_part():
    base = dict(base_url="http://a/v1", model="m", messages=[{"role": "user", "content": "x"}], temperature=0.2)
    assert cache_key(**base) == cache_key(**dict(reversed(list(base.items()))))
    assert len(cache_key(**base)) == 64
    for change in ({"model": "n"}, {"temperature": 0.3}, {"base_url": "http://b/v1"},
                   {"messages": [{"role": "user", "content": "y"}]}):
        assert cache_key(**{**base, **change}) != cache_key(**base)


def test_stats_and_clear(tmp_path):
    cache = ResponseCache(tmp_path / "c")
    assert cache.stats() == (0, 0) and cache.clear() == 0
    for i in range(5):
        cache.put(cache_key(i=i), "y" * 100)
    entries, size = cache.stats()
    assert entries == 5 and size > 500
    assert cache.clear() == 5
    assert cache.stats() == (0, 0) and cache.get(cache_key(i=0)) is None
    assert list((tmp_path / "c").iterdir()) == []


def test_a_corrupt_entry_is_a_miss_and_can_be_overwritten(tmp_path):
    cache = ResponseCache(tmp_path / "c")
    key = cache_key(z=1)
    cache.put(key, "ok")
    (tmp_path / "c" / key[:2] / f"{key}.json").write_text("{not json")
    assert cache.get(key) is None
    cache.put(key, "again")
    assert cache.get(key) == "again"


def test_keys_that_could_escape_the_folder_are_refused(tmp_path):
    cache = ResponseCache(tmp_path / "c")
    with pytest.raises(ValueError):
        cache.put("../../etc/passwd", "x")
    with pytest.raises(ValueError):
        cache.get("ab")


@pytest.mark.skipif(os.geteuid() == 0, reason="root ignores folder permissions")
def test_unwritable_cache_is_a_store_error(tmp_path):
    folder = tmp_path / "ro"
    folder.mkdir(mode=0o500)
    with pytest.raises(StoreError, match="--no-cache"):
        ResponseCache(folder / "c").put(cache_key(a=1), "x")


def test_unwritable_cache_path_is_a_store_error_even_as_root(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    with pytest.raises(StoreError, match="cannot write the response cache"):
        ResponseCache(blocker / "c").put(cache_key(a=1), "x")


def test_default_cache_dir_follows_xdg_then_home():
    assert default_cache_dir({"XDG_CACHE_HOME": "/x"}) == Path("/x/bme")
    assert default_cache_dir({"HOME": "/home/u"}) == Path("/home/u/.cache/bme")


def test_default_cache_dir_reads_the_environment_when_called(tmp_path):
    assert default_cache_dir() == tmp_path / "xdg-cache" / "bme"     # set by the autouse fixture


def test_a_reply_holding_a_lone_surrogate_is_stored_and_read_back(tmp_path: Path) -> None:
    # json.loads of a server's "\ud83d" gives a str UTF-8 cannot encode: it was a traceback
    cache = ResponseCache(tmp_path / "c")
    key = cache_key(model="m", prompt="half an emoji \ud83d")
    cache.put(key, "cut emoji \ud83d here")
    assert cache.get(key) == "cut emoji \ud83d here"
