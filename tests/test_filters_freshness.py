"""Metadata filters before retrieval, leakage counts, and re-embedding only what changed."""

from __future__ import annotations

import datetime as dt
import json
import shutil
from pathlib import Path

import numpy as np
import pandas as pd

from evalkit.chunking.chunkers import chunk_corpus
from evalkit.labels.read import load_labelset
from evalkit.records import ChunkingSpec
from evalkit.retrieval.filters import FilterSettings, access, in_effect, visible_to
from tests.test_sweep import run_in_process


def test_version_in_effect_and_acl_rules() -> None:
    v3_start = {"v3": dt.date(2025, 7, 1)}
    v2 = {"effective_date": "2024-01-01", "expires": "2025-06-30", "superseded_by": "v3"}
    assert in_effect(v2, dt.date(2025, 3, 1), v3_start)
    assert not in_effect(v2, dt.date(2026, 1, 15), v3_start)
    assert not in_effect({"effective_date": "2025-07-01"}, dt.date(2025, 6, 30), {})
    assert visible_to({"acl": ["all"]}, None) and visible_to({}, "employee")
    assert visible_to({"acl": ["hr"]}, "hr") and not visible_to({"acl": ["hr"]}, "employee")
    assert not visible_to({"acl": ["security", "exec"]}, None)


def test_a_mask_per_role_and_date_reads_like_the_whole_questions_x_units_mask() -> None:
    labelset = load_labelset(Path(__file__).resolve().parents[1] / "labelsets" / "demo")
    chunks = list(chunk_corpus(labelset.documents, ChunkingSpec("recursive", 256, 0)))
    doc_ids = np.array([c.doc_id for c in chunks], dtype=object)
    found = access(labelset.questions, doc_ids, labelset.documents, FilterSettings(enabled=True))
    assert 1 < len(found.visible.kinds) < len(labelset.questions), "the demo's questions have a few roles and dates"
    whole = {name: getattr(found, name).dense() for name in ("visible", "current", "allowed")}
    assert whole["visible"].shape == (len(labelset.questions), len(chunks)) and not whole["allowed"].all()
    np.testing.assert_array_equal(whole["allowed"], whole["visible"] & whole["current"])
    ranks = np.random.default_rng(0).integers(0, len(chunks), (len(labelset.questions), 7))
    for name, mask in whole.items():
        unit_mask = getattr(found, name)
        np.testing.assert_array_equal(unit_mask[10:40], mask[10:40])
        np.testing.assert_array_equal(unit_mask[3, ranks[3]], mask[3, ranks[3]])
        np.testing.assert_array_equal(unit_mask.at_ranks(ranks), np.take_along_axis(mask, ranks, axis=1))


def test_demo_leakage_is_zero_with_filters_and_counted_without(tmp_path: Path) -> None:
    common = [
        "retriever=bm25",
        "sweep=quick",
        "threshold=0",
        "progress=false",
        "report=false",
        f"reports_dir={tmp_path}",
    ]
    on_run = run_in_process([*common, "filters.enabled=true"])
    on = pd.read_csv(on_run / "summary.csv")
    off = pd.read_csv(run_in_process([*common, "filters.enabled=false"]) / "summary.csv")
    assert on["leaked_units"].sum() == 0 and on["outdated_units"].sum() == 0
    assert off["leaked_units"].sum() > 0, "the demo set has questions a restricted document would answer"
    assert off["outdated_units"].sum() > 0, "and questions the outdated policy version would answer"
    # Per question too: with filters on, no question got a restricted or outdated chunk.
    results = pd.read_parquet(on_run / "results.parquet")
    assert (results["leaked_units"] == 0).all() and (results["outdated_units"] == 0).all()


def test_changing_some_documents_reembeds_only_their_chunks(tmp_path: Path, small_demo: Path) -> None:
    corpus = tmp_path / "set"
    shutil.copytree(small_demo, corpus)
    reports = tmp_path / "reports"
    args = [
        f"labelset.path={corpus}",
        "retriever=dense",
        "embedder=usem3",
        "sweep=quick",
        "progress=false",
        "report=false",
        f"reports_dir={reports}",
    ]
    first = run_in_process(args)
    spec = ChunkingSpec("recursive", 512, 64)
    before = {c.embed_text for c in chunk_corpus(load_labelset(corpus).documents, spec)}

    docs = [json.loads(line) for line in (corpus / "docs.jsonl").read_text(encoding="utf-8").splitlines()]
    changed = docs[0]  # one of 12 documents: about 8% of the corpus
    path = corpus / changed["path"]
    path.write_text(path.read_text(encoding="utf-8") + "\nAppendix: reviewed again in 2026.\n", encoding="utf-8")

    second = run_in_process(args)
    assert second != first, "a changed corpus is a new plan, so a new run"
    freshness = json.loads((second / "freshness.json").read_text(encoding="utf-8"))
    assert freshness["dirty"] == [changed["doc_id"]] and freshness["previous_run"] == first.name
    after = {c.embed_text for c in chunk_corpus(load_labelset(corpus).documents, spec)}
    stats = json.loads((second / "run_stats.json").read_text(encoding="utf-8"))
    assert sum(stats["texts_embedded"].values()) == len(after - before) > 0
