"""The report renders the sweep's decision (recommendation.json), the frontier, and a drill-down over every question."""

from __future__ import annotations

import html
import json
import shutil
from pathlib import Path

import pandas as pd
import pytest

from evalkit.report.decision import read_decision
from evalkit.review import write_report
from evalkit.run import files
from evalkit.run.folder import RunError
from tests.test_report import FAST, PLANTED, parse, run_sweep


@pytest.fixture(scope="module")
def demo_run(tmp_path_factory: pytest.TempPathFactory, small_demo: Path) -> Path:
    return run_sweep(
        small_demo,
        tmp_path_factory.mktemp("decision"),
        "chunk_size=[256,512]",
        "chunk_overlap=[0,64]",
        "top_k=[1,3,5]",
    )


def _copy(run: Path, target: Path, decision: dict | None) -> Path:
    copy = Path(shutil.copytree(run, target))
    (copy / files.RECOMMENDATION_JSON).unlink(missing_ok=True)
    if decision is not None:
        (copy / files.RECOMMENDATION_JSON).write_text(json.dumps(decision), encoding="utf-8")
    return copy


def _ids(run: Path) -> tuple[str, str]:
    """A production config (k5) and a pick at another k, both from the run's summary."""
    summary = pd.read_parquet(run / files.SUMMARY)
    lowest = summary["threshold"].min()
    production = summary[
        (summary["chunk_size"] == 512)
        & (summary["chunk_overlap"] == 64)
        & (summary["top_k"] == 5)
        & (summary["threshold"] == lowest)
    ]["config_id"].iloc[0]
    pick = summary[(summary["chunk_size"] == 256) & (summary["top_k"] == 3) & (summary["threshold"] == lowest)]
    return str(pick["config_id"].iloc[0]), str(production)


def recommend_payload(pick: str, production: str) -> dict:
    return {
        "version": 1,
        "decision": "recommend",
        "objective": {
            "primary": "recall",
            "primary_label": "recall@k",
            "zero_hit_answerable_max": 0.05,
            "prompt_tokens_max": 1234.5,
            "abstention_min": None,
            "gate_margins": [{"metric": "cost_per_query", "kind": "max_rise_pct", "amount": 10}],
            "confidence": 0.95,
        },
        "production": {
            "config_id": production,
            "values": {"recall": 0.9, "cost_per_query": 0.004, "prompt_tokens": 1200, "zero_hit_answerable": 0.0},
        },
        "recommended": {
            "config_id": pick,
            "values": {"recall": 0.93, "cost_per_query": 0.0041, "prompt_tokens": 1100, "zero_hit_answerable": 0.01},
            "constraints": [
                {
                    "name": "cost_per_query",
                    "label": "$/query",
                    "kind": "gate",
                    "value": 0.0041,
                    "production": 0.004,
                    "limit": "rise ≤ 10%",
                    "passed": True,
                    "delta": 0.0001,
                    "delta_low": 0.00005,
                    "delta_high": 0.00015,
                },
                {
                    "name": "prompt_tokens",
                    "label": "prompt tokens",
                    "kind": "cap",
                    "value": 1100,
                    "production": 1200,
                    "limit": "≤ 1,234",
                    "passed": True,
                    "delta": -100,
                    "delta_low": None,
                    "delta_high": None,
                },
            ],
            "gain_in_sample": {"measure": "recall", "delta": 0.03, "low": 0.01, "high": 0.05, "p_value": 0.01},
            "gain_out_of_sample": {
                "measure": "recall",
                "delta": 0.02,
                "low": -0.01,
                "high": 0.04,
                "splits": 20,
                "same_pick_share": 0.65,
                "holds_share": 0.55,
                "positive_share": 0.8,
                "unit": "clusters",
            },
            "top_k": {"recommended": 3, "production": 5, "same_k": False},
        },
        "near_misses": [
            {"config_id": production, "primary": 0.95, "breaks": ["cost_per_query"], "detail": f"cost {PLANTED}"}
        ],
        "flags": [{"config_id": pick, "kind": "edge of grid", "message": f"extend the grid {PLANTED}"}],
        "gate": {
            "verdict": "pass",
            "checks": [
                {
                    "metric": "recall",
                    "passed": True,
                    "delta": 0.03,
                    "delta_low": 0.01,
                    "delta_high": 0.05,
                    "margin_text": "drop ≤ 2 points",
                }
            ],
        },
    }


def rows_of(page, section: str) -> list[list[str]]:
    return page.rows.get(section, [])


def test_recommend_decision_is_rendered_from_the_file(tmp_path: Path, demo_run: Path) -> None:
    pick, production = _ids(demo_run)
    run = _copy(demo_run, tmp_path / "run", recommend_payload(pick, production))
    page = parse(write_report(run, statistics=FAST))
    text = page.text("recommendation")
    assert page.codes["recommendation"][:2] == [pick, production]
    assert "predates" not in text and files.RECOMMENDATION_JSON in text
    rows = rows_of(page, "recommendation")
    cost = next(r for r in rows if r[0] == "$/query")
    assert cost[1:] == ["gate", "rise ≤ 10%", "$0.0041", "$0.0040", "+$0.0001 [+$0.0001, +$0.0001]", "pass"]
    tokens = next(r for r in rows if r[0] == "prompt tokens")
    assert tokens[3:5] == ["1,100", "1,200"] and tokens[6] == "pass"
    in_sample = next(r for r in rows if r[0].startswith("in sample"))
    out_sample = next(r for r in rows if r[0].startswith("out of sample"))
    assert in_sample[1] == "+3.0 points [+1.0, +5.0]" and in_sample[2] == "gain"
    assert out_sample[1] == "+2.0 points [\u22121.0, +4.0]" and out_sample[2] == "within noise"
    assert "20 splits" in out_sample[3] and "65%" in out_sample[3]
    # The replication figure beside the out-of-sample gain: the selection repeated on halves of the documents.
    assert (
        "gain shown (interval above 0) on 55% of held-back halves, positive on 80% (the selection repeated on "
        "halves of the documents)" in out_sample[3]
    )
    assert "different k: recall@3" in text and "recall@5" in text
    assert "Gate verdict:" in text and "PASS" in text
    raw = (run / files.REPORT_HTML).read_text(encoding="utf-8")
    assert PLANTED not in raw and "extend the grid &lt;script&gt;" in raw  # flags and near-misses escaped
    # The frontier: two plots, the drill-down centred on the pick.
    assert "Pareto front" in page.text("frontier")
    assert page.text("frontier").count("Red star") == 1
    assert "recommended:" in page.text("questions") and "production:" in page.text("questions")


def test_keep_production_names_the_near_misses(tmp_path: Path, demo_run: Path) -> None:
    pick, production = _ids(demo_run)
    payload = recommend_payload(pick, production)
    payload.update(
        decision="keep production",
        recommended=None,
        near_misses=[
            {"config_id": pick, "primary": 0.95, "breaks": ["cost_per_query", "prompt_tokens"], "detail": "cost +149%"}
        ],
        gate={"verdict": None, "checks": []},
    )
    run = _copy(demo_run, tmp_path / "keep", payload)
    page = parse(write_report(run, statistics=FAST))
    text = page.text("recommendation")
    assert "Keep production" in text and page.codes["recommendation"][0] == production
    miss = next(r for r in rows_of(page, "recommendation") if r and r[0] == pick)
    assert miss[1] == "95.0%" and miss[2] == "$/query, prompt tokens" and miss[3] == "cost +149%"
    assert "not run" in text


def test_a_run_without_the_file_keeps_the_old_card(tmp_path: Path, demo_run: Path) -> None:
    run = _copy(demo_run, tmp_path / "old", None)
    page = parse(write_report(run, statistics=FAST))
    assert "this run predates recommendation.json" in page.text("recommendation").lower()
    assert "Minimum detectable effect" in page.text("recommendation")


def test_a_malformed_decision_is_a_one_line_error() -> None:
    with pytest.raises(RunError, match="decision 'maybe'"):
        read_decision({"decision": "maybe"})
    with pytest.raises(RunError, match="recommended is null"):
        read_decision({"decision": "recommend", "recommended": None})


def _data(report: Path) -> dict:
    raw = report.read_text(encoding="utf-8")
    start = raw.index('<template id="qdata">') + len('<template id="qdata">')
    body = raw[start : raw.index("</template>", start)]
    assert "<" not in body and ">" not in body  # nothing in the data can open or close a tag
    return json.loads(html.unescape(body))


def test_drilldown_holds_every_question_of_every_filter(tmp_path: Path, demo_run: Path) -> None:
    pick, production = _ids(demo_run)
    run = _copy(demo_run, tmp_path / "drill", recommend_payload(pick, production))
    data = _data(write_report(run, statistics=FAST, max_questions=5))
    results = pd.read_parquet(run / files.RESULTS)
    mine = results[results["config_id"] == pick].set_index("question_id")
    base = results[results["config_id"] == production].set_index("question_id").reindex(mine.index)
    views = {v["key"]: {data["questions"][i]["id"] for i in v["q"]} for v in data["views"]}
    assert len(data["questions"]) == len(mine) and views["all"] == set(mine.index)
    misses = set(mine.index[mine["answerable"] & (mine["recall"] < 1)])
    given = set(mine.index[~mine["answerable"] & (mine["zero_hit"] == 0)])

    def outcome(rows: pd.DataFrame) -> pd.Series:
        return rows["hit"].fillna(0).where(rows["answerable"], rows["zero_hit"])

    flips = set(mine.index[outcome(mine) != outcome(base)])
    assert views["misses"] == misses and views["unanswerable-with-context"] == given and views["flips"] == flips
    assert views["any"] == misses | given | flips
    assert data["page_size"] == 5 and [c["id"] for c in data["configs"]] == [pick, production]
    for q in data["questions"]:
        record = q["r"][0]
        assert record[3] == int(mine.loc[q["id"], "gold_rank_in_pool"])  # the gold's pool rank, every question
        assert record[2] == int(mine.loc[q["id"], "n_returned"]) == len(record[4])
        for doc, start, end, _, _ in record[4]:  # every returned chunk's text is in the page
            parts = data["docs"][doc]
            assert any(p[0] <= start and min(end, start + 2000) <= p[0] + len(p[1]) for p in parts)
