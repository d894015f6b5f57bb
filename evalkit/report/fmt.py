"""Numbers as the report prints them (pure string formatting; the numbers are computed elsewhere).

A named quantity is printed in its unit (``proportion``, ``usd``, ``tokens``, ...), which the caller looks up in
review.json's unit table (:meth:`evalkit.run.review.Review.unit`): this module knows no measure.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, Protocol


class _Interval(Protocol):
    mean: float
    low: float
    high: float


class _Paired(Protocol):
    delta: float
    delta_low: float
    delta_high: float


MINUS = "\u2212"


def _finite(x: float | None) -> bool:
    return x is not None and not math.isnan(x) and not math.isinf(x)


def resampled(cluster_by: str | None) -> str:
    """How a note names the unit an interval resamples (review.json's ``statistics.cluster_by``):
    ``clustered by document``, ``by question`` (also for runs made before clusters), ``clustered by tag 'x'``."""
    if cluster_by in (None, "", "question"):
        return "by question"
    return "clustered by document" if cluster_by == "document" else f"clustered by tag {cluster_by!r}"


def pct(x: float | None, digits: int = 1) -> str:
    """0.7241 -> ``72.4%``."""
    return f"{100 * x:.{digits}f}%" if _finite(x) else "n/a"


def num(x: float | None, digits: int = 3) -> str:
    if not _finite(x):
        return "n/a"
    return f"{x:,.{digits}f}".replace("-", MINUS)


def signed_points(x: float | None, digits: int = 1) -> str:
    """A difference of proportions in percentage points: 0.012 -> ``+1.2``."""
    if not _finite(x):
        return "n/a"
    if x != 0 and abs(100 * x) < 0.5 * 10**-digits:
        digits += 1  # never print a nonzero difference as "-0.0"
    return f"{100 * x:+.{digits}f}".replace("-", MINUS)


def count(n: float | int | None) -> str:
    return "n/a" if n is None or (isinstance(n, float) and not _finite(n)) else f"{int(n):,}"


def value(x: float | None, proportion: bool) -> str:
    return pct(x) if proportion else money(x)


def money(x: float | None) -> str:
    if not _finite(x):
        return "n/a"
    return f"${x:,.4f}" if abs(x) < 1 else f"${x:,.2f}"


def interval(ci: _Interval | None, proportion: bool = True) -> str:
    """``72.4% [68.1, 76.5]`` (a 95% CI, bounds in the same unit)."""
    if ci is None:
        return "n/a"
    if proportion:
        return f"{pct(ci.mean)} [{100 * ci.low:.1f}, {100 * ci.high:.1f}]"
    return f"{money(ci.mean)} [{money(ci.low)}, {money(ci.high)}]"


def delta(c: _Paired | None, proportion: bool = True) -> str:
    """``+1.2 points [−0.8, +3.1]`` for proportions, dollars otherwise."""
    if c is None:
        return "n/a"
    if proportion:
        return f"{signed_points(c.delta)} points [{signed_points(c.delta_low)}, {signed_points(c.delta_high)}]"
    return f"{_signed_money(c.delta)} [{_signed_money(c.delta_low)}, {_signed_money(c.delta_high)}]"


def check_delta(check: Mapping[str, Any]) -> str:
    """A gate check's difference: points with CI for proportions; in the metric's unit (dollars, seconds) with the
    percent change otherwise.

    When every question moved alike (the candidate is production, say) the bootstrap's interval has
    width zero: that is said in words, never printed as an interval (the gate's statistic is unchanged).
    """
    unit = check.get("unit") or ("proportion" if check.get("proportion", True) else "usd")
    if _same_everywhere(check):
        return f"{signed_quantity(unit, check['delta'])} (the same on every question: no interval)"
    if unit == "proportion":
        return (
            f"{signed_points(check['delta'])} [{signed_points(check['delta_low'])}, "
            f"{signed_points(check['delta_high'])}] points"
        )
    base, delta = check.get("baseline"), check.get("delta")
    text = signed_quantity(unit, delta)
    if _finite(base) and base and _finite(delta):
        text += f" ({100 * delta / base:+.0f}%)".replace("-", MINUS)
    if check.get("method") != "point" and _finite(check.get("delta_low")) and _finite(check.get("delta_high")):
        text += f" [{signed_quantity(unit, check['delta_low'])}, {signed_quantity(unit, check['delta_high'])}]"
    return text


def _same_everywhere(check: Mapping[str, Any]) -> bool:
    low, high = check.get("delta_low"), check.get("delta_high")
    return check.get("method") != "point" and _finite(low) and _finite(high) and low == high


def _signed_money(x: float) -> str:
    return ("+" if x >= 0 else MINUS) + money(abs(x))


def p_value(p: float | None) -> str:
    if p is None or not _finite(p):
        return "n/a"
    return "< 0.001" if p < 0.001 else f"{p:.3f}"


def threshold(t: float) -> str:
    return f"{t:g}"


def quantity(unit: str, x: float | None) -> str:
    """A value in its unit: ``72.4%``, ``$0.0041``, ``1,234`` tokens."""
    if unit == "proportion":
        return pct(x)
    if unit == "usd":
        return money(x)
    if unit in ("tokens", "count", "chars"):
        return num(x, 0) if _finite(x) and abs(x) >= 100 else num(x, 1)
    if unit == "seconds":
        return f"{num(x, 2)} s"
    return num(x)


def signed_quantity(unit: str, x: float | None) -> str:
    """A difference in its unit: points for proportions, signed dollars or counts otherwise."""
    if not _finite(x):
        return "n/a"
    if unit == "proportion":
        return signed_points(x) + " points"
    if unit == "usd":
        return _signed_money(x)
    sign = "+" if x >= 0 else MINUS
    return sign + quantity(unit, abs(x))


def signed_interval(unit: str, delta: float | None, low: float | None, high: float | None) -> str:
    """``+1.2 points [−0.8, +3.1]``; the bounds left out when absent."""
    text = signed_quantity(unit, delta)
    if _finite(low) and _finite(high):
        bounds = (signed_quantity(unit, b).replace(" points", "") for b in (low, high))
        text += " [" + ", ".join(bounds) + "]"
    return text
