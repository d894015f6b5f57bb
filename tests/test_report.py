"""The review report on real (small) runs: sections, numbers traced back to results.parquet, escaping."""

from __future__ import annotations

import json
import re
import shutil
import warnings
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hydra import compose, initialize_config_dir

from evalkit.report.__main__ import main as report_main
from evalkit.report.html import JS
from evalkit.review import Statistics, write_report
from evalkit.run import files
from evalkit.run.clusters import read_clusters
from evalkit.run.folder import load_pool, load_run, returned_chunks
from evalkit.scoring import stats
from evalkit.scoring.clusters import cluster_map
from evalkit.scoring.compare import Resampling, mean_interval, paired
from evalkit.sweep import sweep
from tests.conftest import REPO, evidence, write_set

FAST = Statistics(n_resamples=1000)
SECTIONS = (
    "recommendation",
    "configs",
    "diagnostics",
    "grid",
    "top-k",
    "zero-hit",
    "index",
    "calibration",
    "position",
    "cost",
    "chunk-health",
    "compare",
    "labelset",
    "questions",
    "run",
)
PLANTED = "<script>window.__pwned=1;document.title='pwned'</script>"
PLANTED_IMG = '<img src=x onerror="window.__pwned=2">'


def run_sweep(labelset: Path, reports: Path, *overrides: str) -> Path:
    """A real sweep through the Hydra compose API (BM25: no embedding, fast)."""
    with initialize_config_dir(version_base="1.3", config_dir=str(REPO / "conf")):
        cfg = compose(
            config_name="config",
            overrides=[
                f"labelset.path={labelset}",
                "retriever=bm25",
                f"reports_dir={reports}",
                "progress=false",
                "position=off",
                "answer_check=off",  # the answer experiment has its own tests; these are about retrieval reports
                *overrides,
            ],
        )
        return sweep(cfg)


def planted_set(root: Path) -> Path:
    """A tiny labelled set whose document and question carry script tags, and whose tags are Chinese."""
    docs = {
        "evil": (
            "# Notes\n\nThe parking allowance is 40 EUR per month. "
            f"{PLANTED} {PLANTED_IMG} Other text follows here to fill the chunk.\n"
        ),
        "zh": "# 报销政策\n\n住宿标准为每晚不超过六百元。出差需提前三天申请。交通费按实际发生报销。\n",
        "plain": "# Leave\n\nEmployees get 28 days of annual leave. Carry-over is capped at 5 days.\n",
    }
    questions = [
        {
            "id": "q-evil",
            "question": f"What is the parking allowance? {PLANTED}",
            "answers": ["40 EUR", PLANTED_IMG],
            "answerable": True,
            "evidence": [evidence("evil", docs["evil"], "40 EUR")],
            "evidence_mode": "any",
            "tags": {"lang": "en", "topic": "停车", "note": PLANTED},
        },
        {
            "id": "q-zh",
            "question": "住宿标准是每晚多少钱？",
            "answers": ["六百元"],
            "answerable": True,
            "evidence": [evidence("zh", docs["zh"], "六百元")],
            "evidence_mode": "any",
            "tags": {"lang": "zh-Hans", "topic": "差旅报销"},
        },
        {
            "id": "q-leave",
            "question": "How many days of annual leave do employees get?",
            "answers": ["28 days"],
            "answerable": True,
            "evidence": [evidence("plain", docs["plain"], "28 days")],
            "evidence_mode": "any",
            "tags": {"lang": "en", "topic": "休假"},
        },
        {
            "id": "q-none",
            "question": "What is the gym subsidy?",
            "answers": [],
            "answerable": False,
            "evidence": [],
            "evidence_mode": "none",
            "tags": {"lang": "en", "topic": "停车"},
        },
    ]
    return write_set(root, docs, questions)


def planted_run(tmp: Path) -> Path:
    """A run on the planted set with the baseline inside the grid."""
    labelset = planted_set(tmp / "planted")
    return run_sweep(
        labelset,
        tmp / "reports",
        "chunk_size=[64,128]",
        "chunk_overlap=[0,16]",
        "top_k=[1,3]",
        "baseline.chunk_size=128",
        "baseline.chunk_overlap=16",
        "baseline.top_k=3",
    )


class Page(HTMLParser):
    """Collects section ids, scripts, event-handler attributes and the text under each section."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.sections: dict[str, list[str]] = {}
        self.scripts: list[str] = []
        self.handlers: list[tuple[str, str]] = []
        self.tags: list[str] = []
        self.rows: dict[str, list[list[str]]] = {}
        self.codes: dict[str, list[str]] = {}
        self._section: str | None = None
        self._in_script = False
        self._cell: list[str] | None = None
        self._row: list[str] | None = None
        self._code: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        named = dict(attrs)
        self.handlers.extend((tag, k) for k, _ in attrs if k.lower().startswith("on"))
        if tag == "section":
            self._section = named.get("id")
            self.sections.setdefault(str(self._section), [])
        if tag == "script":
            self._in_script = True
            self.scripts.append("")
        if tag == "tr":
            self._row = []
        if tag in ("td", "th"):
            self._cell = []
        if tag == "code":
            self._code = []

    def handle_endtag(self, tag: str) -> None:
        if tag == "script":
            self._in_script = False
        if tag in ("td", "th") and self._cell is not None and self._row is not None:
            self._row.append("".join(self._cell).strip())
            self._cell = None
        if tag == "tr" and self._row is not None and self._section:
            self.rows.setdefault(self._section, []).append(self._row)
            self._row = None
        if tag == "code" and self._code is not None and self._section:
            self.codes.setdefault(self._section, []).append("".join(self._code))
            self._code = None
        if tag == "section":
            self._section = None

    def handle_data(self, data: str) -> None:
        if self._in_script:
            self.scripts[-1] += data
        if self._section:
            self.sections[self._section].append(data)
        if self._cell is not None:
            self._cell.append(data)
        if self._code is not None:
            self._code.append(data)

    def text(self, section: str) -> str:
        return " ".join(self.sections.get(section, []))


def parse(path: Path) -> Page:
    page = Page()
    page.feed(path.read_text(encoding="utf-8"))
    return page


@pytest.fixture(scope="module")
def demo_run(tmp_path_factory: pytest.TempPathFactory, small_demo: Path) -> Path:
    return run_sweep(
        small_demo,
        tmp_path_factory.mktemp("reports"),
        "chunk_size=[256,512]",
        "chunk_overlap=[0,64]",
        "top_k=[1,3,5]",
    )


@pytest.fixture(scope="module")
def demo_report(demo_run: Path) -> Path:
    return write_report(demo_run, statistics=FAST)


def without_optional_data(run: Path, target: Path) -> Path:
    """A copy of a run as an older sweep would have written it: no calibration, costs, position or health."""
    copy = Path(shutil.copytree(run, target))
    for name in (files.CALIBRATION_TABLE, files.COSTS_JSON, files.CHUNK_HEALTH_JSON, files.REPORT_HTML):
        (copy / name).unlink(missing_ok=True)
    shutil.rmtree(copy / files.POSITION_DIR, ignore_errors=True)
    summary = pd.read_parquet(copy / files.SUMMARY)
    summary.drop(columns=[c for c in files.COST_COLUMNS if c in summary.columns]).to_parquet(copy / files.SUMMARY)
    results = pd.read_parquet(copy / files.RESULTS)
    results.drop(columns=[c for c in files.COST_COLUMNS if c in results.columns]).to_parquet(copy / files.RESULTS)
    return copy


def test_every_section_is_there_and_absent_data_says_how_to_get_it(tmp_path: Path, demo_run: Path) -> None:
    report = write_report(without_optional_data(demo_run, tmp_path / "old"), statistics=FAST)
    page = parse(report)
    assert report == report.parent / files.REPORT_HTML
    missing = [s for s in SECTIONS if s not in page.sections]
    assert not missing, missing
    for source in (files.RERANK, files.POSITION, files.COST, files.CHUNK_HEALTH):
        text = page.text(source.key)
        assert "No data in this run" in text and source.how_to_get in text, source.key
    assert "gate" not in page.sections  # only with a gate.json
    assert len(page.scripts) == 1 and page.scripts[0] == JS
    html_text = report.read_text(encoding="utf-8")
    assert "http://" not in html_text and "https://" not in html_text  # nothing to fetch
    assert html_text.count("data:image/png;base64,") >= 5  # grid, top_k, zero-hit, index, labelled set


def test_the_report_centres_on_the_sweeps_decision(demo_run: Path, demo_report: Path) -> None:
    """The config the card names is recommendation.json's (the pick, or production when it is kept), never the
    report's own choice; and it meets the decision's zero-hit cap."""
    page = parse(demo_report)
    summary = pd.read_csv(demo_run / "summary.csv")
    decision = json.loads((demo_run / files.RECOMMENDATION_JSON).read_text(encoding="utf-8"))
    focus = (decision["recommended"] or decision["production"])["config_id"]
    shown = page.codes["recommendation"]
    assert focus in shown and focus in set(summary["config_id"])
    if decision["recommended"] is not None:
        row = summary[summary["config_id"] == focus].iloc[0]
        assert row["zero_hit_answerable"] <= decision["objective"]["zero_hit_answerable_max"] + 1e-12


def test_baseline_comparison_equals_numbers_from_results(demo_run: Path, demo_report: Path) -> None:
    page = parse(demo_report)
    results = pd.read_parquet(demo_run / "results.parquet")
    decision = json.loads((demo_run / files.RECOMMENDATION_JSON).read_text(encoding="utf-8"))
    baseline = decision["production"]["config_id"]
    recommended = (decision["recommended"] or decision["production"])["config_id"]
    assert {recommended, baseline} <= set(page.codes["recommendation"])
    lowest = results["threshold"].min()
    expected_baseline = results[
        (results["chunk_size"] == 512)
        & (results["chunk_overlap"] == 64)
        & (results["top_k"] == 5)
        & np.isclose(results["threshold"], lowest)
    ]["config_id"].unique()
    assert [baseline] == list(expected_baseline)

    def recall(config_id: str) -> pd.Series:
        rows = results[(results["config_id"] == config_id) & results["answerable"]]
        return rows.set_index("question_id")["recall"].sort_index()

    rec, base = recall(recommended), recall(baseline)
    # The sweep's clusters (clusters.parquet: the question's source document), as the gate resamples them.
    settings = Resampling(n_resamples=FAST.n_resamples, seed=FAST.seed, clusters=cluster_map(read_clusters(demo_run)))
    assert settings.clusters is not None
    comparison = paired(base.to_numpy(), rec.to_numpy(), settings, "recall", base.index.to_numpy())
    assert comparison is not None and comparison.test.startswith("cluster bootstrap")
    row = next(r for r in page.rows["recommendation"] if r[0].startswith("recall@"))
    base_ci = mean_interval(base.to_numpy(), settings, base.index.to_numpy())
    assert base_ci is not None
    shown_ci = f"{100 * base_ci.mean:.1f}% [{100 * base_ci.low:.1f}, {100 * base_ci.high:.1f}]"
    if recommended == baseline:  # production kept: its own measures, never a production-vs-production table
        assert len(row) == 2 and row[1] == shown_ci
        assert "no difference" not in page.text("recommendation")
        return
    assert row[1].startswith(f"{100 * rec.mean():.1f}%")
    assert row[2].startswith(f"{100 * base.mean():.1f}%")
    shown = [float(x) for x in re.findall(r"[-+]?\d+\.\d+", row[3].replace("\u2212", "-"))]
    expected = [100 * comparison.delta, 100 * comparison.delta_low, 100 * comparison.delta_high]
    assert np.allclose(shown, expected, atol=0.051), (row[3], expected)
    assert row[2] == shown_ci
    verdict = "within noise" if stats.within_noise(comparison) else ("better" if comparison.delta > 0 else "worse")
    assert verdict in row[4] or (comparison.delta_low == comparison.delta_high == 0 and "no difference" in row[4])
    assert "Minimum detectable effect" in page.text("recommendation")
    # Every note names the unit the intervals resample: the sweep's clusters (source documents).
    assert "paired, clustered by document" in page.text("run")
    assert "clustered by document" in page.text("configs") or recommended == baseline
    assert "Holm" in page.text("recommendation") or recommended == baseline


def test_drilldown_chunks_follow_the_slicing_rule(demo_run: Path) -> None:
    run = load_run(demo_run)
    for config_id in run.config_ids[::7]:
        row = run.config_row(config_id)
        rows = run.results[run.results["config_id"] == config_id].set_index("question_id")
        pool = load_pool(run.root, str(row["chunking"]), list(rows.index))
        got = returned_chunks(pool, int(row["top_k"]), float(row["threshold"])).groupby("question_id").size()
        assert got.reindex(rows.index, fill_value=0).tolist() == rows["n_returned"].tolist(), config_id


def test_planted_script_appears_only_escaped(tmp_path: Path) -> None:
    report = write_report(planted_run(tmp_path), statistics=FAST)
    raw = report.read_text(encoding="utf-8")
    assert PLANTED not in raw and PLANTED_IMG not in raw
    assert "&lt;script&gt;window.__pwned=1;" in raw  # shown, as text
    assert "onerror=&quot;window.__pwned=2&quot;" in raw
    page = parse(report)
    assert page.scripts == [JS]  # the report's own script, nothing else
    assert page.handlers == []  # no on* attribute anywhere
    assert page.tags.count("img") == raw.count("data:image/png;base64,")
    questions = page.text("questions")
    assert "What is the parking allowance? <script>" in questions  # the text survives, inert
    assert "住宿标准是每晚多少钱" in questions and "六百元" in questions


def test_optional_data_is_rendered_when_present(tmp_path: Path, demo_run: Path) -> None:
    run = Path(shutil.copytree(demo_run, tmp_path / "run"))
    summary = pd.read_parquet(run / files.SUMMARY)
    if files.COST_PER_QUERY not in summary.columns:  # priced by the sweep; synthesised for an older one
        cost = 0.001 + 2e-6 * summary["mean_returned"] * summary["chunk_size"]
        summary.assign(cost_per_query_usd=cost, cost_per_day_usd=cost * 1000).to_parquet(run / files.SUMMARY)
    if not (run / files.CALIBRATION_TABLE).exists():
        pd.DataFrame(
            [
                {
                    "chunking": c,
                    "stage": "bm25",
                    "question_class": "all",
                    "n_relevant_best": 50,
                    "n_irrelevant_best": 60,
                    "overlap_low": 3.0,
                    "overlap_high": 9.0,
                    "separable": False,
                    "recommended_threshold": 9.0,
                    "zero_hit_answerable_at_recommended": 0.4,
                    "zero_hit_unanswerable_at_recommended": 0.9,
                }
                for c in summary["chunking"].unique()
            ]
        ).to_parquet(run / files.CALIBRATION_TABLE)
    rng = np.random.default_rng(0)
    rows = pd.DataFrame(
        [
            {
                "question_id": f"q{q}",
                "arm": arm,
                "placement": "shuffle",
                "repeat": r,
                "gold_bucket": bucket,
                "correct": bool(rng.random() < p),
            }
            for arm in ("retrieve-5", "stuff")
            for q in range(60)
            for r in range(3)
            for bucket, p in (("head", 0.9), ("mid", 0.4), ("tail", 0.85))
        ]
    ).astype({"correct": "boolean"})
    (run / files.POSITION_DIR).mkdir(exist_ok=True)  # position=off leaves its status.json there
    rows.to_parquet(run / files.POSITION_ROWS)
    health = {
        "findings": [
            {
                "chunking": "recursive-s256-o0",
                "rule": "split_table",
                "count": 3,
                "share": 0.01,
                "message": "table rows without their header",
                "examples": [{"chunk_id": "d#1-2", "doc_id": "d", "start": 1, "end": 2, "detail": "<b>x</b>"}],
            }
        ]
    }
    (run / files.CHUNK_HEALTH_JSON).write_text(json.dumps(health))
    page = parse(write_report(run, statistics=FAST))
    for source in (files.RERANK, files.POSITION, files.COST, files.CHUNK_HEALTH):
        assert "No data in this run" not in page.text(source.key), source.key
    assert "Pareto" in page.text("cost") and "flip rate" in page.text("position")
    assert "recommended threshold" in page.text("calibration")
    assert "calibrated threshold" in page.text("zero-hit")
    assert "wrong answers concentrate" in page.text("diagnostics")
    assert "<b>x</b>" in page.text("chunk-health")  # shown as text
    # The experiment's own summary, when written, is read instead of recomputed.
    summary_rows = [
        {
            "arm": "retrieve-5",
            "placement": "shuffle",
            "gold_bucket": b,
            "accuracy": a,
            "accuracy_low": a - 0.1,
            "accuracy_high": a + 0.1,
            "n_questions": 40,
            "flip_rate": 0.25 if b == "all" else np.nan,
        }
        for b, a in (("head", 0.9), ("mid", 0.5), ("tail", 0.8), ("all", 0.7))
    ]
    pd.DataFrame(summary_rows).to_parquet(run / files.POSITION_SUMMARY)
    page = parse(write_report(run, statistics=FAST))
    assert "50.0% [40.0, 60.0]" in page.text("position") and "25.0%" in page.text("position")


def test_run_over_run_lists_flipped_questions(tmp_path: Path, small_demo: Path, demo_run: Path) -> None:
    earlier = run_sweep(
        small_demo, tmp_path, "chunk_size=[256,512]", "chunk_overlap=[64]", "top_k=[1,3,5]", "relevance_tau=0.5"
    )
    page = parse(write_report(demo_run, compare=earlier, statistics=FAST))
    text = page.text("compare")
    now, before = pd.read_parquet(demo_run / "results.parquet"), pd.read_parquet(earlier / "results.parquet")
    matching = set(now["config_id"]) & set(before["config_id"])
    assert f"{len(matching)} matching configs" in text
    baseline = page.codes["recommendation"][1]
    key = ["config_id", "question_id"]
    joined = now[now["answerable"]].merge(before[before["answerable"]], on=key, suffixes=("", "_before"))
    recommended = page.codes["recommendation"][0]
    focus = joined[joined["config_id"].isin({recommended, baseline} & matching)]
    flips = int((focus["hit"] != focus["hit_before"]).sum())
    assert f"Questions that flipped (hit@k changed): {flips}" in text
    # Each focus delta carries its paired interval over the questions both runs scored, worked out here.
    shown_configs = [c for c in dict.fromkeys((recommended, baseline)) if c in matching]
    assert shown_configs, "the earlier run holds a focus config"
    mine = joined[joined["config_id"] == shown_configs[0]]
    paired = float((mine["recall"] - mine["recall_before"]).mean())
    row = next(r for r in page.rows["compare"] if r and r[0] == "recall")
    paired_cell = r"\(([^;]+?)(?:; paired ([^ ]+))? \[([^,]+), ([^\]]+)\](?:,| over) (\d+) (?:paired|shared)"
    cell = re.search(paired_cell, row[1])
    assert cell, row
    number = lambda t: float(t.replace("\u2212", "-"))  # noqa: E731
    shown = number(cell.group(2) or cell.group(1))
    low, high = number(cell.group(3)), number(cell.group(4))
    assert abs(shown - 100 * paired) <= 0.051 and low <= shown <= high
    assert int(cell.group(5)) == len(mine)


def test_run_over_run_with_no_shared_config_says_so(tmp_path: Path, small_demo: Path, demo_run: Path) -> None:
    other = run_sweep(small_demo, tmp_path, "chunk_size=[128]", "chunk_overlap=[0]", "top_k=[2]")
    text = parse(write_report(demo_run, compare=other, statistics=FAST)).text("compare")
    assert "0 matching configs" in text and "share no config" in text
    assert "Questions that flipped" not in text and "None." not in text


def test_cli_writes_the_report_and_rejects_a_non_run(tmp_path: Path, demo_run: Path, capsys) -> None:
    assert report_main([str(demo_run), "--resamples", "200", "--max-questions", "5"]) == 0
    assert "5 of" in parse(demo_run / files.REPORT_HTML).text("questions")
    assert report_main([str(tmp_path / "nope")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("evalkit.report: error:") and "Traceback" not in "\n".join(err)


def test_chinese_labels_render_with_a_cjk_font() -> None:
    """The packaged font (a dependency, no system font) has every glyph of a Chinese label."""
    from evalkit.report import plots
    from evalkit.report.fonts import cjk_font

    font = cjk_font()
    assert font.family is not None
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        png = plots.draw(lambda: plots.bars({"主题": {"差旅报销": 3.0, "休假": 2.0}}), font)
    assert png and not [w for w in caught if "missing from font" in str(w.message)]


def test_a_one_chunking_grid_is_a_table_not_single_cell_heatmaps(tmp_path: Path, small_demo: Path) -> None:
    """With one chunk_size (or one overlap) a heatmap is a strip of cells whose colour bar means nothing: the
    grid section shows the slice as a table instead, its values the summary's."""
    overrides = ("chunk_size=[256]", "chunk_overlap=[0,64]", "top_k=[3]", "baseline.chunk_size=256", "baseline.top_k=3")
    run = run_sweep(small_demo, tmp_path, *overrides)
    html = write_report(run, statistics=FAST).read_text(encoding="utf-8")
    grid = html[html.index('<section id="grid"') :]
    grid = grid[: grid.index("</section>")]
    assert "<img" not in grid and "<table" in grid
    page = parse(write_report(run, statistics=FAST))
    rows = page.rows["grid"]
    record = json.loads((run / files.RECOMMENDATION_JSON).read_text(encoding="utf-8"))
    focus = (record["recommended"] or record["production"])["config_id"]
    summary = pd.read_parquet(run / files.SUMMARY)
    level = float(summary.set_index("config_id").loc[focus, "threshold"])
    at = summary[np.isclose(summary["threshold"], level)].sort_values("chunk_overlap")
    assert [r[:2] for r in rows[1:]] == [["256", "0"], ["256", "64"]]
    assert [r[2] for r in rows[1:]] == [f"{100 * v:.1f}%" for v in at["recall"]]
