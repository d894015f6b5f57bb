"""Statistics over per-question metric values (pure; one module per job, re-exported here).

Every metric keeps one float per question (hit@5 in {0, 1}, context
precision in [0, 1], cost in dollars, ...); the functions here aggregate
those values into intervals, paired comparisons and planning figures.

Conventions shared by every function:

- Pure: inputs are never modified; results are frozen dataclasses.
- Missing values are ``NaN``. They are dropped (pairwise for paired data)
  and counted in the result's ``n_missing``; ``+-inf`` is an error.
- Randomness comes only from the ``seed`` argument: an ``int`` (the same
  seed gives the same result) or a ``numpy.random.Generator``, which is
  advanced. No global random state is touched.
- No interval has width zero: where a bootstrap has no spread to show, a
  score (Wilson) interval takes over and ``Interval.method`` says so.
- Power is exact (binomial over discordant pairs, noncentral t); an effect no
  test at this size can detect is ``None`` ("not detectable at this size").
- Bootstrap resamples are drawn in blocks of at most
  ``resample.BLOCK_ELEMENTS`` indices, so memory stays bounded for large
  sets and many resamples.

Modules: :mod:`.records` (result records), :mod:`.inputs` (missing values,
checks, seeds), :mod:`.resample` (bootstrap and sign-flip machinery),
:mod:`.intervals` (intervals of a mean), :mod:`.paired` (paired comparisons),
:mod:`.clustered` (intervals with the question as the unit: clustered
accuracy, paired differences, flip rates; never of width zero),
:mod:`.power` (exact power, minimum detectable effects and sizes: exact
McNemar; the t tests in :mod:`.tpower`, re-exported), :mod:`.planning` (Holm, the minimum detectable effect
as the report states it, non-inferiority). The
comparison of a config with the baseline, as the report and the gate make it,
is :mod:`evalkit.scoring.compare`.
"""

from __future__ import annotations

from evalkit.records import Interval, PairedComparison, RatioInterval
from evalkit.scoring.stats.clustered import clustered_share_ci, flip_rate_ci, paired_difference_ci
from evalkit.scoring.stats.inputs import FloatArray, Seed
from evalkit.scoring.stats.intervals import CIMethod, bootstrap_ci, studentised_ci, wilson_ci
from evalkit.scoring.stats.paired import PValueTest, paired_bootstrap, paired_permutation_test, relative_change
from evalkit.scoring.stats.planning import (
    discordance_rate,
    holm,
    minimum_detectable_effect,
    non_inferior,
    with_holm,
    within_noise,
)
from evalkit.scoring.stats.power import (
    mcnemar_exact_p,
    mcnemar_power,
    paired_binary_mde,
    paired_mean_mde,
    paired_mean_power,
    questions_for_paired_binary,
    questions_for_paired_mean,
    share_mde,
)

__all__ = [
    "CIMethod",
    "FloatArray",
    "Interval",
    "PValueTest",
    "PairedComparison",
    "RatioInterval",
    "Seed",
    "bootstrap_ci",
    "clustered_share_ci",
    "discordance_rate",
    "flip_rate_ci",
    "holm",
    "mcnemar_exact_p",
    "mcnemar_power",
    "minimum_detectable_effect",
    "non_inferior",
    "paired_binary_mde",
    "paired_bootstrap",
    "paired_difference_ci",
    "paired_mean_mde",
    "paired_mean_power",
    "paired_permutation_test",
    "questions_for_paired_binary",
    "questions_for_paired_mean",
    "relative_change",
    "share_mde",
    "studentised_ci",
    "wilson_ci",
    "with_holm",
    "within_noise",
]
