"""Adding a built-in backend is its module and one line of its kind's registration table (#48 acceptance).

A copy of evalkit gets a toy embedder and a toy reranker, each as a new module plus one line in its table
(and a ``conf/`` file, which is not code); then a real sweep, in a fresh process on the copy, retrieves with
the toy embedder and reranks with the toy reranker. Exactly two code files differ from evalkit per backend: if
a third (a name set, a factory, a second table) were needed, the sweep would fail or the count would say so.
"""

from __future__ import annotations

import filecmp
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd

from tests.conftest import REPO

TOY_EMBEDDER = '''
import numpy as np

from evalkit.retrieval.embedding.base import Embedder


class ToyEmbedder(Embedder):
    """Letter counts, normalised: a model with no settings of its own."""

    model_id, version, dim = "toy-letters", "1", 26

    def embed_batch(self, texts, kind):
        counts = np.array([[text.lower().count(chr(97 + i)) + 1.0 for i in range(26)] for text in texts])
        return (counts / np.linalg.norm(counts, axis=1, keepdims=True)).astype(np.float32)
'''
TOY_RERANKER = '''
import numpy as np

from evalkit.retrieval.rerank.base import Reranker


class ToyReranker(Reranker):
    """The share of the query's words the document holds."""

    model_id, version = "toy-overlap", "1"

    def score_pairs(self, query, documents, counter=None):
        words = set(query.lower().split())
        return np.array([len(words & set(d.lower().split())) / max(len(words), 1) for d in documents])
'''


def _add_line(path: Path, anchor: str, line: str) -> None:
    """One line into a registration table, right after ``anchor`` (the table's opening)."""
    text = path.read_text(encoding="utf-8")
    assert text.count(anchor) == 1, f"{path.name}: the table's opening {anchor!r} moved"
    path.write_text(text.replace(anchor, f"{anchor}\n        {line}"), encoding="utf-8")


def _changed_code(original: Path, copy: Path) -> list[str]:
    """The .py files of ``copy`` that are new or differ from ``original``'s."""
    changed = []
    for path in sorted(copy.rglob("*.py")):
        before = original / path.relative_to(copy)
        if not before.is_file() or not filecmp.cmp(before, path, shallow=False):
            changed.append(path.relative_to(copy).as_posix())
    return changed


def test_a_toy_embedder_and_a_toy_reranker_each_take_two_code_files(tmp_path: Path, small_demo: Path) -> None:
    root = tmp_path / "checkout"
    ignore = shutil.ignore_patterns("__pycache__")
    shutil.copytree(REPO / "evalkit", root / "evalkit", ignore=ignore)
    shutil.copytree(REPO / "conf", root / "conf", ignore=ignore)
    package = root / "evalkit"

    (package / "retrieval/embedding/toy.py").write_text(TOY_EMBEDDER, encoding="utf-8")
    _add_line(
        package / "retrieval/embedding/settings.py",
        '"embedder",\n    {',
        '"toy": EmbedderBackend("evalkit.retrieval.embedding.toy:ToyEmbedder.from_settings"),',
    )
    (root / "conf/embedder/toy.yaml").write_text("name: toy\n", encoding="utf-8")
    embedder_files = _changed_code(REPO / "evalkit", package)

    (package / "retrieval/rerank/toy.py").write_text(TOY_RERANKER, encoding="utf-8")
    _add_line(
        package / "retrieval/settings.py",
        '"reranker",\n    {',
        '"toy": RerankerBackend("evalkit.retrieval.rerank.toy:ToyReranker.from_settings"),',
    )
    (root / "conf/reranker/toy.yaml").write_text("name: toy\nthresholds: [0.0, 0.5]\n", encoding="utf-8")
    both = _changed_code(REPO / "evalkit", package)

    assert embedder_files == ["retrieval/embedding/settings.py", "retrieval/embedding/toy.py"]
    assert [f for f in both if f not in embedder_files] == ["retrieval/rerank/toy.py", "retrieval/settings.py"]

    overrides = [
        f"labelset.path={small_demo}", f"reports_dir={tmp_path / 'reports'}", "run_id=toy", "retriever=dense",
        "embedder=toy", "reranker=toy", "chunk_size=[256]", "chunk_overlap=[0]", "top_k=[1,3]", "progress=false",
        "report=false", "position=off", "answer_check=off", f"cache_path={tmp_path / 'cache.sqlite'}",
    ]  # fmt: skip
    env = {**os.environ, "PYTHONPATH": str(root)}
    done = subprocess.run(
        [sys.executable, "-m", "evalkit.sweep", *overrides], cwd=tmp_path, env=env, capture_output=True, text=True,
        timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    run_dir = tmp_path / "reports" / "toy"
    config = json.loads((run_dir / "manifest.json").read_text(encoding="utf-8"))["config"]
    assert (config["embedder"]["name"], config["reranker"]["name"]) == ("toy", "toy")
    summary = pd.read_csv(run_dir / "summary.csv")
    assert sorted(summary["threshold"].unique()) == [0.0, 0.5]  # the toy reranker's own threshold grid
    assert summary["hit"].between(0, 1).all() and summary["hit"].max() > 0  # it retrieved and reranked something
