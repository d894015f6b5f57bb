"""One answer row for every experiment that answers (#48): a correct refusal on an unanswerable question has
F1 NaN (F1 is defined on answerable questions), whichever experiment asked it.

The answer check (``answers/check/run.py``) and the position experiment (``answers/position/run.py``)
both build a sent answer's columns with :mod:`evalkit.answers.answer_rows`; the test checks the scores it
gives, and that neither runner scores an answer any other way (the position run once wrote 0.0 for a
correct refusal and averaged it into its summary).
"""

from __future__ import annotations

import ast
import math
from pathlib import Path

from evalkit.answers.answer_rows import SCORE_COLUMNS, score_columns, sent_columns
from evalkit.records import Answer, Evidence, Question, Usage
from evalkit.scoring.answers import DEFAULT_REFUSALS

PACKAGE = Path(__file__).resolve().parents[1] / "evalkit"
RUNNERS = ("answers/check/run.py", "answers/position/run.py")
REFUSAL = "I don't have that information"


def _question(answerable: bool) -> Question:
    evidence = (Evidence(doc_id="d", start=0, end=2, text="20"),) if answerable else ()
    return Question(id="q", question="What burst is allowed?", answers=("20",) if answerable else (),
                    answerable=answerable, evidence=evidence, evidence_mode="any" if answerable else "none",
                    tags={"lang": "en"})  # fmt: skip


def _answer(text: str) -> Answer:
    return Answer(question_id="q", text=text, backend="fake", model="m", usage=Usage(10, 3), stop_reason="end_turn")


def test_a_correct_refusal_on_an_unanswerable_question_has_no_f1() -> None:
    scored = score_columns(_question(False), _answer(REFUSAL), DEFAULT_REFUSALS, set(), {})
    assert scored["correct"] is True and scored["refused"] is True and math.isnan(scored["f1"])
    right = score_columns(_question(True), _answer("20 [d]"), DEFAULT_REFUSALS, {"d"}, {"d": "20 requests"})
    assert right["correct"] is True and right["f1"] == 1.0
    assert set(scored) == set(SCORE_COLUMNS)


def test_an_overflow_is_recorded_not_scored() -> None:
    overflow = Answer(question_id="q", text="", backend="fake", model="m", usage=Usage(), stop_reason="overflow")
    assert score_columns(_question(True), overflow, DEFAULT_REFUSALS, set(), {}) == {}
    assert sent_columns(overflow, None)["overflow"] is True


def _calls(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return {node.func.id for node in ast.walk(tree) if isinstance(node, ast.Call) and isinstance(node.func, ast.Name)}


def test_both_runners_score_through_the_one_row_builder() -> None:
    for runner in RUNNERS:
        calls = _calls(PACKAGE / runner)
        assert {"score_columns", "sent_columns"} <= calls, runner
        assert "score_answer" not in calls, f"{runner} scores answers its own way"
