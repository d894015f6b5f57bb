"""A per-question unit mask held as one row per distinct question kind, not one row per question.

Metadata filters decide what a question may retrieve from its role and date only, so the
questions x units mask has as many distinct rows as there are (role, date) pairs, usually one.
Held whole it is questions x units booleans: squad2-en grown 8x (48,624 questions, 32,240 units
in its smallest chunking) made 1.5 GB per mask and 5.3 GB for a chunking's three. :class:`UnitMask`
keeps the distinct rows and each question's row number, and gives back exactly the entries or
rows of the whole mask that a reader indexes (a block of questions, one question's units, a
question x rank table of units).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np


@dataclass(frozen=True)
class UnitMask:
    """``mask[q, u]`` of a (questions, units) bool mask, from ``kinds[row_of[q], u]``."""

    row_of: np.ndarray
    """(questions,) intp: each question's row of ``kinds``."""
    kinds: np.ndarray
    """(distinct rows, units) bool."""

    @property
    def shape(self) -> tuple[int, int]:
        return len(self.row_of), self.kinds.shape[1]

    def __getitem__(self, item: Any) -> np.ndarray:
        """The whole mask's ``mask[item]`` for questions (a slice, rows) or (questions, units) indices."""
        if isinstance(item, tuple):
            rows, units = item
            return self.kinds[self.row_of[rows], units]
        return self.kinds[self.row_of[item]]

    def __and__(self, other: UnitMask) -> UnitMask:
        """Both masks at once (when both share their question rows, as an :class:`Access`'s two do)."""
        if self.row_of is not other.row_of and not np.array_equal(self.row_of, other.row_of):
            raise ValueError("masks of different question rows")
        return UnitMask(self.row_of, self.kinds & other.kinds)

    def at_ranks(self, units: np.ndarray) -> np.ndarray:
        """``take_along_axis(mask, units, axis=1)``: per question, the mask of each of its (n_q, N) units."""
        return self.kinds[self.row_of[:, None], units]

    def dense(self) -> np.ndarray:
        """The whole (questions, units) mask (small sets and tests only: it is what this avoids)."""
        return self.kinds[self.row_of]


Mask = np.ndarray | UnitMask
"""A per-question unit mask as readers index it: a whole bool array (a block of it), or a :class:`UnitMask`."""
