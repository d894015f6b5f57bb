"""The questions of a weekly replay: a window of the production log, folded, the most asked first (pure).

The replay reads the log with :func:`evalkit.curate.querylog.read_query_log` and picks
with :func:`evalkit.curate.sampling.sample`, the same reader, window and folding as
``labels sample``, so ``--since``, ``--until``, ``--n``, ``--fold`` and ``--seed`` mean
the same in both. It takes the frequent stratum only: known failures are over-drawn on
purpose by ``sample``, and would bias a rate meant to describe production's traffic.
A question is a folded group (every spelling of it counts once): the same question asked
twice gets the same retrieval, so the question, not the row, is the unit of the rate.

The questions carry no labels: retrieval needs their text and the tags the metadata filters
read, nothing else: ``role`` (what the asker may see) and ``as_of`` (the day it was last
asked: the document versions in effect then), so a replay sees what the asker would have.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from evalkit.curate.querylog import LogEntry
from evalkit.curate.sampling import Sample, SampleSettings, group_id, sample
from evalkit.records import Question

__all__ = ["REPLAY_N", "ReplayQuestions", "replay_questions"]

REPLAY_N = 20
"""Questions a weekly replay asks by default (the maintenance loop's "about 20 fresh questions a week")."""


@dataclass(frozen=True)
class ReplayQuestions:
    """What the replay asks, and the window it was drawn from."""

    sample: Sample
    questions: tuple[Question, ...]
    """One unlabelled question per picked group, in the sample's order (most asked first)."""


def replay_questions(
    entries: Sequence[LogEntry], settings: SampleSettings, role_tag: str = "role", as_of_tag: str = "as_of"
) -> ReplayQuestions:
    """The ``settings.n`` most asked distinct questions of the window (ties broken by the seed).

    ``role_tag`` and ``as_of_tag`` are the tags the metadata filters read (``filters.role_tag``,
    ``filters.as_of_tag``); a question asked under several roles takes the most frequent one.
    """
    picked = sample(entries, replace(settings, failure_share=0.0))
    questions = []
    for group, _ in picked.picked:
        tags: dict[str, object] = {"source": "log", "lang": group.lang, "frequency": group.frequency}
        tags[as_of_tag] = group.last_seen.date().isoformat()
        if group.roles:
            tags[role_tag] = group.roles[0]
        # Unlabelled: no answers, no evidence; the mode says so, and nothing here scores it.
        questions.append(Question(group_id(group.key), group.question, (), False, (), "none", tags))
    return ReplayQuestions(picked, tuple(questions))
