"""Each thing once per run: the config composed once, the cache opened once, settings read strictly once.

Counted on real things: Hydra's own config loader (every composition goes through it) and
SQLite connections to the run's cache file (every :class:`~evalkit.cache.Cache` opens one).
No evalkit code is replaced; the wrappers only count and call through.
"""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hydra._internal.config_loader_impl import ConfigLoaderImpl

from evalkit.sweep import main
from tests.conftest import REPO

QUICK = [
    "sweep=quick",
    "chunk_size=[256]",
    "chunk_overlap=[0]",
    "top_k=[1,5]",
    "position=off",
    "answer_check=off",
    "report=false",
]


def counting(calls: list[Any], real: Callable[..., Any]) -> Callable[..., Any]:
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        calls.append(args)
        return real(*args, **kwargs)

    return wrapper


def run_main(monkeypatch: pytest.MonkeyPatch, args: list[str]) -> None:
    monkeypatch.setattr(sys, "argv", ["evalkit.sweep", *args])  # main() hands sys.argv to Hydra
    monkeypatch.setenv("HYDRA_FULL_ERROR", "0")  # main() sets it to 1 for Hydra; restored after the test
    main(args)


def test_a_run_composes_its_config_once(tmp_path: Path, small_demo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    loads: list[Any] = []
    monkeypatch.setattr(ConfigLoaderImpl, "load_configuration", counting(loads, ConfigLoaderImpl.load_configuration))
    run_main(monkeypatch, [*QUICK, f"labelset.path={small_demo}", f"reports_dir={tmp_path}", "progress=false"])
    assert len(loads) == 1, f"the config was composed {len(loads)} times"
    assert list(tmp_path.glob("*/summary.csv")), "the sweep ran"


def test_threshold_auto_opens_the_cache_once(tmp_path: Path, small_demo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cache_path = tmp_path / "cache.sqlite"
    opened: list[Any] = []
    real_connect = sqlite3.connect

    def connect(database: Any, *args: Any, **kwargs: Any) -> sqlite3.Connection:
        if Path(str(database)) == cache_path:
            opened.append(database)
        return real_connect(database, *args, **kwargs)

    monkeypatch.setattr(sqlite3, "connect", connect)
    run_main(
        monkeypatch,
        [
            *QUICK,
            "threshold=auto",
            "reranker=fake",
            f"labelset.path={small_demo}",
            f"reports_dir={tmp_path}",
            f"cache_path={cache_path}",
            "progress=false",
        ],
    )
    (summary,) = tmp_path.glob("*/summary.csv")
    assert len(opened) == 1, f"the cache was opened {len(opened)} times"
    assert len(summary.read_text().splitlines()) > 2 * 2, "auto built a grid of several thresholds"


STRICT = [
    (["generator.max_tokens=1.5"], "generator.max_tokens: 1.5 is not a whole number"),
    (["generator.n_threads=1.5"], "generator.n_threads: 1.5 is not a whole number"),
    (["generator.flash_attn=maybe"], "generator.flash_attn: 'maybe' is not true or false"),
    (["generator.top_p=2"], "generator.top_p: 2.0 is above the maximum 1.0"),
    (["generator.n_ctx=null"], "generator.n_ctx: None is not a whole number"),
    (["generator.headroom=-1"], "generator.headroom: -1 is below the minimum 0"),
    (["generator=anthropic", "generator.max_retries=1.5"], "generator.max_retries: 1.5 is not a whole number"),
    (["generator=anthropic", "generator.precount=yes"], "generator.precount: 'yes' is not true or false"),
    (["generator=anthropic", "generator.timeout_s=0"], "generator.timeout_s: 0.0 must be greater than 0.0"),
    (["generator=anthropic", "+generator.n_threads=2"], "generator.n_threads: unknown key"),
    (["generator=fake", "generator.n_words=many"], "generator.n_words: 'many' is not a whole number"),
    (["generator.name=claude"], "generator.name: unknown generator 'claude'"),
    (["+judge=claude", "judge.max_tokens=1.5"], "judge.max_tokens: 1.5 is not a whole number"),
    (["+judge=claude", "judge.metric=vibes"], "judge.metric: unknown judge metric 'vibes'"),
    (["+tracker=mlflow", "tracker.per_config=maybe"], "tracker.per_config: 'maybe' is not true or false"),
    (["reranker=cohere", "reranker.max_retries=1.5"], "reranker.max_retries: 1.5 is not a whole number"),
]


@pytest.mark.parametrize(("args", "says"), STRICT, ids=[" ".join(a) for a, _ in STRICT])
def test_no_setting_is_coerced(tmp_path: Path, args: list[str], says: str) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "evalkit.sweep", f"reports_dir={tmp_path}", "sweep=quick", *args],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=300,
    )
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2, done.stderr
    assert len(lines) == 1 and says in lines[0], lines
    assert not [p for p in tmp_path.iterdir() if p.name != ".hydra"], "a bad setting stops before any work"


@pytest.mark.parametrize(
    ("bad", "says"),
    [("input_per_mtok: 2.00", "input_per_mtok: '2.00'"), ("context_window: 1000000", "context_window: 1000000.5")],
    ids=["a string price", "a fractional window"],
)
def test_a_bad_price_is_one_line_naming_file_and_field(tmp_path: Path, bad: str, says: str) -> None:
    pricing = tmp_path / "pricing"
    pricing.mkdir()
    for source in (REPO / "conf" / "pricing").glob("*.yaml"):
        (pricing / source.name).write_text(source.read_text(encoding="utf-8"), encoding="utf-8")
    anthropic = pricing / "anthropic.yaml"
    text = anthropic.read_text(encoding="utf-8")
    assert bad in text, "the bundled price file changed: pick another line to break"
    anthropic.write_text(text.replace(bad, says, 1), encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-m", "evalkit.sweep", f"reports_dir={tmp_path / 'reports'}", f"cost.pricing_dir={pricing}"],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=300,
    )
    lines = done.stderr.strip().splitlines()
    field = bad.split(":")[0]
    assert done.returncode == 2 and len(lines) == 1, done.stderr
    assert "anthropic.yaml" in lines[0] and field in lines[0], lines[0]
    assert not (tmp_path / "reports").exists() or not [
        p for p in (tmp_path / "reports").iterdir() if p.name != ".hydra"
    ]
