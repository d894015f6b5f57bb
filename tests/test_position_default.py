"""The default sweep's position experiment: wiring with generator=fake, the pure pieces worked by hand,
and one short run of the real 0.5B local model (2 questions)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from hydra import compose, initialize_config_dir

from evalkit.answers.blocks import ContextItem
from evalkit.answers.context import Budget, assemble, parse_placement
from evalkit.answers.position.placing import block_bucket, char_bucket, place_gold
from evalkit.answers.position.settings import PositionSettings, SubsetSpec
from evalkit.answers.position.sizing import candidate_order, fit_budget, planned_seconds
from evalkit.records import Question
from evalkit.scoring.position_effects import NOT_DETECTABLE, paired_effect
from evalkit.sweep import sweep
from tests.conftest import REPO

ONE_CHUNKING = ["chunk_size=[512]", "chunk_overlap=[64]", "top_k=[5,10]", "progress=false", "report=false"]


def run(overrides: list[str]) -> Path:
    """A sweep in process; the answer check off (it has its own tests) unless asked for."""
    if not any(o.startswith("answer_check") for o in overrides):
        overrides = [*overrides, "answer_check=off"]
    with initialize_config_dir(version_base="1.3", config_dir=str(REPO / "conf")):
        return sweep(compose(config_name="config", overrides=overrides))


@pytest.fixture(scope="module")
def fake_run(tmp_path_factory: pytest.TempPathFactory, small_demo: Path) -> Path:
    root = tmp_path_factory.mktemp("position-default")
    return run([*ONE_CHUNKING, f"labelset.path={small_demo}", f"reports_dir={root}", "generator=fake"])


def test_default_sweep_runs_the_smoke_experiment(fake_run: Path) -> None:
    out = fake_run / "position"
    status = json.loads((out / "status.json").read_text())
    assert status["state"] == "ran" and status["ran"]
    summary = pd.read_parquet(out / "summary.parquet")
    blocks = pd.read_parquet(out / "summary_blocks.parquet")
    assert set(summary["bucket_by"]) == {"chars"} and set(blocks["bucket_by"]) == {"blocks"}
    assert {"gold_at:head", "gold_at:mid", "gold_at:tail"} <= set(summary["placement"])
    assert set(summary["arm"]) == {"retrieve-5", "closed-book"}, "smoke: retrieve-5 placed, and the control"
    effects = json.loads((out / "effects.json").read_text())
    assert {e["candidate"] for e in effects["effects"]} == {"gold_at:head", "gold_at:tail"}
    assert all(e["baseline"] == "gold_at:mid" for e in effects["effects"])
    assert effects["arms"] and effects["landed"]
    plan = json.loads((out / "plan.json").read_text())
    assert plan["chunking"] == "recursive-s512-o64", "the baseline chunking's pool"
    assert plan["preset"] == "smoke" and plan["repeats"] == 1 and plan["clean"]
    rows = pd.read_parquet(out / "rows.parquet")
    assert (rows["repeat"] == 0).all(), "one shuffle per placement"
    assert set(rows["question_id"]) == set(rows.loc[rows["arm"] == "closed-book", "question_id"]), "a control each"


def test_controlled_placements_record_where_the_gold_landed(fake_run: Path) -> None:
    rows = pd.read_parquet(fake_run / "position" / "rows.parquet")
    controlled = rows[rows["placement"].str.startswith("gold_at:")]
    assert not controlled.empty
    for row in controlled.itertuples():
        target = row.placement.split(":")[1]
        if row.n_items == 1:
            assert row.gold_block_bucket == "only" and row.gold_bucket == "only"
        elif row.n_items >= 3:
            assert row.gold_block_bucket == target, row
    # Paired: head, mid and tail of one (question, repeat) hold the same items.
    for _, group in controlled.groupby(["question_id", "repeat"]):
        assert group["n_items"].nunique() == 1 and group["seed"].nunique() == 1
    closed = rows[rows["arm"] == "closed-book"]
    assert (closed["n_items"] == 0).all() and (closed["gold_bucket"] == "none").all() and closed["sent"].all()


def test_position_off_writes_why_and_the_command(tmp_path: Path, small_demo: Path) -> None:
    run_dir = run(
        [*ONE_CHUNKING, f"labelset.path={small_demo}", f"reports_dir={tmp_path}", "position=off", "answer_check=off"]
    )
    status = json.loads((run_dir / "position" / "status.json").read_text())
    assert status["state"] == "off" and not status["ran"] and "python -m evalkit.sweep" in status["command"]
    assert not (run_dir / "position" / "rows.parquet").exists()


# --------------------------------------------------------------------------- pure pieces by hand


def test_block_buckets_by_hand() -> None:
    assert [block_bucket(i, 5) for i in range(5)] == ["head", "head", "mid", "tail", "tail"]
    assert [block_bucket(i, 2) for i in range(2)] == ["head", "tail"]
    assert [block_bucket(i, 3) for i in range(3)] == ["head", "mid", "tail"]
    assert [block_bucket(i, 4) for i in range(4)] == ["head", "mid", "mid", "tail"]
    assert block_bucket(0, 1) == "only" and block_bucket(None, 4) == "none"


def _items(n: int) -> list[ContextItem]:
    return [
        ContextItem(f"u{i}", f"d{i}", 0, 40, f"text {i} " * 5, score=float(n - i), is_gold=i == 1, title="")
        for i in range(n)
    ]


def _assembled(items: list[ContextItem], placement: str, seed: int) -> Any:
    budget = Budget(8192, 256, 0)
    return assemble("sys", "q", items, budget, len, parse_placement(placement), seed)


def test_gold_placement_is_paired_across_positions() -> None:
    items = _items(5)
    placed = {}
    for position in ("head", "mid", "tail"):
        name = f"gold_at:{position}"
        placed[position] = place_gold(_assembled(items, name, 7), parse_placement(name), 7)
    assert [p.items.index(items[1]) for p in placed.values()] == [0, 2, 4]
    others = {pos: [i.unit_id for i in p.items if not i.is_gold] for pos, p in placed.items()}
    assert others["head"] == others["mid"] == others["tail"], "one shuffle of the others per seed"
    assert [char_bucket(p) for p in placed.values()] == ["head", "mid", "tail"]
    single = _assembled(items[1:2], "gold_at:mid", 7)
    assert char_bucket(place_gold(single, parse_placement("gold_at:mid"), 7)) == "only"


def _question(qid: str, lang: str, answerable: bool) -> Question:
    mode = "any" if answerable else "none"
    return Question(qid, "?", ("a",) if answerable else (), answerable, (), mode, {"lang": lang})


def test_budget_order_is_stratified_and_prefixes_nest() -> None:
    questions = [_question(f"a{i}", "en" if i % 2 else "zh", True) for i in range(16)]
    questions += [_question(f"u{i}", "en", False) for i in range(4)]
    order = candidate_order(questions, SubsetSpec(seed=3, unanswerable_share=0.2))
    assert sorted(q.id for q in order) == sorted(q.id for q in questions)
    first10 = order[:10]
    assert sum(not q.answerable for q in first10) == 2
    assert {q.lang for q in first10 if q.answerable} == {"en", "zh"}
    settings = PositionSettings(prompt_tokens_per_s=100.0, output_tokens_per_s=20.0, expected_output_tokens=20)
    assert planned_seconds(1000, 2, settings) == pytest.approx(10 + 2)

    def cost(_: Question) -> tuple[int, int]:
        return 1000, 1  # 11 s each

    small = fit_budget(order, cost, PositionSettings(time_budget_s=40, prompt_tokens_per_s=100.0))
    large = fit_budget(order, cost, PositionSettings(time_budget_s=90, prompt_tokens_per_s=100.0))
    assert len(small.questions) == 3 and small.next_seconds is not None
    assert large.questions[: len(small.questions)] == small.questions


def test_paired_effect_by_hand_never_claims_what_it_cannot_detect() -> None:
    rows = []
    for q in range(6):  # head right on all six questions, mid right on one
        rows.append({"question_id": f"q{q}", "repeat": 0, "placement": "gold_at:head", "correct": 1.0})
        rows.append({"question_id": f"q{q}", "repeat": 0, "placement": "gold_at:mid", "correct": float(q == 0)})
    effect = paired_effect(pd.DataFrame(rows), "gold_at:head", "gold_at:mid", 500, 0)
    assert effect is not None
    assert (effect["mcnemar_wins"], effect["mcnemar_losses"]) == (5, 0)
    assert effect["delta"] == pytest.approx(5 / 6) and effect["n_questions"] == 6
    assert effect["mcnemar_p"] == pytest.approx(2 / 32) and effect["discordance"] == pytest.approx(5 / 6)
    # Six questions: exact power at delta = psi is below 0.8, so no finite MDE is claimed.
    assert effect["mde"] is None and effect["mde_status"] == NOT_DETECTABLE
    assert effect["delta_high"] > effect["delta_low"]


def test_shuffles_collapse_within_a_question() -> None:
    """Two shuffles of one question are one unit: a question right at head on both and wrong at mid on one
    is a single win, not two pairs."""
    rows = []
    for repeat in (0, 1):
        rows.append({"question_id": "q0", "repeat": repeat, "placement": "gold_at:head", "correct": 1.0})
        rows.append({"question_id": "q0", "repeat": repeat, "placement": "gold_at:mid", "correct": float(repeat)})
    effect = paired_effect(pd.DataFrame(rows), "gold_at:head", "gold_at:mid", 200, 0)
    assert effect is not None and (effect["mcnemar_wins"], effect["mcnemar_losses"], effect["n_questions"]) == (1, 0, 1)


# --------------------------------------------------------------------------- the real local model, briefly


def test_real_local_model_smoke_on_two_questions(tmp_path: Path, small_demo: Path) -> None:
    """The smoke preset with the real 0.5B model on two questions (gold at head, the closed-book control): real
    generations, clean contexts, scored and summarised, and the smoke note with the powered command."""
    pytest.importorskip("xllamacpp")
    run_dir = run(
        [
            *ONE_CHUNKING,
            f"labelset.path={small_demo}",
            f"reports_dir={tmp_path}",
            "generator=local",
            "position=smoke",
            "position.placements=[gold_at:head]",
            "position.time_budget_s=null",
            "position.subset.size=2",
            "position.subset.unanswerable=0",
        ]
    )
    rows = pd.read_parquet(run_dir / "position" / "rows.parquet")
    assert set(rows["arm"]) <= {"retrieve-5", "closed-book"} and rows["sent"].all()
    assert (rows["backend"] == "local").all() and (rows["output_tokens"] > 0).all()
    assert (rows["output_tokens"] <= 48).all(), "smoke caps answers at 48 tokens"
    assert rows["correct"].notna().all() and (rows["arm"] == "closed-book").sum() == 2
    status = json.loads((run_dir / "position" / "status.json").read_text())
    assert status["state"] == "ran" and "SMOKE RUN" in status["smoke"] and "position=powered" in status["smoke"]
