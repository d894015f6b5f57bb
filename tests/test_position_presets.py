"""The position presets wired end to end with generator=fake on the demo subset (real sweep, real pools):
smoke, protocol and powered run every arm they name, every placement is clean, stuff answers, retrieve-10 is
placed, the closed-book control sits beside the arms, and powered grows from its cache."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from hydra import compose, initialize_config_dir

from evalkit.chunking.relevance import overlap
from evalkit.labels.read import LabelSet, load_labelset
from evalkit.run.folder import RunFolder
from evalkit.scoring.answers import contains_match
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
def labelset(small_demo: Path) -> LabelSet:
    return load_labelset(small_demo)


def preset_run(root: Path, demo: Path, preset: str, *extra: str) -> Path:
    return run([*ONE_CHUNKING, f"labelset.path={demo}", f"reports_dir={root}", "generator=fake", preset, *extra])


@pytest.fixture(scope="module")
def protocol_run(tmp_path_factory: pytest.TempPathFactory, small_demo: Path) -> Path:
    root = tmp_path_factory.mktemp("position-protocol")
    return preset_run(root, small_demo, "position=protocol", "position.subset.size=6")


@pytest.fixture(scope="module")
def smoke_run(tmp_path_factory: pytest.TempPathFactory, small_demo: Path) -> Path:
    return preset_run(tmp_path_factory.mktemp("position-smoke"), small_demo, "position=smoke")


def assert_every_placement_clean(run_dir: Path, labelset: LabelSet) -> int:
    """Every sent retrieval context: one gold holding an answer string, others with no evidence and no answer.

    Checked independently of the planner: the pool's ``relevant`` column, character overlap with the evidence
    spans, and the answer scorer's containment of any gold answer in each unit's text.
    """
    rows = pd.read_parquet(run_dir / "position" / "rows.parquet")
    plan = json.loads((run_dir / "position" / "plan.json").read_text())
    pool = pd.read_parquet(RunFolder(run_dir).pool_path(plan["chunking"]))
    units = {(str(r.question_id), str(r.unit_id)): r for r in pool.itertuples(index=False)}
    questions = {q.id: q for q in labelset.questions}
    texts = {d.doc_id: d.text for d in labelset.documents}
    checked = 0
    for row in rows[rows["arm"].str.startswith("retrieve-") & rows["sent"]].itertuples():
        question = questions[row.question_id]
        golds = 0
        for unit_id in row.unit_ids:
            unit = units[(row.question_id, unit_id)]
            text = texts[str(unit.doc_id)][int(unit.start) : int(unit.end)]
            holds = bool(question.answers) and contains_match(text, question.answers, question.lang)
            touches = bool(unit.relevant) or any(overlap(unit, span) > 0 for span in question.evidence)
            if unit_id == row.gold_unit_id:
                golds += 1
                assert unit.relevant and (holds or not question.answerable), (row.row_key, "gold without evidence")
            else:
                assert not touches and not holds, (row.row_key, unit_id, "a distractor holds the answer")
        assert golds == (1 if question.answerable else 0), row.row_key
        checked += 1
    return checked


def test_smoke_placements_are_clean_and_skips_counted(smoke_run: Path, labelset: LabelSet) -> None:
    assert assert_every_placement_clean(smoke_run, labelset) > 0
    plan = json.loads((smoke_run / "position" / "plan.json").read_text())
    skipped = sum(n for reasons in plan["skipped_unclean"].values() for n in reasons.values())
    assert skipped == len(plan["unclean"]) and all(u["reason"] for u in plan["unclean"])


def test_protocol_runs_three_arms_five_shuffles_and_the_control(protocol_run: Path, labelset: LabelSet) -> None:
    rows = pd.read_parquet(protocol_run / "position" / "rows.parquet")
    assert {"stuff", "retrieve-5", "retrieve-10", "closed-book"} == set(rows["arm"])
    retrieve = rows[rows["arm"].str.startswith("retrieve-")]
    assert set(retrieve["placement"]) == {"shuffle"} and set(retrieve["repeat"]) == set(range(5))
    stuff = rows[(rows["arm"] == "stuff") & rows["answerable"]]
    gold_docs = {q.id: len({span.doc_id for span in q.evidence}) for q in labelset.questions}
    assert stuff["sent"].all() and stuff["gold_block"].notna().all()
    assert (stuff["n_items"] == stuff["question_id"].map(gold_docs)).all(), "stuff = the gold's whole document(s)"
    assert (rows.loc[rows["arm"] == "closed-book", "n_items"] == 0).all()
    assert assert_every_placement_clean(protocol_run, labelset) > 0
    effects = json.loads((protocol_run / "position" / "effects.json").read_text())
    arms = {f["arm"] for f in effects["flip_rates"]}
    assert {"retrieve-5", "retrieve-10"} <= arms


def test_stuff_over_the_corpus_fills_the_window(tmp_path: Path, small_demo: Path) -> None:
    run_dir = preset_run(
        tmp_path,
        small_demo,
        "position=protocol",
        "position.subset.size=3",
        "position.arms=[stuff]",
        "position.controlled_arms=null",
        "position.repeats=1",
        "position.arm_repeats=1",
        "position.stuff.scope=corpus",
    )
    rows = pd.read_parquet(run_dir / "position" / "rows.parquet")
    answerable = rows[rows["answerable"]]
    assert answerable["sent"].all() and (answerable["n_items"] > 1).all(), "more documents than the gold's"
    assert answerable["gold_block"].notna().all(), "the gold's document is always kept (shuffled among the rest)"
    assert (answerable["prompt_tokens"] <= 8192).all() and (answerable["prompt_tokens"] > 1000).all()


def test_powered_places_retrieve_10_on_a_subsample_and_scores_the_loglik(
    tmp_path: Path, small_demo: Path, labelset: LabelSet
) -> None:
    extra = ("position.pilot_questions=6", "position.subsample_size=3")
    run_dir = preset_run(tmp_path, small_demo, "position=powered", *extra)
    rows = pd.read_parquet(run_dir / "position" / "rows.parquet")
    placed = rows[rows["placement"].str.startswith("gold_at:")]
    assert {"retrieve-5", "retrieve-10"} == set(placed["arm"]) and (placed["repeat"] == 0).all()
    assert rows.loc[rows["arm"] == "retrieve-10", "question_id"].nunique() <= 3, "retrieve-10 on the subsample"
    assert rows.loc[rows["arm"] == "stuff", "question_id"].nunique() <= 3
    answered = placed[placed["answerable"] & placed["sent"]]
    assert answered["gold_loglik"].notna().all() and (answered["gold_loglik"] < 0).all()
    assert assert_every_placement_clean(run_dir, labelset) > 0


def test_powered_grows_from_its_cache_and_resends_nothing(tmp_path: Path, small_demo: Path) -> None:
    """A second invocation re-plans from the pilot's discordance, adds questions, and sends only the new ones
    (``position.rounds=1``: each invocation plans once, as a killed or capped run resumes)."""
    extra = (
        "position.pilot_questions=5",
        "position.max_questions=12",
        "position.subsample_size=2",
        "position.rounds=1",
    )
    first_dir = preset_run(tmp_path, small_demo, "position=powered", *extra)
    out = first_dir / "position"
    first = pd.read_parquet(out / "rows.parquet")
    first_plan = json.loads((out / "plan.json").read_text())
    assert len(first_plan["questions"]) == 5 and "pilot" in first_plan["sizing"]
    assert json.loads((out / "run_stats.json").read_text())["planned_seconds_pending"] > 0
    dry_sizes = []
    for _ in range(2):  # a dry run rewrites plan.json; the next size still rests on the answered rows alone
        preset_run(tmp_path, small_demo, "position=powered", *extra, "position.dry_run=true")
        dry_sizes.append(json.loads((out / "plan.json").read_text())["sizing"])
    assert dry_sizes[0] == dry_sizes[1] and "discordance" in dry_sizes[0]
    second_dir = preset_run(tmp_path, small_demo, "position=powered", *extra)
    assert second_dir == first_dir, "the same config resumes the same run folder"
    second = pd.read_parquet(out / "rows.parquet")
    plan = json.loads((out / "plan.json").read_text())
    stats = json.loads((out / "run_stats.json").read_text())
    assert len(plan["questions"]) > 5 and set(first_plan["questions"]) < set(plan["questions"])
    assert "discordance" in plan["sizing"]
    kept = second.set_index("row_key").loc[first["row_key"], "request_key"]
    assert (kept.to_numpy() == first["request_key"].to_numpy()).all(), "every earlier answer kept"
    new = second[~second["row_key"].isin(first["row_key"]) & second["sent"]]
    assert stats["answers_pending_at_start"] == len(new)
    fresh = set(new["request_key"]) - set(first["request_key"])
    assert stats["requests_sent"] == len(fresh), "zero re-sent requests for already-answered questions"


def test_powered_re_plans_within_one_invocation(tmp_path: Path, small_demo: Path) -> None:
    """The pilot, then a re-plan on its measured discordance in the same invocation; nothing is sent twice."""
    extra = ("position.pilot_questions=5", "position.max_questions=12", "position.subsample_size=2")
    out = preset_run(tmp_path, small_demo, "position=powered", *extra) / "position"
    plan = json.loads((out / "plan.json").read_text())
    rows = pd.read_parquet(out / "rows.parquet")
    assert len(plan["questions"]) > 5 and "discordance" in plan["sizing"]
    assert rows["question_id"].nunique() == len(plan["questions"])
    stats = json.loads((out / "run_stats.json").read_text())
    assert stats["requests_sent"] == rows.loc[rows["sent"], "request_key"].nunique(), "each request sent once"


def test_report_states_the_flip_rule_skips_and_the_smoke_label(protocol_run: Path, smoke_run: Path) -> None:
    from evalkit.review import Statistics, write_report

    page = write_report(protocol_run, statistics=Statistics(n_resamples=200), progress=False).read_text()
    assert "Flip rate (share of questions whose correctness changes with order, Wilson 95%)" in page
    assert "closed-book control beside them" in page and "closed-book" in page
    smoke = write_report(smoke_run, statistics=Statistics(n_resamples=200), progress=False).read_text()
    status = json.loads((smoke_run / "position" / "status.json").read_text())
    assert status["smoke"].startswith("position: SMOKE RUN") and "position=powered" in status["smoke"]
    assert "SMOKE RUN" in smoke and "smallest detectable effect" in smoke
    plan = json.loads((smoke_run / "position" / "plan.json").read_text())
    if plan["unclean"]:
        assert "skipped for want of a clean placement" in smoke
