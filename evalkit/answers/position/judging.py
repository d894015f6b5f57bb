"""The advisory LLM judge over the position experiment's answers (``+judge=claude``).

evalkit's own scoring (normalised match, F1, refusal) decides ``correct``; the judge's scores go into
``position/judge.parquet`` beside it, with the judge's noise floor (one judgement repeated n times),
so a reviewer can see whether a difference between arms is larger than the judge's own disagreement.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from evalkit.cache import Cache
from evalkit.labels.read import LabelSet
from evalkit.run.folder import write_json, write_table

if TYPE_CHECKING:
    from evalkit.answers.judge import JudgeConfig

JUDGE_TABLE = "judge.parquet"
NOISE_FLOOR = "judge_noise.json"


def judge_rows(rows: pd.DataFrame, labelset: LabelSet) -> list[Any]:
    """One judge row per answered answerable row: the question, the model's answer and the gold answer."""
    from evalkit.answers.judge import JudgeRow

    questions = {q.id: q for q in labelset.questions}
    answered = rows[rows["answerable"].astype(bool) & rows["answer"].notna() & (rows["answer"].astype(str) != "")]
    return [
        JudgeRow(
            key=str(row.row_key),
            question=questions[row.question_id].question,
            answer=str(row.answer),
            reference=questions[row.question_id].answers[0] if questions[row.question_id].answers else "",
        )
        for row in answered.itertuples()
    ]


def judge_position(out_dir: Path, labelset: LabelSet, judge: JudgeConfig | Mapping[str, Any], cache: Cache) -> Path:
    """Judge the answers in ``out_dir/rows.parquet``; writes judge.parquet and judge_noise.json.

    ``judge`` is the plan's typed settings, or a ``conf/judge/*.yaml`` mapping (read strictly here).
    """
    from evalkit.answers.judge import JudgeConfig, judge_answers, noise_floor

    config = judge if isinstance(judge, JudgeConfig) else JudgeConfig.from_mapping(judge)
    rows = pd.read_parquet(out_dir / "rows.parquet")
    to_judge = judge_rows(rows, labelset)
    llm = config.llm()
    scores = judge_answers(to_judge, llm, config.metric, cache=cache, max_concurrency=config.max_concurrency)
    table = pd.DataFrame([asdict(score) for score in scores])
    if not table.empty:
        table = rows[["row_key", "question_id", "arm", "placement", "repeat", "gold_bucket", "correct"]].merge(
            table.rename(columns={"key": "row_key"}), on="row_key", how="inner"
        )
    write_table(out_dir / JUDGE_TABLE, table, csv=True)
    judged = [row for row, score in zip(to_judge, scores) if not math.isnan(score.score)]
    if judged and config.n_noise_repeats > 1:
        floor = noise_floor(judged[0], llm, config.n_noise_repeats, config.metric)
        write_json(out_dir / NOISE_FLOOR, asdict(floor))
    return out_dir / JUDGE_TABLE
