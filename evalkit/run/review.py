"""review.json: every interval, paired comparison, MDE and piece of advice the report shows (the schema).

Computed once from a finished run folder by :mod:`evalkit.review` and written beside the run's other
files; the report renders these records and computes nothing. The records mirror
:mod:`evalkit.scoring.stats`'s by field name, so a number is the same whether the console, the report
or a reader of the file shows it. :func:`write_review` and :func:`read_review` are the one writer and
reader; :func:`decode` turns the JSON back into the records by their type hints.
"""

from __future__ import annotations

import hashlib
import json
import math
import types
import typing
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, fields, is_dataclass
from pathlib import Path
from typing import Any

from evalkit.run import files
from evalkit.run.folder import RunError, read_json
from evalkit.run.units import atomic_write

SCHEMA = 4
"""Version of review.json's shape and content (2: advice carries the gate's verdict; 3: item analysis, production
logs, collapsed grid points, intervals that resample the run's clusters; 4: suspect gold's second signal, wrong gold
or hard question); another is recomputed."""
INPUTS = (files.MANIFEST, files.RESULTS, files.SUMMARY, files.RECOMMENDATION_JSON, files.CALIBRATION_TABLE,
          files.POSITION_SUMMARY, files.POSITION_ROWS, files.PRODUCTION_LOG_ROWS, files.PRODUCTION_LOG_JSON,
          files.CLUSTERS)  # fmt: skip
"""The files review.json is computed from (with chunkings/*.json): when one changes, it is computed again."""


@dataclass(frozen=True)
class Statistics:
    """How the review's intervals and paired comparisons are resampled (the level: the decision's confidence)."""

    level: float = 0.95
    n_resamples: int = 5000
    seed: int = 0
    cluster_by: str = "question"
    """The unit resampled (the run's clusters.parquet): ``document``, ``question`` or a tag's name; a run
    without the file is resampled by question."""


@dataclass(frozen=True)
class Interval:
    """A confidence interval for the mean of one measure (``scoring.stats.Interval``'s fields)."""

    mean: float
    low: float
    high: float
    n: int
    level: float
    method: str = "percentile"


@dataclass(frozen=True)
class Paired:
    """Candidate minus baseline on the same questions (``scoring.stats.PairedComparison``'s fields)."""

    metric: str
    baseline_mean: float
    candidate_mean: float
    delta: float
    delta_low: float
    delta_high: float
    p_value: float
    n: int
    test: str
    p_adjusted: float | None = None
    level: float = 0.95

    @property
    def within_noise(self) -> bool:
        """Whether the interval of the difference contains 0."""
        return self.delta_low <= 0.0 <= self.delta_high


@dataclass(frozen=True)
class Mde:
    """Minimum detectable effect of the objective between the focus config and production (80% power)."""

    value: float
    """In the measure's units; ``inf`` when not detectable at this size."""
    n: int
    how: str


@dataclass(frozen=True)
class Measure:
    """How a measure reads: its label, unit and direction (from the metric registry)."""

    name: str
    label: str
    unit: str
    proportion: bool
    higher_is_better: bool


@dataclass(frozen=True)
class HeadlineRow:
    """One headline measure of the focus config next to production."""

    measure: str
    recommended: Interval | None
    baseline: Interval | None
    comparison: Paired | None
    """Focus minus production, paired by question."""


@dataclass(frozen=True)
class BaselineComparison:
    """The focus config (and every config of the grid) against production."""

    baseline_id: str
    family: tuple[tuple[str, Paired], ...]
    """Every config versus production on the objective, Holm-adjusted across the family."""
    headline: tuple[HeadlineRow, ...]
    mde: Mde | None


@dataclass(frozen=True)
class Step:
    """The paired gain from one grid value to the next (top_k or threshold)."""

    frm: float
    to: float
    from_id: str
    to_id: str
    comparison: Paired


@dataclass(frozen=True)
class Curve:
    """A measure along one grid axis (top_k or threshold) for one chunking."""

    chunking: str
    x: tuple[float, ...]
    config_ids: tuple[str, ...]
    means: tuple[float, ...]
    """Summary means (for context lines)."""
    intervals: tuple[Interval | None, ...] | None
    """Bootstrap intervals, where the report draws a band."""


@dataclass(frozen=True)
class Finding:
    """One diagnostic rule applied to the run, phrased with its arithmetic."""

    rule: str
    """overlap, top_k, threshold, position, gold_cut or degenerate."""
    fired: bool
    """True when the rule recommends a change."""
    title: str
    arithmetic: str
    advice: str = ""
    move: str = ""
    """The one-knob move from production that carries the advice out (empty when the grid has none)."""


@dataclass(frozen=True)
class PositionSummary:
    """Accuracy by where the gold sat in the context, per arm, and answer flips across shuffled repeats."""

    buckets: tuple[str, ...]
    accuracy: Mapping[str, tuple[Interval | None, ...]]
    """arm -> one interval per bucket, shuffled placements."""
    flip_rate: Mapping[str, float]
    controlled: tuple[tuple[str, str, Interval | None], ...]
    """(arm, placement, accuracy) for deterministic placements such as ``gold_at:mid``."""
    source: str
    """Which file the numbers come from: ``summary`` (position/summary.parquet) or ``rows``."""


@dataclass(frozen=True)
class SyntheticRow:
    """Synthetic or real questions of one config: their count and an interval per measure."""

    config: str
    group: str
    n: int
    intervals: tuple[Interval | None, ...]
    """One per :attr:`Review.synthetic_measures`; None where the group has no value."""


@dataclass(frozen=True)
class CalibrationAdvice:
    """The advice cells of one calibration.parquet row, in the table's order."""

    advice: str
    advised: str
    """The advised threshold as set (rounded down, so it keeps the zero-hit its row states)."""
    recommended: str


@dataclass(frozen=True)
class ItemRow:
    """One question of the item analysis (``scoring.items.ItemStats``'s fields)."""

    question_id: str
    facility: float
    r: float
    """Item-rest correlation across configs (NaN when the question's score is constant)."""
    p_upper: float
    p_lower: float
    n_configs: int
    reason: str
    """``negative``, ``upper_miss``, ``always``, ``never`` or ``constant``."""
    doubt: str = ""
    """Suspect gold's second signal (``scoring.gold_doubt.KINDS``; '' when the labelled set could not be read)."""
    gold_overlap: float = math.nan
    """Share of the question's term weight in the gold's window; ``elsewhere_overlap``: in the best window elsewhere."""
    elsewhere_overlap: float = math.nan
    elsewhere_doc_id: str = ""
    gold_doc_retrieved: bool | None = None
    stuffed_answer: str = ""
    """The model's answer with the gold's whole document stuffed (position arm ``stuff``) when all such answers were
    wrong, none a refusal; shown beside the verdict, not part of it."""


@dataclass(frozen=True)
class ItemAnalysis:
    """Questions that never discriminate between configs and gold to doubt (``scoring.items.Items``'s fields)."""

    measure: str
    n_configs: int
    n_questions: int
    group_size: int
    upper_rest: float
    suspect: tuple[ItemRow, ...]
    never_discriminating: tuple[ItemRow, ...]
    skipped: str = ""


@dataclass(frozen=True)
class LoggedMeasure:
    """One measure of production's logged retrievals, the replica's and the best config's, on the same questions."""

    name: str
    label: str
    higher_is_better: bool
    logged: Interval | None
    replica: Interval | None
    best: Interval | None
    logged_vs_replica: Paired | None
    """Logged minus replica (baseline: the replica): an interval without 0 means the replica is not production."""
    best_vs_logged: Paired | None
    """Best config minus logged (baseline: what production returned)."""


@dataclass(frozen=True)
class LoggedScores:
    """What ``production_log=`` found and how production's own retrievals score against the gold."""

    log: str
    format: str
    entries: int
    skipped: int
    questions: int
    """Labelled questions in the sweep."""
    matched: int
    """Labelled questions found in the log (folded question text)."""
    matched_answerable: int
    top_k: int
    not_in_set: int
    """Logged hits naming a document (or a chunk of one) the labelled set does not hold."""
    unanchored: int
    """Logged content found in no document of the set."""
    replica_id: str | None
    best_id: str | None
    measures: tuple[LoggedMeasure, ...]
    gap: tuple[str, ...]
    """Measures on which the logs and the replica disagree beyond noise (empty: the replica stands for production)."""

    def gap_line(self) -> str | None:
        """The "replica gap" sentence the console and the report show (None: no gap)."""
        if not self.gap:
            return None
        differences = [
            f"{m.label} {100 * d.delta:+.1f} pts [{100 * d.delta_low:+.1f}, {100 * d.delta_high:+.1f}]"
            for m in self.measures
            if m.name in self.gap and (d := m.logged_vs_replica) is not None
        ]
        return (
            f"replica gap: production's logged top-{self.top_k} and its replica {self.replica_id} disagree beyond "
            f"noise on {self.matched} labelled questions (logs - replica: {'; '.join(differences)}): "
            "the replica is not production"
        )


@dataclass(frozen=True)
class Review:
    """Everything the report shows that is computed: written once, rendered by the report."""

    schema: int
    inputs: str
    """Digest of the files it was computed from (:func:`inputs_digest`): a folder changed since is stale."""
    statistics: Statistics
    focus_id: str
    """The config the report centres on: the decision's pick, else production, else the grid's first config."""
    baseline_id: str | None
    """Production, when it is in the grid."""
    measures: Mapping[str, Measure]
    units: Mapping[str, str]
    """Every quantity the decision may name -> ``proportion``, ``usd``, ``tokens``, ``count``, ..."""
    comparison: BaselineComparison | None
    k_steps: Mapping[str, tuple[Step, ...]]
    plateaus: Mapping[str, float | None]
    k_curves: Mapping[str, tuple[Curve, ...]]
    """measure -> one curve per chunking at the focus threshold (the focus chunking with intervals)."""
    zero_curves: tuple[Curve, Curve]
    """Zero-hit on answerable, then unanswerable, questions against the threshold."""
    findings: tuple[Finding, ...]
    position: PositionSummary | None
    synthetic_measures: tuple[tuple[str, str], ...]
    """(column, label) of the synthetic-versus-real table."""
    synthetic: tuple[SyntheticRow, ...]
    calibration: tuple[CalibrationAdvice, ...]
    """One per calibration.parquet row, in its order."""
    min_auc: float
    """The AUC below which no threshold is advised."""
    reported: tuple[str, ...] = ()
    """The measures the report's grid and comparisons show, in order (the metric registry's ``REPORTED``)."""
    items: ItemAnalysis | None = None
    """Item analysis on the objective's primary measure across every config (:mod:`evalkit.scoring.items`)."""
    production_log: LoggedScores | None = None
    """``production_log=``: production's logged top-k beside the replica and the best config (None: no log)."""
    collapsed: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    """Grid points that return exactly the lists of an earlier one of their chunking: kept id -> collapsed ids."""
    collapsed_text: str = ""
    """The same in one sentence, as the console printed it ('' when every grid point is distinct)."""

    def measure(self, name: str) -> Measure:
        """The named measure as the registry declared it (its name as label when unknown)."""
        return self.measures.get(name) or Measure(name, name, self.unit(name), False, True)

    def unit(self, name: str) -> str:
        return self.units.get(name, "score")


def decode(kind: Any, data: Any) -> Any:
    """JSON data as the record type ``kind`` (dataclasses, optionals, tuples, mappings, numbers)."""
    origin = typing.get_origin(kind)
    if origin in (typing.Union, types.UnionType):
        options = [a for a in typing.get_args(kind) if a is not type(None)]
        return None if data is None else decode(options[0], data)
    if is_dataclass(kind):
        hints = typing.get_type_hints(kind)
        return kind(**{f.name: decode(hints[f.name], data[f.name]) for f in fields(kind) if f.name in data})
    if origin is tuple:
        args = typing.get_args(kind)
        if len(args) == 2 and args[1] is Ellipsis:
            return tuple(decode(args[0], d) for d in data)
        return tuple(decode(a, d) for a, d in zip(args, data, strict=True))
    if origin in (Mapping, dict):
        value_kind = typing.get_args(kind)[1]
        return {str(k): decode(value_kind, v) for k, v in data.items()}
    if kind is float:
        return math.nan if data is None else float(data)
    if kind is int:
        return int(data)
    return data


def inputs_digest(run_dir: Path) -> str:
    """sha256 over the contents of :data:`INPUTS` and chunkings/*.json (absent files count as absent)."""
    root = Path(run_dir)
    digest = hashlib.sha256()
    for path in [*(root / name for name in INPUTS), *sorted((root / files.CHUNKINGS_DIR).glob("*.json"))]:
        digest.update(path.relative_to(root).as_posix().encode() + b"\0")
        digest.update(hashlib.sha256(path.read_bytes()).digest() if path.is_file() else b"absent")
    return digest.hexdigest()


def write_review(run_dir: Path, review: Review) -> Path:
    """Write review.json; mappings keep their order (the order the report shows them in)."""
    target = Path(run_dir) / files.REVIEW_JSON
    text = json.dumps(asdict(review), indent=1, ensure_ascii=False)
    atomic_write(target, lambda tmp: tmp.write_text(text, encoding="utf-8"))
    return target


def read_review(run_dir: Path) -> Review | None:
    """The folder's review.json; None when absent, of another schema or computed from other files than the
    folder holds now (the report's entry point then computes it again)."""
    path = Path(run_dir) / files.REVIEW_JSON
    if not path.is_file():
        return None
    try:
        payload = read_json(path)
        if payload.get("schema") != SCHEMA or payload.get("inputs") != inputs_digest(path.parent):
            return None
        return decode(Review, payload)
    except (ValueError, KeyError, TypeError) as exc:
        raise RunError(f"{path}: not a review file evalkit can read ({exc}); delete it to compute it again") from exc
