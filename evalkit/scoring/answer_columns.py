"""The answer check's measures as result columns (pure), so the objective and the gate read them like recall.

``answer_correct`` and ``answer_f1`` hold the check's scores where a config answered a question and NaN
everywhere else (a paired comparison then uses the questions both configs answered; a config that was not
answered has no answer data, and the gate says so). ``first_token_s`` is the generator's fitted latency
(:mod:`evalkit.scoring.latency`) at each question's prompt tokens (system prompt, question, returned chunks,
all by the same local estimate), for every config: the latency model reaches configs never answered.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from evalkit.scoring.latency import LatencyModel
from evalkit.scoring.per_config import PerConfig, Results
from evalkit.scoring.registry import ANSWER_CORRECT, ANSWER_F1, FIRST_TOKEN_S

SCORE_COLUMNS = {ANSWER_CORRECT: "correct", ANSWER_F1: "f1"}
"""Result column -> the answer check's row column it comes from."""


def answered_values(rows: pd.DataFrame) -> pd.DataFrame:
    """config_id, question_id and the score columns of the retrieve arm's scored answers."""
    mine = rows[(rows["arm"] == "retrieve") & rows["correct"].notna()]
    out = mine[["config_id", "question_id"]].copy()
    for column, source in SCORE_COLUMNS.items():
        out[column] = pd.to_numeric(mine[source].astype("Float64"), errors="coerce").astype(float).to_numpy()
    return out.reset_index(drop=True)


def with_answer_columns(
    results: Results, answered: pd.DataFrame, latency: LatencyModel | None, system_tokens: float
) -> Results:
    """``results`` with :data:`SCORE_COLUMNS` and (when a latency model exists) ``first_token_s`` added."""
    if isinstance(results, PerConfig):
        return _per_config(results, answered, latency, system_tokens)
    merged = results.drop(columns=[c for c in (*SCORE_COLUMNS, FIRST_TOKEN_S) if c in results.columns])
    merged = merged.merge(answered, on=["config_id", "question_id"], how="left")
    if latency is not None:
        tokens = system_tokens + merged["question_tokens"].astype(float) + merged["returned_tokens"].astype(float)
        merged[FIRST_TOKEN_S] = latency.predict(tokens.to_numpy())
    return merged


def _per_config(
    results: PerConfig, answered: pd.DataFrame, latency: LatencyModel | None, system_tokens: float
) -> PerConfig:
    position = pd.Index(results.question_ids)
    values = dict(results.values)
    by_config = dict(tuple(answered.groupby("config_id", sort=False)))
    for column in SCORE_COLUMNS:
        arrays = []
        for config_id in results.config_ids:
            array = np.full(len(results.question_ids), np.nan)
            mine = by_config.get(config_id)
            if mine is not None:
                at = position.get_indexer(mine["question_id"])
                array[at[at >= 0]] = mine[column].to_numpy()[at >= 0]
            arrays.append(array)
        values[column] = tuple(arrays)
    if latency is not None:
        values[FIRST_TOKEN_S] = tuple(
            latency.predict(system_tokens + q.astype(float) + r.astype(float))
            for q, r in zip(results.values["question_tokens"], results.values["returned_tokens"], strict=True)
        )
    return PerConfig(results.config_ids, results.question_ids, results.answerable, results.identity, values)
