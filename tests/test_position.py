"""The position experiment end to end: a real retrieval sweep on a slice of the demo set, then the real
``AnthropicGenerator`` (official SDK) against a loopback server that "loses the middle": it answers only
when the gold answer sits in the head or tail third of the context. Nothing here needs a local LLM.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf

from evalkit.answers.context import DOES_NOT_FIT, Budget, parse_placement, render_context
from evalkit.answers.pools import gold_doc_ids, pool_items
from evalkit.answers.position.describe import describe
from evalkit.answers.position.experiment import PositionJob, position_experiment, resolve_budget, swept_chunkings
from evalkit.answers.position.items import choose_subset, scope_documents
from evalkit.answers.position.plan import RequestSpec, plan_position
from evalkit.answers.position.run import run_position
from evalkit.answers.position.settings import BudgetSpec, PositionSettings, SubsetSpec, parse_arm
from evalkit.cache import Cache
from evalkit.chunking.chunkers import CHUNKERS
from evalkit.cost.budget import BudgetExceeded, SpendGuard
from evalkit.labels.read import LabelSet, load_labelset
from evalkit.pipeline.config import read_config
from evalkit.pipeline.plan import ConfigError, SweepPlan, build_plan
from evalkit.retrieval.embedding.settings import EMBEDDERS
from evalkit.run.folder import RunFolder
from evalkit.scoring.position import summarise_position
from evalkit.sweep import sweep
from tests.conftest import REPO
from tests.loopback.anthropic_server import REFUSAL_EN, REFUSAL_ZH, AnthropicLoopback

pytest.importorskip("anthropic")

_CJK = re.compile(r"[\u3400-\u9fff]")
SUBSET = 10


class LostInTheMiddle(AnthropicLoopback):
    """A loopback model that answers only when the gold answer's first occurrence lies in the head or tail third.

    The context is everything before the last line (the question). Deterministic, so accuracy differs by
    gold position and correctness flips when a shuffle moves the gold chunk into or out of the middle.
    """

    def __init__(self, golds: Mapping[str, Sequence[str]], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.golds = dict(golds)

    def _answer(self, prompt: str) -> str:
        question_line = prompt.rstrip().splitlines()[-1]
        context = prompt[: prompt.rindex(question_line)]
        refusal = REFUSAL_ZH if _CJK.search(question_line) else REFUSAL_EN
        question = next((q for q in self.golds if question_line.endswith(q)), "")
        found = sorted((context.find(a), a) for a in self.golds.get(question, ()) if a in context)
        if not found:
            return refusal
        offset, answer = found[0]
        in_middle = len(context) <= 3 * offset < 2 * len(context)
        return refusal if in_middle else answer


def compose_config(overrides: Sequence[str]) -> Any:
    with initialize_config_dir(version_base="1.3", config_dir=str(REPO / "conf")):
        return compose(config_name="config", overrides=["+experiment=position", "answer_check=off", *overrides])


def plain(cfg: Any, **position: Any) -> dict[str, Any]:
    """The resolved config as the sweep hands it over, with ``position`` keys replaced."""
    out: dict[str, Any] = OmegaConf.to_container(cfg, resolve=True)  # type: ignore[assignment]
    out["position"] = {**out["position"], "dry_run": False, **position}
    return out


def plan_of(config: dict[str, Any]) -> SweepPlan:
    """The typed plan of a resolved config, as the sweep's entry point builds it."""
    return build_plan(read_config(config), tuple(CHUNKERS), tuple(EMBEDDERS))


def job_of(config: dict[str, Any]) -> PositionJob:
    """What the pipeline hands the position experiment for this config."""
    return plan_of(config).position_job()


@pytest.fixture(scope="module")
def labelset(small_demo: Path) -> LabelSet:
    return load_labelset(small_demo)


@pytest.fixture(scope="module")
def server(labelset: LabelSet) -> Iterator[LostInTheMiddle]:
    golds = {q.question: q.answers for q in labelset.questions}
    with pytest.MonkeyPatch.context() as patch, LostInTheMiddle(golds) as srv:
        patch.setenv("ANTHROPIC_API_KEY", "test-key")
        yield srv


@pytest.fixture(scope="module")
def swept(tmp_path_factory: pytest.TempPathFactory, small_demo: Path, server: LostInTheMiddle) -> tuple[Path, Any]:
    """A finished retrieval sweep (BM25, one chunking of short chunks) and its config."""
    root = tmp_path_factory.mktemp("position")
    cfg = compose_config(
        [
            f"labelset.path={small_demo}",
            f"reports_dir={root}",
            f"cache_path={root / 'sweep-cache.sqlite'}",
            "run_id=position-test",
            "retriever=bm25",
            "progress=false",
            "generator=anthropic",
            f"generator.base_url={server.url}",
            f"position.subset.size={SUBSET}",
            "position.dry_run=true",  # the sweep itself only plans; the tests run the experiment
        ]
    )
    return sweep(cfg), cfg


@pytest.fixture(scope="module")
def experiment(
    swept: tuple[Path, Any], labelset: LabelSet, server: LostInTheMiddle
) -> Iterator[tuple[Path, list[str], Cache, dict[str, Any]]]:
    """The experiment run once; returns its folder, what it printed, its cache and its config."""
    run_dir, cfg = swept
    config = plain(cfg)
    printed: list[str] = []
    cache = Cache(run_dir.parent / "position-cache.sqlite")
    out = position_experiment(job_of(config), labelset, cache, run_dir, log=printed.append)
    yield out, printed, cache, config
    cache.close()


# --------------------------------------------------------------------------- the whole pipeline


def test_planned_counts_printed_equal_rows_written(experiment: tuple, server: LostInTheMiddle) -> None:
    out, printed, _, _ = experiment
    text = "\n".join(printed)
    rows = pd.read_parquet(out / "rows.parquet")
    planned_rows = int(re.search(r"= (\d+) rows", text).group(1))
    planned_answers = int(re.search(r"answers: (\d+) \((\d+) distinct", text).group(1))
    distinct = int(re.search(r"answers: \d+ \((\d+) distinct", text).group(1))
    assert f"planned: {SUBSET} questions x 4 arms" in text and "counted by the model" in text
    assert len(rows) == planned_rows and int(rows["sent"].sum()) == planned_answers
    assert rows["question_id"].nunique() == SUBSET
    assert not rows["answerable"].all(), "the subset includes unanswerable questions"
    assert server.counts["messages"] == distinct  # identical prompts are sent once
    assert pd.read_csv(out / "rows.csv").shape == rows.shape
    assert set(rows["arm"]) == {"stuff", "retrieve-5", "retrieve-10", "files"}
    shuffled = rows[rows["placement"] == "shuffle"]
    assert (shuffled.groupby(["question_id", "arm"]).size() == 3).all()  # 3 repeats each


def test_buckets_match_gold_placement(experiment: tuple) -> None:
    rows = pd.read_parquet(experiment[0] / "rows.parquet")
    placed = rows[rows["placement"].str.startswith("gold_at:")]
    assert set(placed["arm"]) == {"retrieve-5"} and len(placed) > 0
    wanted = placed["placement"].str.removeprefix("gold_at:")
    assert (placed.loc[placed["n_items"] >= 3, "gold_bucket"] == wanted[placed["n_items"] >= 3]).all()
    assert (placed.loc[wanted != "mid", "gold_bucket"] == wanted[wanted != "mid"]).all()
    # The loopback model loses the middle: placing the gold there costs accuracy.
    summary = pd.read_parquet(experiment[0] / "summary.parquet")
    acc = summary[summary["gold_bucket"] == "all"].set_index("placement")["accuracy"]
    assert acc["gold_at:head"] > acc["gold_at:mid"] and acc["gold_at:tail"] > acc["gold_at:mid"]


def test_answers_are_scored(experiment: tuple, labelset: LabelSet) -> None:
    rows = pd.read_parquet(experiment[0] / "rows.parquet")
    sent = rows[rows["sent"]]
    assert sent["correct"].notna().all() and sent["stop_reason"].eq("end_turn").all()
    unanswerable = sent[~sent["answerable"]]
    assert unanswerable["refused"].all() and unanswerable["correct"].all()  # a refusal is right there
    middle = sent[sent["answerable"] & (sent["gold_bucket"] == "mid") & (sent["arm"] != "stuff")]
    assert len(middle) and not middle["correct"].all()
    billed = sent["input_tokens"] + sent["cache_creation_input_tokens"] + sent["cache_read_input_tokens"]
    assert (billed == sent["prompt_tokens"]).all()  # planned by the model's own counter
    assert sent["cache_read_input_tokens"].gt(0).any()  # the system prompt and context are a cached prefix
    assert sent["cost_usd"].gt(0).all() and (sent["model"] == "claude-sonnet-5").all()


def test_summary_has_intervals_flip_rate_and_counts(experiment: tuple) -> None:
    summary = pd.read_parquet(experiment[0] / "summary.parquet")
    assert pd.read_csv(experiment[0] / "summary.csv").shape == summary.shape
    scored = summary[summary["n_questions"] > 0]  # cells holding an answerable question's scored answer
    assert scored[["accuracy", "accuracy_low", "accuracy_high"]].notna().all().all()
    refusals_only = summary[(summary["n_answers"] > 0) & (summary["n_questions"] == 0)]
    assert refusals_only["accuracy"].isna().all()  # only unanswerable questions: refusals, not accuracy
    assert (scored["accuracy_low"] <= scored["accuracy"]).all() and (
        scored["accuracy"] <= scored["accuracy_high"]
    ).all()
    assert (scored["accuracy_high"] > scored["accuracy_low"]).all(), "never an interval of width zero"
    # Over questions, widened to the bootstrap over source documents (the sweep's stats.cluster_by) where shares vary.
    assert {m.split(" and ")[0] for m in scored["ci_method"]} <= {"cluster-bootstrap", "wilson-questions"}
    widened = {m.split(" and ")[1] for m in scored["ci_method"] if " and " in m}
    assert widened and all(w.startswith("cluster bootstrap (") for w in widened)
    overall = summary[(summary["gold_bucket"] == "all") & (summary["placement"] == "shuffle")].set_index("arm")
    assert overall["flip_rate"].notna().all() and overall["flip_rate"].max() > 0
    assert set(summary["gold_bucket"]) >= {"head", "mid", "tail", "all"}
    for column in ("n_does_not_fit", "n_overflow", "n_over_budget", "n_truncated", "cost_per_answer_usd"):
        assert column in summary.columns


def test_rerun_sends_no_request(experiment: tuple, swept: tuple, labelset: LabelSet, server: LostInTheMiddle) -> None:
    out, _, cache, config = experiment
    before = dict(server.counts)
    rows = pd.read_parquet(out / "rows.parquet")
    position_experiment(job_of(config), labelset, cache, swept[0], log=lambda _: None)
    assert dict(server.counts) == before  # rows reused, token counts cached
    pd.testing.assert_frame_equal(pd.read_parquet(out / "rows.parquet"), rows)
    (out / "rows.parquet").unlink()  # lost rows: every answer comes back from the response cache
    position_experiment(job_of(config), labelset, cache, swept[0], log=lambda _: None)
    again = pd.read_parquet(out / "rows.parquet")
    assert dict(server.counts) == before and again.loc[again["sent"], "cached"].all()
    pd.testing.assert_frame_equal(again.drop(columns="cached"), rows.drop(columns="cached"))


def test_batches_when_the_generator_has_them(swept: tuple, labelset: LabelSet, server: LostInTheMiddle) -> None:
    run_dir, cfg = swept
    config = plain(cfg, subset={"size": 3, "unanswerable": 1}, repeats=2, arms=["retrieve-5"], controlled_arms=None)
    config["generator"] = {**config["generator"], "batch": True, "poll_interval_s": 0.01}
    before = server.counts["messages"]
    with Cache(run_dir.parent / "batch-cache.sqlite") as cache:
        out = position_experiment(
            job_of(config),
            labelset,
            cache,
            run_dir,
            log=lambda _: None,
            out_dir=run_dir.parent / "batch",
        )
    rows = pd.read_parquet(out / "rows.parquet")
    assert server.counts["batches.create"] == 1 and server.counts["messages"] == before
    assert rows["sent"].all() and rows["backend"].eq("anthropic-batch").all() and rows["correct"].notna().all()


def test_provider_overflow_is_counted_not_scored(swept: tuple, labelset: LabelSet, server: LostInTheMiddle) -> None:
    run_dir, cfg = swept
    config = plain(
        cfg, arms=["stuff", "retrieve-5"], placements=["shuffle"], repeats=1, count_with_model=False,
        stuff={"scope": "corpus"},
    )  # fmt: skip
    server.context_limit = 2_000  # toy tokens: a stuffed corpus comes back HTTP 400 "prompt is too long"
    try:
        with Cache(run_dir.parent / "overflow-cache.sqlite") as cache:
            out = position_experiment(
                job_of(config),
                labelset,
                cache,
                run_dir,
                log=lambda _: None,
                out_dir=run_dir.parent / "over",
            )
    finally:
        server.context_limit = 200_000
    rows = pd.read_parquet(out / "rows.parquet")
    stuffed = rows[rows["arm"] == "stuff"]
    assert stuffed["overflow"].all() and stuffed["stop_reason"].eq("overflow").all() and stuffed["correct"].isna().all()
    summary = pd.read_parquet(out / "summary.parquet").set_index(["arm", "gold_bucket"])
    assert summary.loc[("stuff", "all"), "n_overflow"] == len(stuffed)
    assert summary.loc[("stuff", "all"), "n_answers"] == 0 and pd.isna(summary.loc[("stuff", "all"), "accuracy"])
    assert summary.loc[("retrieve-5", "all"), "n_overflow"] == 0


def test_spending_cap_stops_before_the_crossing_answers(
    swept: tuple, labelset: LabelSet, server: LostInTheMiddle
) -> None:
    run_dir, cfg = swept
    config = plain(cfg, arms=["retrieve-5"], placements=["shuffle"], repeats=2, flush_every=4, max_tokens=None)
    out = run_dir.parent / "capped"
    before = server.counts["messages"]
    with Cache(run_dir.parent / "capped-cache.sqlite") as cache:
        spend = SpendGuard(0.05)  # room for a few chunks of 4 answers (< $0.007 each), not for all 20
        with pytest.raises(BudgetExceeded, match="budget_usd"):
            position_experiment(job_of(config), labelset, cache, run_dir, log=print, out_dir=out, spend=spend)
        sent_first = server.counts["messages"] - before
        written = pd.read_parquet(out / "rows.parquet")
        assert 0 < sent_first == len(written) < 20 and written["correct"].notna().all()  # finished rows are kept
        assert 0 < spend.spent_usd <= 0.05
        position_experiment(job_of(config), labelset, cache, run_dir, log=print, out_dir=out)
    rows = pd.read_parquet(out / "rows.parquet")
    assert rows["correct"].notna().all() and server.counts["messages"] - before == len(rows)  # nothing paid twice


# --------------------------------------------------------------------------- planning (pure)


def _plan(
    labelset: LabelSet, run_dir: Path, settings: PositionSettings, budget: Budget, backend: str = "anthropic"
) -> Any:
    documents = {d.doc_id: d for d in labelset.documents}
    chunking = swept_chunkings(run_dir)[0]
    ranked = pool_items(pd.read_parquet(RunFolder(run_dir).pool_path(chunking)), documents)
    generator_cfg = dict(OmegaConf.to_container(compose_config(["generator=anthropic"]).generator, resolve=True))
    spec = RequestSpec.from_config(generator_cfg, "claude-sonnet-5", backend)
    questions = choose_subset(labelset.questions, settings.subset)
    return plan_position(settings, questions, ranked, documents, spec, budget, chunking=chunking)


def test_stuff_over_budget_does_not_fit_and_is_never_truncated(swept: tuple, labelset: LabelSet) -> None:
    settings = PositionSettings(repeats=2, subset=SubsetSpec(size=4))
    plan = _plan(labelset, swept[0], settings, Budget(1400, 256, 256, 0.1))
    stuffed = [e for e in plan.entries if e.arm == "stuff" and not e.fits]
    assert stuffed and all(e.reason == DOES_NOT_FIT and e.prompt_tokens == 0 for e in stuffed)
    for entry in stuffed:  # the gold's whole documents, never cut
        question = plan.question(entry.question_id)
        wanted = gold_doc_ids(question) or (entry.items[0].doc_id,)
        assert sorted(i.doc_id for i in entry.items) == sorted(wanted) and entry.n_dropped == 0
        assert entry.context_chars == len(render_context(entry.items))
        assert all(i.text == plan.documents[i.doc_id].text for i in entry.items)
    over = [e for e in plan.to_send if e.n_dropped]
    assert over and all(e.arm != "stuff" for e in over)  # a 88-token share drops whole retrieved items
    assert plan.count(DOES_NOT_FIT) == len(stuffed) and plan.n_over_budget == len(over)
    # The unsent rows are counted in the summary, never scored.
    with Cache(swept[0].parent / "unsent.sqlite") as cache:
        only_stuff = replace(plan, entries=tuple(stuffed))
        summary = run_position(only_stuff, _Unreachable(), cache, swept[0].parent / "unsent", progress=False)
    row = summary.set_index("gold_bucket").loc["all"]
    assert row["n_does_not_fit"] == len(stuffed) and row["n_answers"] == 0 and row["n_rows"] == len(stuffed)


class _Unreachable:
    """A generator that must never be asked (every planned context is unsent)."""

    backend = "unreachable"
    batch_enabled = supports_batch = False

    def __getattr__(self, name: str) -> Any:
        raise AssertionError(f"the generator was used ({name}) although nothing fits")


def test_describe_plans_time_for_a_local_model(swept: tuple, labelset: LabelSet) -> None:
    settings = PositionSettings(repeats=3, subset=SubsetSpec(size=4), prompt_tokens_per_s=100, output_tokens_per_s=10)
    plan = _plan(labelset, swept[0], settings, Budget(8192, 256, 256, 0.25), backend="local")
    text = describe(plan)
    minutes = (plan.prompt_tokens / 100 + plan.n_distinct * settings.expected_output_tokens / 10) / 60
    assert f"≈ {minutes:.1f} min at 100 prompt tok/s" in text and "(estimated, generic heuristic)" in text
    assert f"= {len(plan.entries)} rows" in text and f"answers: {len(plan.to_send)} " in text
    assert plan.tokens_estimated and all(e.prompt_tokens > 0 for e in plan.to_send)


def test_repeats_shuffle_deterministically_with_the_seed(swept: tuple, labelset: LabelSet) -> None:
    budget = Budget(1_000_000, 512, 1024, 0.5)

    def orders(seed: int) -> dict[str, tuple[str, ...]]:
        settings = PositionSettings(
            arms=(parse_arm("retrieve-10"),), repeats=3, placements=(parse_placement("shuffle"),), seed=seed,
            subset=SubsetSpec(size=6),
        )  # fmt: skip
        plan = _plan(labelset, swept[0], settings, budget)
        return {e.row_key: tuple(i.unit_id for i in e.items) for e in plan.entries}

    first, again, other = orders(0), orders(0), orders(1)
    assert first == again and first != other
    assert set(first) == set(other) and len(first) % 3 == 0 and len(first) >= 3 * 4  # clean: a few skipped
    by_question: dict[str, set[tuple[str, ...]]] = {}
    for key, order in first.items():
        by_question.setdefault(key.split("|")[0], set()).add(order)
        assert sorted(order) == sorted(first[key.rsplit("|", 1)[0] + "|0"])  # same items, new order
    assert any(len(distinct) == 3 for distinct in by_question.values())


# --------------------------------------------------------------------------- settings and subset


def test_settings_from_the_experiment_config() -> None:
    cfg = plain(compose_config([]))
    settings = PositionSettings.from_config(cfg["position"])
    assert [a.name for a in settings.arms] == ["stuff", "retrieve-5", "retrieve-10", "files"]
    assert settings.arms[3].k == 2 and settings.repeats == 3 and settings.subset.size == 10
    assert [p.name for p in settings.placements] == ["shuffle", "gold_at:head", "gold_at:mid", "gold_at:tail"]
    assert settings.controlled_arms == ("retrieve-5",) and settings.budget.context_share == 0.25
    assert cfg["generator"]["name"] == "local" and cfg["top_k"] == [5, 10] and cfg["chunk_size"] == [160]
    assert plain(compose_config(["generator=anthropic"]))["generator"]["name"] == "anthropic"
    bad = {
        "arms": ["retrieve-0"],
        "placements": ["gold_at:left"],
        "controlled_arms": ["files-7"],
        "budget": {"context_share": 0},
        "repeat": 3,
    }
    for key, value in bad.items():
        with pytest.raises(ConfigError, match="position"):
            PositionSettings.from_config({key: value})
    assert parse_arm("files", 4) == parse_arm("files", 4) and parse_arm("files-2").k == 2


def test_subset_is_seeded_stratified_and_includes_unanswerable() -> None:
    questions = load_labelset(REPO / "labelsets" / "demo").questions
    subset = choose_subset(questions, SubsetSpec(size=12, unanswerable=2, seed=0))
    assert len(subset) == 12 and subset == choose_subset(questions, SubsetSpec(size=12, unanswerable=2, seed=0))
    assert subset != choose_subset(questions, SubsetSpec(size=12, unanswerable=2, seed=1))
    assert sum(not q.answerable for q in subset) == 2
    langs = [q.lang for q in subset if q.answerable]
    assert sorted(set(langs)) == ["en", "zh-Hans"] and abs(langs.count("en") - langs.count("zh-Hans")) <= 1
    assert [q.id for q in subset] == [q.id for q in questions if q in subset]  # labelled-set order
    assert choose_subset(questions, SubsetSpec(size=None)) == tuple(questions)


def test_scope_tags_choose_the_stuffed_documents(labelset: LabelSet) -> None:
    documents = {d.doc_id: d for d in labelset.documents}
    first, second = list(documents)[:2]
    base = labelset.questions[0]
    assert scope_documents(base, documents) == tuple(documents.values())
    scoped = replace(base, tags={"scope_doc_id": second, "context_doc_ids": [first]})
    assert [d.doc_id for d in scope_documents(scoped, documents)] == [first, second]
    with pytest.raises(ValueError, match="unknown documents"):
        scope_documents(replace(base, tags={"scope_doc_id": "nope"}), documents)


def test_summary_worked_by_hand() -> None:
    def row(qid: str, repeat: int, bucket: str, correct: bool | None, **extra: Any) -> dict[str, Any]:
        sent = correct is not None
        return {
            "question_id": qid, "arm": "retrieve-5", "placement": "shuffle", "repeat": repeat,
            "gold_bucket": bucket, "correct": correct, "exact": correct, "f1": float(bool(correct)),
            "refused": False, "stop_reason": "end_turn" if sent else DOES_NOT_FIT, "overflow": not sent,
            "truncated": False, "sent": sent, "cached": False, "n_dropped": 0, "prompt_tokens": 10,
            "input_tokens": 10, "output_tokens": 2, "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": 0, "usage_estimated": False, "cost_usd": 0.5, **extra,
        }  # fmt: skip

    rows = pd.DataFrame(
        [
            row("a", 0, "head", True),
            row("a", 1, "mid", False),
            row("b", 0, "head", True),
            row("b", 1, "head", True),
            row("c", 0, "tail", None),
        ]
    )
    rows["correct"] = rows["correct"].astype("boolean")
    summary = summarise_position(rows, n_resamples=200).set_index("gold_bucket")
    assert summary.loc["head", "accuracy"] == 1.0 and summary.loc["mid", "accuracy"] == 0.0
    assert summary.loc["all", "accuracy"] == pytest.approx((0.5 + 1.0) / 2)  # question-weighted
    assert summary.loc["all", "flip_rate"] == 0.5 and summary.loc["all", "flip_questions"] == 2
    assert summary.loc["all", "n_does_not_fit"] == 1 and summary.loc["all", "n_answers"] == 4
    assert summary.loc["tail", "n_answers"] == 0 and pd.isna(summary.loc["tail", "accuracy"])
    assert summary.loc["all", "cost_per_answer_usd"] == 0.5


def test_one_arm_accuracy_is_one_number_in_the_summary_and_the_effects() -> None:
    """The closed-book control (one placement) on 3 answerable questions and 1 unanswerable one, all wrong: the
    summary's ``all`` row and effects.json's arm give the same interval (accuracy is on answerable questions; the
    unanswerable one's ``correct`` is a refusal, counted as a refusal). Before, 4 questions gave [0, 0.604] in the
    summary and 3 gave [0, 0.690] in the effects."""
    from evalkit.scoring.position_effects import position_effects

    def row(qid: str, answerable: bool) -> dict[str, Any]:
        return {
            "question_id": qid, "arm": "closed-book", "placement": "shuffle", "repeat": 0, "gold_bucket": "none",
            "gold_block_bucket": "none", "answerable": answerable, "correct": False, "exact": False, "f1": 0.0,
            "refused": False, "citations_valid": None, "stop_reason": "end_turn", "truncated": False, "sent": True,
            "cached": False, "n_dropped": 0, "prompt_tokens": 10, "input_tokens": 10, "output_tokens": 2,
            "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0, "usage_estimated": False,
            "cost_usd": 0.5, "tokens_needed": 10,
        }  # fmt: skip

    rows = pd.DataFrame([row("a", True), row("b", True), row("c", True), row("u", False)])
    rows["correct"] = rows["correct"].astype("boolean")
    cell = summarise_position(rows, n_resamples=200, seed=3).set_index("gold_bucket").loc["all"]
    arm = position_effects(rows, n_resamples=200, seed=3)["arms"][0]
    assert cell["n_questions"] == 3 and cell["accuracy"] == arm["accuracy_answerable"] == 0.0
    assert (cell["accuracy_low"], cell["accuracy_high"]) == (arm["accuracy_low"], arm["accuracy_high"])
    assert arm["accuracy_high"] == pytest.approx(0.6900, abs=1e-4)  # Wilson on 3 questions, never width zero
    assert cell["refused_share"] == 0.0 and arm["refused_unanswerable"] == 0.0  # the unanswerable one: no refusal


def test_budget_comes_from_the_generator_when_unset() -> None:
    class _Gen:
        window, headroom = 8192, 512

    budget = resolve_budget(BudgetSpec(headroom=256, context_share=0.25), _Gen(), {"max_tokens": 256}, None)  # type: ignore[arg-type]
    assert (budget.window_tokens, budget.max_output_tokens, budget.headroom_tokens) == (8192, 256, 512)
    assert budget.share_tokens == 2048
    _Gen.window = None
    with pytest.raises(ConfigError, match="window"):
        resolve_budget(BudgetSpec(), _Gen(), {}, None)  # type: ignore[arg-type]
