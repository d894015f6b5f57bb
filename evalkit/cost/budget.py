"""A spending cap checked before every paid call.

The guard is asked before a call is sent, with what that call will cost; if
the spend so far plus the call would exceed the cap it refuses, so the sweep
stops *before* the call that would cross the line. Everything paid for so
far is already in the cache, so the same command with a higher cap resumes
where it stopped and reaches the same results.
"""

from __future__ import annotations

from dataclasses import dataclass, field


class BudgetExceeded(RuntimeError):
    """The next paid call would take the spend over ``budget_usd``."""


@dataclass
class SpendGuard:
    """Spend so far against a cap (None: no cap, spend is still counted)."""

    limit_usd: float | None = None
    spent_usd: float = 0.0
    by_item: dict[str, float] = field(default_factory=dict)

    def charge(self, usd: float, what: str) -> None:
        """Record a call about to be sent; raise BudgetExceeded (sending nothing) if it would cross the cap."""
        if usd <= 0:
            return
        if self.limit_usd is not None and self.spent_usd + usd > self.limit_usd + 1e-12:
            raise BudgetExceeded(
                f"budget_usd={self.limit_usd:g} reached: spent ${self.spent_usd:.4f}, the next call ({what}) "
                f"costs ${usd:.4f}; raise budget_usd and run the same command to resume"
            )
        self.spent_usd += usd
        self.by_item[what.split(":")[0]] = self.by_item.get(what.split(":")[0], 0.0) + usd
