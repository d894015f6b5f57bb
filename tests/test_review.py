"""review.json: computed once when a run finishes, read back as written, rendered by the report (computing nothing).

Real sweeps (BM25, the planted set of ``test_report``), the real entry point, files on disk.
"""

from __future__ import annotations

import json
import math
import shutil
from dataclasses import asdict
from pathlib import Path

import pytest

from evalkit.report import write_report as render
from evalkit.report.__main__ import main as report_main
from evalkit.review import Statistics, compute_review
from evalkit.run import files
from evalkit.run.folder import RunError, load_run
from evalkit.run.review import decode, inputs_digest, read_review
from tests.test_report import planted_run


@pytest.fixture(scope="module")
def finished(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return planted_run(tmp_path_factory.mktemp("review"))


def _copy(run: Path, tmp_path: Path) -> Path:
    return Path(shutil.copytree(run, tmp_path / run.name))


def _text(review: object) -> str:
    """A record as JSON text: NaN never equals itself, its text does."""
    return json.dumps(asdict(review), sort_keys=True)  # type: ignore[call-overload]


def test_the_sweep_writes_the_review_and_it_reads_back_as_computed(finished: Path) -> None:
    """The pipeline wrote review.json; reading it gives the records a fresh computation gives (same resampling)."""
    stored = read_review(finished)
    assert stored is not None and stored.statistics.n_resamples == Statistics().n_resamples
    assert stored.inputs == inputs_digest(finished)
    again = compute_review(load_run(finished), stored.statistics)
    assert _text(again) == _text(stored)
    assert stored.focus_id in {str(c) for c in load_run(finished).summary["config_id"]}
    assert stored.baseline_id is not None  # the planted grid holds production
    assert stored.comparison is not None and stored.comparison.family  # every config against production
    assert stored.findings and all(f.title for f in stored.findings)


def test_decode_rebuilds_nested_records() -> None:
    from evalkit.run.review import Curve, Interval

    curve = Curve("c", (1.0, 3.0), ("a", "b"), (0.5, float("nan")), (Interval(0.5, 0.4, 0.6, 10, 0.95), None))
    back = decode(Curve, json.loads(json.dumps(asdict(curve))))
    assert back.intervals == (Interval(0.5, 0.4, 0.6, 10, 0.95, "percentile"), None)
    assert back.x == (1.0, 3.0) and back.config_ids == ("a", "b")


def test_a_paired_comparison_keeps_every_field_scoring_gave_it_through_review_json() -> None:
    """review.json holds scoring's own paired comparison: ``n_missing`` (lost once by a restated copy) survives."""
    import numpy as np

    from evalkit.review.analysis import as_paired
    from evalkit.run.review import HeadlineRow
    from evalkit.scoring.stats import paired_bootstrap

    base = np.array([1.0, 0.0, 1.0, np.nan, 1.0, 0.0, 1.0, 1.0])
    cand = np.array([1.0, 1.0, 1.0, 1.0, np.nan, 1.0, 1.0, 0.0])
    computed = paired_bootstrap(base, cand, n_resamples=200, seed=0, metric="hit@5")
    assert computed.n_missing == 2
    row = HeadlineRow("hit@5", None, None, as_paired(computed))
    back = decode(HeadlineRow, json.loads(json.dumps(asdict(row))))
    assert back.comparison == computed and back.comparison.n_missing == 2


def test_an_older_folder_is_refused_by_the_renderer_and_computed_by_the_entry_point(
    finished: Path, tmp_path: Path
) -> None:
    older = _copy(finished, tmp_path)
    (older / files.REVIEW_JSON).unlink()
    with pytest.raises(RunError, match=r"python -m evalkit\.report"):
        render(older, progress=False)
    assert report_main([str(older), "--resamples", "300"]) == 0
    review = read_review(older)
    assert review is not None and review.statistics.n_resamples == 300
    assert (older / files.REPORT_HTML).is_file()


def test_the_folder_numbers_are_kept_unless_other_resampling_is_asked(finished: Path, tmp_path: Path) -> None:
    run = _copy(finished, tmp_path)
    assert report_main([str(run), "--resamples", "300", "--seed", "7"]) == 0
    written = (run / files.REVIEW_JSON).read_text(encoding="utf-8")
    assert report_main([str(run)]) == 0  # no option: the folder's review.json, as it is
    assert (run / files.REVIEW_JSON).read_text(encoding="utf-8") == written
    review = read_review(run)
    assert review is not None and (review.statistics.n_resamples, review.statistics.seed) == (300, 7)
    page = (run / files.REPORT_HTML).read_text(encoding="utf-8")
    assert "300 resamples, seed 7" in page  # the page states the resampling its numbers came from


def test_a_changed_input_makes_the_review_stale(finished: Path, tmp_path: Path) -> None:
    run = _copy(finished, tmp_path)
    assert read_review(run) is not None
    decision = json.loads((run / files.RECOMMENDATION_JSON).read_text(encoding="utf-8"))
    (run / files.RECOMMENDATION_JSON).write_text(json.dumps({**decision, "edited": True}), encoding="utf-8")
    assert read_review(run) is None
    with pytest.raises(RunError, match="files changed since"):
        render(run, progress=False)
    assert report_main([str(run)]) == 0
    assert read_review(run) is not None


def test_the_mde_and_the_item_analysis_in_review_json_are_scorings_records(finished: Path) -> None:
    """No restated copy: what scoring returns is what review.json holds and reads back (the MDE keeps its property)."""
    from evalkit import records
    from evalkit.run.review import ItemAnalysis, Mde
    from evalkit.scoring.compare import Mde as ScoringMde
    from evalkit.scoring.items import item_analysis
    from evalkit.scoring.registry import measure

    assert Mde is ScoringMde is records.Mde
    review = read_review(finished)
    assert review is not None and review.items is not None and review.comparison is not None
    assert type(review.items) is ItemAnalysis is records.ItemAnalysis
    run = load_run(finished)
    fresh = item_analysis(run.results, measure(review.items.measure))
    assert _text(fresh) == _text(review.items)
    mde = review.comparison.mde
    assert type(mde) is records.Mde and mde.detectable == math.isfinite(mde.value)
