"""The measures the report and the gate compare: names and meaning from the registry, values from scoring.

What a measure means (label, column, subset, direction, unit) lives in
:mod:`evalkit.scoring.registry`; how its per-question values are taken from
the result rows lives in :mod:`evalkit.scoring.values`. This module keeps the
names report modules import.
"""

from __future__ import annotations

from evalkit.scoring.compare import is_binary
from evalkit.scoring.registry import HEADLINE, MEASURES, Measure, Subset, measure
from evalkit.scoring.values import available, matrix, per_question

__all__ = ["HEADLINE", "MEASURES", "Measure", "Subset", "available", "is_binary", "matrix", "measure", "per_question"]
