"""How many questions ``position=powered`` asks this time (pure): a pilot, then the size its discordance needs.

The main estimand is the paired head-vs-mid difference in accuracy on
retrieve-5, the question as the unit. Its power rests on the discordance psi
(the share of questions answered right at one placement and wrong at the
other), which no one knows before asking. So the first invocation asks a pilot
of ``position.pilot_questions``; every later invocation measures psi on the rows
already answered, asks :func:`evalkit.scoring.stats.power.questions_for_paired_binary`
how many questions reach 80% exact McNemar power at ``position.target_mde``, and
plans that many (answers are cached: the questions already answered cost
nothing). The size is planned at the upper one-sided 80% Wilson bound of the
measured psi (:func:`evalkit.scoring.stats.noninferiority.planning_discordance`,
the answer check's too): planned at the pilot's own psi, half the sizes fell short
of 80% power (an unlucky low pilot under-sizes); at the bound, the stated size has
80% power in most pilots (``tests/test_position_sizing.py`` quotes the share).
When the planning psi < target no size can detect it (an effect cannot exceed the
discordance): the plan says so and asks no more, unless ``position.max_questions``
says how many to ask anyway (a pilot's psi is itself uncertain).

Clusters: the effects resample the sweep's clusters (the question's source document) and state their MDE at
n / design effect, so the size is the independent one times the design effect measured on the rows so far
(:func:`evalkit.scoring.stats.cluster_intervals.measured_design_effect`; 1 by question).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import pandas as pd

from evalkit.answers.position.settings import PositionSettings
from evalkit.scoring.clusters import labels_for
from evalkit.scoring.stats.cluster_intervals import measured_design_effect
from evalkit.scoring.stats.noninferiority import planning_discordance
from evalkit.scoring.stats.power import questions_for_paired_binary

HEAD, MID = "gold_at:head", "gold_at:mid"
MAIN_ARM = "retrieve-5"
"""The arm the powered run is sized on (its placements run on every question)."""


@dataclass(frozen=True)
class PoweredSize:
    """The size of this invocation and why."""

    n_candidates: int
    """Questions of the seeded, stratified order to plan (some may be skipped for want of a clean placement)."""
    pilot: bool
    """True: no discordance measured yet (or fewer questions than the pilot): the pilot's size."""
    n_measured: int
    """Questions with both head and mid scored on the main arm in earlier rows."""
    discordance: float | None
    """Measured share of discordant questions, head vs mid; None before any."""
    needed: int | None
    """Placed questions 80% power at the target needs at the planning discordance; None: unreachable."""
    placed_share: float
    """Share of candidate questions that earlier plans placed cleanly on the main arm (1.0 before any)."""
    available: int
    """Questions in the labelled set."""
    design_effect: float = 1.0
    """Measured on the head-vs-mid differences so far with the sweep's clusters; ``needed`` is multiplied by it."""
    planning: float | None = None
    """The discordance the size is planned at: the upper one-sided 80% Wilson bound of ``discordance``."""

    @property
    def target_met(self) -> bool:
        return self.needed is not None and self.n_measured >= self.needed


def measured_discordance(
    rows: pd.DataFrame | None, clusters: pd.Series | None = None
) -> tuple[int, float | None, float]:
    """(questions, share discordant, design effect) of head vs mid on the main arm; shuffles collapsed within a
    question first. The design effect is measured on the paired differences with ``clusters`` (1.0 without)."""
    if rows is None or rows.empty or "correct" not in rows:
        return 0, None, 1.0
    main = rows[(rows["arm"] == MAIN_ARM) & rows["placement"].isin((HEAD, MID)) & rows["correct"].notna()]
    if main.empty:
        return 0, None, 1.0
    shares = main.assign(correct=main["correct"].astype(bool).astype(float))
    wide = shares.groupby(["question_id", "placement"])["correct"].mean().unstack("placement")
    if HEAD not in wide or MID not in wide:
        return 0, None, 1.0
    paired = wide[[HEAD, MID]].dropna()
    if paired.empty:
        return 0, None, 1.0
    labels = labels_for(paired.index.to_numpy(), clusters)
    diffs = (paired[HEAD] - paired[MID]).to_numpy()
    effect = 1.0 if labels is None else measured_design_effect(diffs, labels)
    return len(paired), float((paired[HEAD] != paired[MID]).mean()), effect


def powered_size(
    settings: PositionSettings,
    available: int,
    rows: pd.DataFrame | None,
    candidates_before: int,
    clusters: pd.Series | None = None,
) -> PoweredSize:
    """The size of this invocation from the earlier rows (None: a first invocation).

    ``candidates_before``: candidate questions the earlier plan held (the placed
    share corrects for questions skipped as unclean); ``questions_for(effect,
    discordance, max_n)``: questions for 80% exact power (the stats package's), times the design effect
    measured with ``clusters`` (question_id -> cluster, the sweep's).
    """
    cap = min(available, settings.max_questions or available)
    n_measured, psi, effect = measured_discordance(rows, clusters)
    placed_share = 1.0 if not candidates_before else max(n_measured / candidates_before, 0.05)
    if psi is None or candidates_before < min(settings.pilot_questions, cap):
        pilot = min(settings.pilot_questions, cap)
        return PoweredSize(pilot, True, n_measured, psi, None, placed_share, available, effect)
    planning = planning_discordance(round(psi * n_measured), n_measured)
    needed = questions_for_paired_binary(settings.target_mde, planning, max_n=available) if planning > 0 else None
    needed = None if needed is None else math.ceil(needed * effect)
    if needed is None:  # unreachable at the measured discordance: grow only as far as the user asked
        wanted = cap if settings.max_questions else candidates_before
    else:
        wanted = math.ceil(needed / placed_share)
    n = min(cap, max(wanted, candidates_before))  # never fewer than already asked: the run only grows
    return PoweredSize(n, False, n_measured, psi, needed, placed_share, available, effect, planning)


def describe_size(size: PoweredSize, settings: PositionSettings) -> str:
    """One line for the console and the plan: the size, what it rests on, and whether the target is reachable."""
    target = f"{settings.target_mde:.0%}"
    if size.pilot:
        return (
            f"position=powered: pilot of {size.n_candidates} questions (of {size.available}); the next invocation "
            f"measures the head-vs-mid discordance and re-plans the size for a {target} effect at 80% power"
        )
    psi = f"discordance {size.discordance:.2f} measured on {size.n_measured} questions"
    if size.planning is not None:
        psi += f" (planned at {size.planning:.2f}, its upper 80% Wilson bound)"
    if size.needed is None:
        return (
            f"position=powered: {psi}: a {target} effect is not detectable at any size up to the set "
            f"({size.available} questions; an effect cannot exceed the discordance); asking {size.n_candidates} "
            "(position.max_questions=<n> asks more anyway)"
        )
    state = "target met" if size.target_met else f"asking {size.n_candidates} candidates"
    clustered = f" (x design effect {size.design_effect:.2f} of the clusters)" if size.design_effect > 1 else ""
    return (
        f"position=powered: {psi}; {target} at 80% exact power needs {size.needed} placed questions{clustered}: {state}"
    )
