"""A spending cap checked before every paid call.

The guard is asked before a call is sent, with what that call will cost; if
the spend so far plus the call would exceed the cap it refuses, so the sweep
stops *before* the call that would cross the line. Everything paid for so
far is already in the cache, so the same command with a higher cap resumes
where it stopped and reaches the same results.
"""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path


class BudgetExceeded(RuntimeError):
    """The next paid call would take the spend over ``budget_usd``."""


@dataclass
class SpendGuard:
    """Spend so far against a cap (None: no cap, spend is still counted).

    With a ``ledger`` file the spend persists across invocations of the same run: it starts
    from what earlier invocations recorded, and every charge is written before the call is
    sent, so a request counts as spent whether or not its response ever arrived.
    """

    limit_usd: float | None = None
    spent_usd: float = 0.0
    by_item: dict[str, float] = field(default_factory=dict)
    ledger: Path | None = None
    spent_before_usd: float = 0.0
    """What earlier invocations of this run spent (read from the ledger)."""

    def __post_init__(self) -> None:
        if self.ledger is not None and self.ledger.is_file():
            record = json.loads(self.ledger.read_text(encoding="utf-8"))
            self.spent_before_usd = float(record.get("spent_usd", 0.0))
            self.spent_usd = self.spent_before_usd
            self.by_item = {str(k): float(v) for k, v in (record.get("by_item") or {}).items()}

    @property
    def spent_this_invocation_usd(self) -> float:
        return self.spent_usd - self.spent_before_usd

    def charge(self, usd: float, what: str) -> None:
        """Record a call about to be sent; raise BudgetExceeded (sending nothing) if it would cross the cap."""
        if usd <= 0:
            return
        if self.limit_usd is not None and self.spent_usd + usd > self.limit_usd + 1e-12:
            raise BudgetExceeded(
                f"budget_usd={self.limit_usd:g} reached: this run spent ${self.spent_usd:.4f}, the next call ({what}) "
                f"costs ${usd:.4f}; raise budget_usd and run the same command to resume"
            )
        self.spent_usd += usd
        self.by_item[what.split(":")[0]] = self.by_item.get(what.split(":")[0], 0.0) + usd
        if self.ledger is not None:
            self._write()

    def into_ledger(self, ledger: Path) -> SpendGuard:
        """A guard on ``ledger`` under the same cap that starts from what earlier invocations recorded there plus
        what this guard already charged (calls paid before the run folder, and so its ledger, was known)."""
        guard = SpendGuard(self.limit_usd, ledger=ledger)
        if self.spent_usd > 0:
            guard.spent_usd += self.spent_usd
            for item, usd in self.by_item.items():
                guard.by_item[item] = guard.by_item.get(item, 0.0) + usd
            guard._write()
        return guard

    def _write(self) -> None:
        assert self.ledger is not None
        self.ledger.parent.mkdir(parents=True, exist_ok=True)
        text = json.dumps({"spent_usd": self.spent_usd, "by_item": self.by_item, "limit_usd": self.limit_usd})
        fd, tmp = tempfile.mkstemp(prefix=f".{self.ledger.name}.", dir=self.ledger.parent)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.replace(tmp, self.ledger)
