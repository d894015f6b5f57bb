"""Segments (pure): does a pick that wins overall lose on a language, a role, a source or a user's tag?

For every tag value held by at least :data:`MIN_QUESTIONS` questions, the paired
gain of a candidate over production on the objective's primary measure, with its
interval. A segment where the candidate is worse beyond noise, after Holm's
correction across all the segments checked (so that checking many tags does not
flag one by chance), becomes a flag on the decision.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np
import pandas as pd

from evalkit.records import Question
from evalkit.scoring import compare
from evalkit.scoring.compare import Resampling
from evalkit.scoring.stats.planning import holm

MIN_QUESTIONS = 30
"""A segment smaller than this is not checked: its interval would say little and its flag less."""
ALPHA = 0.05


def segment_frame(questions: Iterable[Question]) -> pd.DataFrame:
    """question_id x tag: every scalar tag of every question (lists and mappings are not segments)."""
    rows = [
        {"question_id": q.id}
        | {str(k): str(v) for k, v in q.tags.items() if isinstance(v, str | bool | int) and str(v) != ""}
        for q in questions
    ]
    return pd.DataFrame(rows).set_index("question_id") if rows else pd.DataFrame()


def segment_gains(
    primary: pd.DataFrame,
    segments: pd.DataFrame,
    production_id: str,
    candidates: Mapping[str, str],
    resampling: Resampling,
) -> list[dict[str, Any]]:
    """Per (candidate role, tag, value): the paired gain on ``primary`` (question x config), Holm-adjusted p.

    ``candidates`` maps a role ("recommended", "cheaper pick") to a config id.
    """
    out: list[dict[str, Any]] = []
    if segments.empty or production_id not in primary.columns:
        return out
    aligned = segments.reindex(primary.index)
    for role, config_id in candidates.items():
        if config_id not in primary.columns:
            continue
        for tag in sorted(aligned.columns):
            for value, rows in sorted(aligned.groupby(tag).groups.items(), key=lambda kv: str(kv[0])):
                base = primary.loc[rows, production_id].to_numpy(dtype=float)
                cand = primary.loc[rows, config_id].to_numpy(dtype=float)
                defined = int((~(np.isnan(base) | np.isnan(cand))).sum())
                if defined < MIN_QUESTIONS:
                    continue
                c = compare.paired(base, cand, resampling, f"{tag}={value}", np.asarray(rows))
                if c is None:
                    continue
                out.append(
                    {"role": role, "config_id": config_id, "tag": tag, "value": str(value), "n": defined,
                     "delta": c.delta, "low": c.delta_low, "high": c.delta_high, "p_value": c.p_value}
                )  # fmt: skip
    for role in candidates:
        mine = [s for s in out if s["role"] == role]
        for s, adjusted in zip(mine, holm([s["p_value"] for s in mine]), strict=True):
            s["p_holm"] = adjusted
            s["worse"] = bool(s["high"] < 0 and adjusted < ALPHA)
    return out


def segment_flags(gains: list[dict[str, Any]], measure_label: str) -> list[dict[str, str]]:
    """One flag per segment where a candidate is worse beyond noise (Holm-adjusted across its segments)."""
    return [
        {
            "config_id": s["config_id"],
            "kind": "worse on a segment",
            "message": (
                f"the {s['role']} is worse on {s['tag']}={s['value']} ({s['n']} questions): {measure_label} "
                f"{100 * s['delta']:+.1f} pts [{100 * s['low']:+.1f}, {100 * s['high']:+.1f}] against production, "
                f"Holm p {s['p_holm']:.3g}"
            ),
        }
        for s in gains
        if s["worse"]
    ]
