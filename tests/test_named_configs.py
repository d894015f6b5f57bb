"""Every config a run names is checked on every segment, and twins are one config (issue 47, items 1 and 2)."""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pandas as pd
import pytest

from evalkit.pipeline.margins import load_gate_config
from evalkit.pipeline.score import lists_key
from evalkit.pipeline.units import Units
from evalkit.records import Question, Span
from evalkit.scoring import compare
from evalkit.scoring.aggregate import with_twins
from evalkit.scoring.clusters import cluster_map, question_clusters
from evalkit.scoring.decide import RECOMMEND, decide, named_configs
from evalkit.scoring.objective import ObjectiveSettings
from evalkit.scoring.segments import segment_frame
from tests.conftest import REPO

SHARED = REPO.parent / "shared" / "labelsets"
N_PER_SET, N_MULTI_HOP = 300, 60


def _real(name: str, n: int) -> list[Question]:
    """The first ``n`` answerable questions of a shared set, with their real ids and tags."""
    path = SHARED / name / "questions.jsonl"
    if not path.is_file():
        pytest.skip(f"{path} is not here (the shared labelled sets sit beside the checkout)")
    out = []
    with path.open(encoding="utf-8") as lines:
        for line in lines:
            raw = json.loads(line)
            if raw["answerable"]:
                spans = tuple(Span(e["doc_id"], e["start"], e["end"]) for e in raw["evidence"])
                out.append(
                    Question(raw["id"], raw["question"], tuple(raw["answers"]), True, spans, raw["evidence_mode"],
                             raw["tags"])
                )  # fmt: skip
            if len(out) == n:
                break
    return out


def _merged_set() -> list[Question]:
    """English and Chinese questions; the last English ones planted as a multi-hop segment (tags that select the
    same questions: evidence_mode=all, multi_hop=True, hops=2)."""
    en, zh = _real("squad2-en", N_PER_SET), _real("cmrc2018-zh", N_PER_SET)
    planted = [
        replace(q, evidence_mode="all", tags={**q.tags, "multi_hop": True, "hops": "2"}) for q in en[-N_MULTI_HOP:]
    ]
    single = [replace(q, tags={**q.tags, "hops": "1"}) for q in en[:-N_MULTI_HOP] + zh]
    return single + planted


PLAN = {
    # config: (gain on single-hop misses, loss on multi-hop hits, $/query factor, returned tokens)
    "p": (0.0, 0.0, 1.0, 100.0),
    "pick": (0.5, 0.5, 1.0, 100.0),  # wins overall, loses multi-hop: the objective's pick
    "cheap": (0.3, 0.4, 0.5, 100.0),  # passes the gate at half the price: the cheaper pick
    "wide": (0.55, 0.4, 1.0, 160.0),  # wins more, but over production's prompt tokens: a near-miss
    "flat": (0.3, 0.4, 1.0, 100.0),  # passes the gate, less gain than the pick: in the gate-passing set only
}


def _frames(questions: list[Question], seed: int = 1) -> tuple[pd.DataFrame, pd.DataFrame]:
    rng = np.random.default_rng(seed)
    multi = np.array([q.evidence_mode == "all" for q in questions])
    base = (rng.random(len(questions)) < 0.7).astype(float)
    frames = []
    for config_id, (gain, loss, price, tokens) in PLAN.items():
        flip = rng.random(len(questions))
        recall = np.where(~multi & (base == 0) & (flip < gain), 1.0, base)
        recall = np.where(multi & (base == 1) & (flip < loss), 0.0, recall)
        frames.append(pd.DataFrame({
            "config_id": config_id, "question_id": [q.id for q in questions], "answerable": True,
            "recall": recall, "context_precision": recall, "zero_hit": 0.0, "returned_tokens": tokens,
            "question_tokens": 10.0, "top_k": 5, "threshold": 0.0, "chunking": "c", "cost_per_query_usd": 0.01 * price,
        }))  # fmt: skip
    results = pd.concat(frames, ignore_index=True)
    summary = results.groupby("config_id", as_index=False).agg(
        recall=("recall", "mean"), top_k=("top_k", "first"), cost_per_query_usd=("cost_per_query_usd", "mean")
    )
    return results, summary


def test_every_named_configs_segment_loss_is_flagged_once() -> None:
    questions = _merged_set()
    results, summary = _frames(questions)
    # Questions of one document are a cluster (the sweep's default): segment intervals resample documents.
    gate = replace(load_gate_config("default"), clusters=cluster_map(question_clusters(questions)))
    assert gate.resampling.clusters is not None and gate.resampling.clusters.nunique() < len(questions)
    record = decide(results, summary, "p", ObjectiveSettings(), gate, segment_frame(questions))
    assert record["decision"] == RECOMMEND and record["recommended"]["config_id"] == "pick"
    named = named_configs(record)
    assert named["cheap"][0] == "cheaper pick" and "near-miss #1" in named["wide"], named
    assert "gate-passing" in named["flat"], named
    wide = results.pivot(index="question_id", columns="config_id", values="recall")
    rows = [q.id for q in questions if q.evidence_mode == "all"]
    flags = [f for f in record["flags"] if f["kind"] == "worse on a segment"]
    for config_id in named:
        # Recomputed outside the decision: the planted segment's paired recall loss against production.
        c = compare.paired(wide.loc[rows, "p"].to_numpy(), wide.loc[rows, config_id].to_numpy(), gate.resampling,
                           "", np.asarray(rows))  # fmt: skip
        assert c is not None and c.test.startswith("cluster bootstrap"), c
        beyond = c is not None and c.delta_high < 0 and -c.delta > gate.margins[0].amount
        mine = [f for f in flags if f["config_id"] == config_id and "multi_hop=True" in f["message"]]
        assert len(mine) == (1 if beyond else 0), (config_id, c, mine)
        if mine:  # one line for the three tags that select the 60 questions, naming every role
            assert "evidence_mode=all (= hops=2, multi_hop=True)" in mine[0]["message"], mine[0]
            assert f"({N_MULTI_HOP} questions)" in mine[0]["message"]
            assert mine[0]["roles"] == named[config_id]
    assert {f["config_id"] for f in flags} >= {"pick", "cheap", "wide", "flat"}
    assert record["cheaper_pick"]["same_quality"] is False


def _units(spans: list[tuple[str, int, int]]) -> Units:
    return Units(
        tuple(f"u{i}" for i in range(len(spans))),
        np.array([s[0] for s in spans], dtype=object),
        np.array([s[1] for s in spans]),
        np.array([s[2] for s in spans]),
        tuple("" for _ in spans),
    )


def test_lists_key_is_the_same_for_two_chunkings_returning_the_same_spans() -> None:
    """Two chunkings of documents shorter than one chunk: different unit order, the same spans returned."""
    a = _units([("d1", 0, 900), ("d2", 0, 700), ("d3", 0, 500)])
    b = _units([("d3", 0, 500), ("d1", 0, 900), ("d2", 0, 700)])
    returned = np.array([[True, True, False], [True, False, False]])
    tokens = np.array([400.0, 225.0])
    key_a = lists_key(returned, np.array([[0, 1, 2], [2, 0, 1]]), a, tokens)
    key_b = lists_key(returned, np.array([[1, 2, 0], [0, 1, 2]]), b, tokens)
    assert key_a == key_b
    other = lists_key(returned, np.array([[1, 0, 2], [2, 0, 1]]), a, tokens)  # the same units, another order
    assert other != key_a


def test_two_chunkings_with_identical_pools_are_one_config_in_the_tier_near_misses_and_gate_passing_set() -> None:
    questions = _merged_set()
    results, _ = _frames(questions)
    twin = {"pick": "pick-o64", "wide": "wide-o64", "p": "p-o64"}  # overlap 64: the same lists as overlap 0
    copies = results[results["config_id"].isin(list(twin))].assign(config_id=lambda f: f["config_id"].map(twin))
    results = pd.concat([results, copies], ignore_index=True)
    summary = results.groupby("config_id", as_index=False).agg(
        recall=("recall", "mean"), top_k=("top_k", "first"), cost_per_query_usd=("cost_per_query_usd", "mean")
    )
    summary["chunk_overlap"] = [64 if c.endswith("-o64") else 0 for c in summary["config_id"]]
    summary["lists_key"] = summary["config_id"].str.removesuffix("-o64")
    summary = with_twins(summary)
    assert dict(zip(summary["config_id"], summary["same_as"], strict=True))["pick-o64"] == "pick"
    record = decide(results, summary, "p", ObjectiveSettings(), load_gate_config("default"))
    passing = [c["config_id"] for c in record["gate_passing"]["configs"]]
    misses = [m["config_id"] for m in record["near_misses"]]
    tier = [e["config_id"] for e in record["tier"]["configs"]]
    for listed in (passing, misses, tier):
        assert not set(listed) & set(twin.values()), listed
    assert "p-o64" not in passing  # production's own twin is production, not a config the gate accepts
    assert next(c for c in record["gate_passing"]["configs"] if c["config_id"] == "wide")["twins"] == ["wide-o64"]
    assert record["tier"]["grid_points"] == len(summary) and len(tier) == len(summary) - len(twin)
    entry = next(e for e in record["tier"]["configs"] if e["config_id"] == "p")
    assert entry["twins"] == ["p-o64"]
    assert record["recommended"]["config_id"] == "pick" and misses[0] == "wide"


def test_named_configs_are_every_role_the_run_prints_production_and_unswept_moves_excepted() -> None:
    """The pick, the cheaper pick, each swept one-knob move (whether or not it beats production), the near-misses,
    the gate-passing set and the tier's cheapest; a config named twice is checked once, with both roles."""
    record = {
        "production": {"config_id": "p"},
        "recommended": {"config_id": "a"},
        "cheaper_pick": {"config_id": "b"},
        "one_knob_moves": [
            {"knob": "top_k", "swept": True, "beats_production": False, "config_id": "c"},
            {"knob": "chunk_size", "swept": False, "config_id": None},
            {"knob": "threshold", "swept": True, "beats_production": True, "config_id": "p"},
        ],
        "near_misses": [{"config_id": "d"}, {"config_id": "a"}],
        "gate_passing": {"configs": [{"config_id": "b"}, {"config_id": "e"}]},
        "tier": {"cheapest": "f"},
    }
    assert named_configs(record) == {
        "a": ["recommended", "near-miss #2"],
        "b": ["cheaper pick", "gate-passing"],
        "c": ["top_k move"],
        "d": ["near-miss #1"],
        "e": ["gate-passing"],
        "f": ["tier's cheapest"],
    }
