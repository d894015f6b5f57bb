"""A cache that is not an evalkit cache heals: moved aside with one warning, rebuilt, the same results.

Real SQLite files broken the ways a disk, a copy or a user breaks them; the sweep runs for real on them.
"""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pandas as pd
import pytest

from evalkit.cache import Cache, CacheUnusableError, encode_json, encode_vector
from tests.test_sweep import REPO, SMALL

QUIET = [*SMALL, "retriever=hybrid", "embedder=fake"]


def _filled(path: Path) -> Path:
    with Cache(path) as cache:
        cache.put_many("x", {f"k{i}": encode_json("v" * 200) for i in range(3000)})
    return path


def _random_bytes(path: Path) -> None:
    path.write_bytes(os.urandom(40_000))


def _truncated(path: Path) -> None:
    data = _filled(path).read_bytes()
    path.write_bytes(data[: len(data) // 2])


def _other_schema(path: Path) -> None:
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE entries (id INTEGER PRIMARY KEY, payload TEXT)")


BROKEN: dict[str, Callable[[Path], None]] = {
    "random bytes": _random_bytes,
    "truncated": _truncated,
    "another schema": _other_schema,
}


@pytest.mark.parametrize("kind", sorted(BROKEN))
def test_a_broken_cache_file_is_moved_aside_and_a_new_one_works(
    tmp_path: Path, kind: str, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "cache.sqlite"
    BROKEN[kind](path)
    before = path.read_bytes()
    with Cache(path) as cache:
        cache.put("n", "k", b"1")
        assert cache.get("n", "k") == b"1"
    (warning,) = capsys.readouterr().err.strip().splitlines()
    (aside,) = tmp_path.glob("cache.sqlite.corrupt-*[0-9]")
    assert str(path) in warning and str(aside) in warning and "not a valid evalkit cache" in warning
    assert aside.read_bytes() == before, "the broken file is kept, untouched, beside the new one"
    with Cache(path) as again:  # the rebuilt cache opens without a word
        assert again.get("n", "k") == b"1"
    assert capsys.readouterr().err == ""


def test_values_that_do_not_decode_are_dropped_and_recomputed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with Cache(tmp_path / "c.sqlite") as cache:
        cache.put_many("tokens", {"good": encode_json(["a", "b"]), "bad": b"\xff\xfe not json", "odd": b"7"})
        decode = lambda blob: [str(t) for t in __import__("json").loads(blob.decode("utf-8"))]  # noqa: E731
        got = cache.get_decoded("tokens", ["good", "bad", "odd", "absent"], decode)
        assert got == {"good": ["a", "b"]}
        assert cache.get("tokens", "bad") is None, "dropped, so the next put stores a fresh value"
        cache.put("tokens", "bad", encode_json(["c"]))
        assert cache.get_decoded("tokens", ["bad"], decode) == {"bad": ["c"]}
    (warning,) = capsys.readouterr().err.strip().splitlines()
    assert "2 cached tokens value(s)" in warning


def test_a_directory_or_device_as_cache_path_is_one_clear_error(tmp_path: Path) -> None:
    with pytest.raises(CacheUnusableError, match="is a directory"):
        Cache(tmp_path)
    with pytest.raises(CacheUnusableError, match="not a regular file"):
        Cache("/dev/null")
    (tmp_path / "file").write_text("x")
    with pytest.raises(CacheUnusableError, match="is not a directory"):
        Cache(tmp_path / "file" / "cache.sqlite")


def _sweep(tmp_path: Path, labelset: Path, cache: Path, reports: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "evalkit.sweep", *QUIET, f"labelset.path={labelset}"]
    command += [f"cache_path={cache}", f"reports_dir={tmp_path / reports}", "run_id=r"]
    return subprocess.run(command, cwd=REPO, capture_output=True, text=True)


def test_a_sweep_on_a_corrupt_cache_warns_once_and_gives_the_clean_results(tmp_path: Path, small_demo: Path) -> None:
    clean = _sweep(tmp_path, small_demo, tmp_path / "clean.sqlite", "clean")
    assert clean.returncode == 0, clean.stderr
    broken = tmp_path / "broken.sqlite"
    _truncated(broken)
    healed = _sweep(tmp_path, small_demo, broken, "healed")
    assert healed.returncode == 0, healed.stderr
    assert [line for line in healed.stderr.splitlines() if "warning" in line and "cache" in line], healed.stderr
    assert "Traceback" not in healed.stderr
    for name in ("results.parquet", "summary.parquet"):
        pd.testing.assert_frame_equal(
            pd.read_parquet(tmp_path / "clean" / "r" / name), pd.read_parquet(tmp_path / "healed" / "r" / name)
        )


def test_corrupt_vectors_in_a_healthy_cache_are_recomputed_to_the_same_results(
    tmp_path: Path, small_demo: Path
) -> None:
    cache_path = tmp_path / "c.sqlite"
    first = _sweep(tmp_path, small_demo, cache_path, "first")
    assert first.returncode == 0, first.stderr
    with sqlite3.connect(cache_path) as db:  # every other vector cut short, as a bad copy would
        keys = [row[0] for row in db.execute("SELECT key FROM entries WHERE namespace LIKE 'embed%'")]
        assert keys, "the hybrid sweep stored vectors"
        db.executemany(
            "UPDATE entries SET value = ? WHERE key = ?", [(encode_vector([0.5, 0.5, 0.5]), k) for k in keys[::2]]
        )
    second = _sweep(tmp_path, small_demo, cache_path, "second")
    assert second.returncode == 0, second.stderr
    assert "did not decode" in second.stderr
    pd.testing.assert_frame_equal(
        pd.read_parquet(tmp_path / "first" / "r" / "results.parquet"),
        pd.read_parquet(tmp_path / "second" / "r" / "results.parquet"),
    )


def test_a_cache_path_that_is_a_directory_stops_the_sweep_with_one_line(tmp_path: Path, small_demo: Path) -> None:
    done = _sweep(tmp_path, small_demo, tmp_path, "out")
    assert done.returncode == 2, done.stderr
    errors = [line for line in done.stderr.splitlines() if "error" in line]
    assert len(errors) == 1 and "is a directory" in errors[0] and "Traceback" not in done.stderr


def _truncate(path: Path) -> None:
    data = path.read_bytes()
    path.unlink()  # a new file, not the run folder's hard link to the old one, as a bad restore would leave
    path.write_bytes(data[:64])


# score: its rows table is what a re-run reads. retrieve: read when a score unit is missing (a new
# threshold, a lost file), so that one is removed too.
@pytest.mark.parametrize(("stage", "pattern"), [("score", "*.rows.parquet"), ("retrieve", "*.npz")])
def test_a_truncated_unit_file_is_recomputed_to_the_same_results(
    tmp_path: Path, small_demo: Path, stage: str, pattern: str
) -> None:
    cache_path = tmp_path / "c.sqlite"
    first = _sweep(tmp_path, small_demo, cache_path, "reports")
    assert first.returncode == 0, first.stderr
    run, units = tmp_path / "reports" / "r", tmp_path / "reports" / ".units"
    clean = {name: pd.read_parquet(run / name) for name in ("results.parquet", "summary.parquet")}
    for victim in sorted((units / stage).glob(pattern)):
        _truncate(victim)
    if stage == "retrieve":
        for record in (units / "score").glob("*.json"):
            record.unlink()
    second = _sweep(tmp_path, small_demo, cache_path, "reports")
    assert second.returncode == 0, second.stderr
    assert f"the stored {stage} unit" in second.stderr and "Traceback" not in second.stderr
    for name, frame in clean.items():
        pd.testing.assert_frame_equal(frame, pd.read_parquet(run / name))
