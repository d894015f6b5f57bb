"""compare/<earlier>.json: this run against an earlier one (the schema, the one writer and reader).

Computed by :mod:`evalkit.review.compare` when a report is asked to compare two run folders, written into
the later one under the earlier folder's name, and rendered by the report and the terminal alike.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from evalkit.run import files
from evalkit.run.folder import RunError, read_json, write_json

DELTA_COLUMNS = ("config_id", "metric", "earlier", "now", "delta", "delta_paired", "delta_low", "delta_high",
                 "n_paired")  # fmt: skip


@dataclass(frozen=True)
class Flip:
    """A question whose hit@k changed between the runs for one config."""

    config_id: str
    question_id: str
    before: float
    after: float


@dataclass(frozen=True)
class RunDelta:
    """This run against an earlier one."""

    earlier_id: str
    same_labelset: bool
    n_matching: int
    only_now: int
    only_earlier: int
    deltas: pd.DataFrame
    """config_id (this run's), metric, earlier, now, delta for every matching config and metric; for the focus
    configs also delta_paired (the mean difference over the questions both runs scored), its paired 95% interval
    delta_low, delta_high, and n_paired (those questions), else NaN / 0. delta and delta_paired differ only when
    the runs scored different questions."""
    flips: tuple[Flip, ...]
    shared_questions: int = 0
    """Questions (by id) that both runs scored."""

    @property
    def note(self) -> str | None:
        """A plain sentence when there is nothing to compare, else None."""
        if self.n_matching == 0:
            return (
                f"The runs share no config ({self.only_now} configs here, {self.only_earlier} in {self.earlier_id}): "
                "their grids do not overlap, so there is nothing to compare; no question can have flipped."
            )
        if self.shared_questions == 0:
            return (
                f"The runs share no question (none of this run's question ids is in {self.earlier_id}): "
                "the deltas compare different questions, and no question can have flipped."
            )
        return None

    def summary_line(self) -> str:
        """One line for a terminal: what matched, or why nothing did."""
        if self.note:
            return self.note
        return (
            f"against {self.earlier_id}: {self.n_matching} matching configs, {self.shared_questions} shared questions, "
            f"{len(self.flips)} flipped questions in the recommended and baseline configs"
        )

    def recall_lines(self) -> list[str]:
        """The focus configs' paired recall deltas, one line each, for a terminal."""
        if self.note is not None or self.deltas.empty:
            return []
        rows = self.deltas[(self.deltas["metric"] == "recall") & (self.deltas["n_paired"] > 0)]
        return [
            f"  {r.config_id}: recall {r.delta_paired * 100:+.1f} pts "
            f"[{r.delta_low * 100:+.1f}, {r.delta_high * 100:+.1f}] (paired, {int(r.n_paired)} questions)"
            for r in rows.itertuples(index=False)
        ]


def comparison_path(run_dir: Path, earlier_dir: Path) -> Path:
    """Where the comparison with ``earlier_dir`` lives in ``run_dir`` (named after the earlier folder)."""
    return Path(run_dir) / files.COMPARE_DIR / f"{Path(earlier_dir).resolve().name}.json"


def write_comparison(run_dir: Path, earlier_dir: Path, delta: RunDelta) -> Path:
    frame = delta.deltas.reindex(columns=list(DELTA_COLUMNS))
    payload = {
        "earlier_id": delta.earlier_id,
        "same_labelset": delta.same_labelset,
        "n_matching": delta.n_matching,
        "only_now": delta.only_now,
        "only_earlier": delta.only_earlier,
        "shared_questions": delta.shared_questions,
        "deltas": {c: frame[c].tolist() for c in DELTA_COLUMNS},
        "flips": [[f.config_id, f.question_id, f.before, f.after] for f in delta.flips],
    }
    target = comparison_path(run_dir, earlier_dir)
    target.parent.mkdir(parents=True, exist_ok=True)
    write_json(target, payload)
    return target


def read_comparison(run_dir: Path, earlier_dir: Path) -> RunDelta | None:
    """The comparison with ``earlier_dir`` as written; None when the folder holds none."""
    path = comparison_path(run_dir, earlier_dir)
    if not path.is_file():
        return None
    try:
        p = read_json(path)
        deltas = pd.DataFrame({c: p["deltas"][c] for c in DELTA_COLUMNS})
        deltas = deltas.astype({c: float for c in DELTA_COLUMNS[2:8]}).astype({"n_paired": int})
        return RunDelta(
            earlier_id=str(p["earlier_id"]),
            same_labelset=bool(p["same_labelset"]),
            n_matching=int(p["n_matching"]),
            only_now=int(p["only_now"]),
            only_earlier=int(p["only_earlier"]),
            deltas=deltas,
            flips=tuple(Flip(str(c), str(q), float(b), float(a)) for c, q, b, a in p["flips"]),
            shared_questions=int(p["shared_questions"]),
        )
    except (ValueError, KeyError, TypeError) as exc:
        raise RunError(f"{path}: not a comparison evalkit can read ({exc})") from exc
