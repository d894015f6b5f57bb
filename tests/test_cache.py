"""The content-addressed SQLite cache, on a real file."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from evalkit.cache import CACHE_VERSION, Cache, cache_key, decode_vector, encode_vector


def test_key_ignores_dict_order_but_not_content() -> None:
    assert cache_key("m", {"a": 1, "b": 2}) == cache_key("m", {"b": 2, "a": 1})
    assert cache_key("m", "text") != cache_key("m", "text ")
    assert cache_key("m", "text") != cache_key("m2", "text")


def test_values_survive_reopening(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite"
    vector = np.array([0.25, -1.5, 3.0], dtype=np.float32)
    with Cache(path) as cache:
        cache.put_many("embed", {"k1": encode_vector(vector)})
        cache.put("embed", "k1", b"ignored: first value wins")
    with Cache(path) as cache:
        assert np.array_equal(decode_vector(cache.get("embed", "k1")), vector)
        assert cache.get("other", "k1") is None
        assert cache.count("embed") == 1


def test_many_keys_in_one_lookup(tmp_path: Path) -> None:
    with Cache(tmp_path / "c.sqlite") as cache:
        cache.put_many("ns", {f"k{i}": str(i).encode() for i in range(2500)})
        found = cache.get_many("ns", [f"k{i}" for i in range(3000)])
        assert len(found) == 2500 and found["k2499"] == b"2499"
        assert cache.stats.hits["ns"] == 2500 and cache.stats.misses["ns"] == 500


def test_cache_version_is_part_of_every_key(monkeypatch) -> None:
    import evalkit.cache

    before = cache_key("m", "text")
    monkeypatch.setattr(evalkit.cache, "CACHE_VERSION", CACHE_VERSION + "-next")
    assert cache_key("m", "text") != before
