"""Deterministic fakes (embedder, reranker) wire through the real pipeline without model files.

They stand beside the real-model tests, never instead of them: these check the wiring and that the
fakes compute something that depends on the text.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from evalkit.retrieval.fake import HashingEmbedder, OverlapReranker
from tests.test_sweep import run_in_process


def test_the_fake_embedder_is_deterministic_and_puts_the_matching_text_first() -> None:
    embedder = HashingEmbedder()
    passages = ["The rate limiter allows a burst of 20 requests.", "年假为每年十五天。", "Lunch is served at noon."]
    vectors = embedder.embed_batch(passages, "passage")
    assert np.array_equal(vectors, HashingEmbedder().embed_batch(passages, "passage"))
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0)
    for query, best in (("What burst does the rate limiter allow?", 0), ("每年年假多少天？", 1)):
        scores = vectors @ embedder.embed_batch([query], "query")[0]
        assert int(np.argmax(scores)) == best


def test_the_fake_reranker_scores_by_overlap() -> None:
    scores = OverlapReranker().score_pairs("rate limiter burst", ["the rate limiter burst", "lunch at noon", ""])
    assert scores[0] == 1.0 and scores[1] < scores[0] and scores[2] == 0.0


def test_a_hybrid_sweep_with_a_reranker_runs_on_the_fakes(tmp_path: Path, small_demo: Path) -> None:
    run_dir = run_in_process(
        [
            f"labelset.path={small_demo}",
            f"reports_dir={tmp_path}",
            "retriever=hybrid",
            "embedder=fake",
            "reranker=fake",
            "chunk_size=[256]",
            "chunk_overlap=[0]",
            "top_k=[1,5]",
            "progress=false",
            "report=false",
        ]
    )
    summary = pd.read_parquet(run_dir / "summary.parquet")
    assert set(summary["reranker"]) == {"fake"} and len(summary[~summary["off_grid"]]) == 2 * 4
    assert (summary["hit"] > 0).all()  # the fakes rank by text: some gold is found
    lowest = summary[summary["threshold"] == 0.0].set_index("top_k")
    assert lowest.loc[5, "hit"] >= lowest.loc[1, "hit"]
