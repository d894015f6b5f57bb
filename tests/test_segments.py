"""A pick that wins overall but loses on one language is flagged; segment figures recompute from the results."""

from __future__ import annotations

import numpy as np
import pandas as pd

from evalkit.pipeline.margins import load_gate_config
from evalkit.records import Question
from evalkit.scoring import stats
from evalkit.scoring.decide import RECOMMEND, decide
from evalkit.scoring.objective import ObjectiveSettings
from evalkit.scoring.segments import MIN_QUESTIONS, segment_frame


def _questions(n_en: int, n_zh: int) -> list[Question]:
    langs = ["en"] * n_en + ["zh"] * n_zh
    return [
        Question(
            id=f"q{i}", question=f"question {i}", answers=("a",), answerable=True, evidence=(), evidence_mode="any",
            tags={"lang": lang, "role": "user"},
        )
        for i, lang in enumerate(langs)
    ]  # fmt: skip


def _results(questions: list[Question], seed: int = 0) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Production 'p' and a pick 'c': c finds 60% more of en's misses and loses 30% of zh's hits."""
    rng = np.random.default_rng(seed)
    base = (rng.random(len(questions)) < 0.6).astype(float)
    zh = np.array([q.tags["lang"] == "zh" for q in questions])
    flip = rng.random(len(questions))
    cand = np.where(~zh & (base == 0) & (flip < 0.6), 1.0, base)
    cand = np.where(zh & (base == 1) & (flip < 0.3), 0.0, cand)
    frames = []
    for config_id, recall in (("p", base), ("c", cand)):
        frames.append(pd.DataFrame({
            "config_id": config_id, "question_id": [q.id for q in questions], "answerable": True,
            "recall": recall, "context_precision": recall, "zero_hit": 0.0, "returned_tokens": 100.0,
            "question_tokens": 10.0, "top_k": 5, "threshold": 0.0, "chunking": "c", "cost_per_query_usd": 0.01,
        }))  # fmt: skip
    results = pd.concat(frames, ignore_index=True)
    summary = results.groupby("config_id", as_index=False).agg(
        recall=("recall", "mean"), top_k=("top_k", "first"), cost_per_query_usd=("cost_per_query_usd", "mean")
    )
    return results, summary


def test_a_pick_that_loses_on_one_language_is_flagged() -> None:
    questions = _questions(n_en=500, n_zh=200)
    results, summary = _results(questions)
    record = decide(results, summary, "p", ObjectiveSettings(), load_gate_config("default"), segment_frame(questions))
    assert record["decision"] == RECOMMEND and record["recommended"]["config_id"] == "c"
    flagged = [f for f in record["flags"] if f["kind"] == "worse on a segment"]
    assert len(flagged) == 1 and "lang=zh" in flagged[0]["message"], record["flags"]
    zh = next(s for s in record["segments"] if s["tag"] == "lang" and s["value"] == "zh")
    rows = results.pivot(index="question_id", columns="config_id", values="recall").loc[
        [q.id for q in questions if q.tags["lang"] == "zh"]
    ]
    gate = load_gate_config("default")
    expected = stats.paired_bootstrap(
        rows["p"].to_numpy(), rows["c"].to_numpy(), level=gate.confidence, n_resamples=gate.n_resamples,
        seed=gate.seed,
    )  # fmt: skip
    assert zh["n"] == 200 and np.isclose(zh["delta"], expected.delta) and np.isclose(zh["high"], expected.delta_high)
    en = next(s for s in record["segments"] if s["tag"] == "lang" and s["value"] == "en")
    assert en["low"] > 0 and not en["worse"]


def test_small_segments_are_not_checked_and_an_even_pick_raises_no_flag() -> None:
    questions = _questions(n_en=400, n_zh=MIN_QUESTIONS - 1)
    results, summary = _results(questions)
    record = decide(results, summary, "p", ObjectiveSettings(), load_gate_config("default"), segment_frame(questions))
    assert not any(s["value"] == "zh" for s in record["segments"])
    assert not record["flags"]


def test_a_multi_hop_loss_beyond_the_margin_is_flagged_whatever_the_primary_measure() -> None:
    """The pick wins overall (context precision, and recall too) but loses recall on multi-hop questions:
    with the objective on context precision the recall loss is still checked and flagged (issue 37)."""
    from dataclasses import replace

    questions = [
        Question(id=f"q{i}", question=f"question {i}", answers=("a",), answerable=True, evidence=(),
                 evidence_mode="all" if i < 60 else "any", tags={"lang": "en"})
        for i in range(600)
    ]  # fmt: skip
    rng = np.random.default_rng(3)
    multi = np.array([q.evidence_mode == "all" for q in questions])
    base = (rng.random(600) < 0.7).astype(float)
    draw = rng.random(600)
    recall = np.where(multi & (base == 1) & (draw < 0.4), 0.0, base)  # multi-hop: loses 40% of its hits
    recall = np.where(~multi & (base == 0) & (draw < 0.3), 1.0, recall)  # single-hop: finds 30% of its misses
    precision_base = rng.random(600) * 0.5
    frames = [
        pd.DataFrame({"config_id": cid, "question_id": [q.id for q in questions], "answerable": True,
                      "recall": r, "context_precision": cp, "zero_hit": 0.0, "returned_tokens": 100.0,
                      "question_tokens": 10.0, "top_k": 5, "threshold": 0.0, "chunking": "c",
                      "cost_per_query_usd": 0.01})
        for cid, r, cp in (("p", base, precision_base), ("c", recall, precision_base + 0.3))
    ]  # fmt: skip
    results = pd.concat(frames, ignore_index=True)
    summary = results.groupby("config_id", as_index=False).agg(
        recall=("recall", "mean"), context_precision=("context_precision", "mean"), top_k=("top_k", "first"),
        cost_per_query_usd=("cost_per_query_usd", "mean"),
    )  # fmt: skip
    gate = load_gate_config("default")
    gate = replace(gate, margins=tuple(m for m in gate.margins if m.metric in ("context_precision", "recall")))
    objective = ObjectiveSettings(primary="context_precision")
    frame = segment_frame(questions)
    assert list(frame.columns) == ["evidence_mode"], "a tag with one value over the set is not a segment"
    record = decide(results, summary, "p", objective, gate, frame)
    segments = [s for s in record["segments"] if s["value"] == "all" and s["measure"] == "recall" and s["worse"]]
    assert segments and all(s["config_id"] == "c" for s in segments), record["segments"]
    flagged = [f for f in record["flags"] if f["kind"] == "worse on a segment" and "evidence_mode=all" in f["message"]]
    assert flagged and "recall@k" in flagged[0]["message"]
