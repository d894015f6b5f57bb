"""Every metric of :mod:`evalkit.scoring.ir`, collected from the modules that declare them (pure).

A module of this package that defines a metric ends with ``METRICS``, a tuple of
:class:`~evalkit.scoring.ir.metric.Metric` (name, per-question form, vectorised form, column);
nothing else lists metrics. Names are those of the result columns the sweep writes
(``recall``, ``hit``, ``precision``, ``recall_trec``, ``context_precision``, ``mrr``, ``ndcg``,
``zero_hit``) plus ``span_recall`` (multi-hop coverage alone, no column).
"""

from __future__ import annotations

import importlib
import pkgutil

from evalkit.scoring import ir
from evalkit.scoring.ir.metric import JudgedRanking, Metric, PerQuestion, Vectorised

__all__ = ["FORMS", "WRITTEN", "JudgedRanking", "Metric", "PerQuestion", "Vectorised"]


def _declared() -> tuple[Metric, ...]:
    """Every ``METRICS`` entry of the package's modules, in their declared ``order``; names unique."""
    found: list[Metric] = []
    for info in sorted(pkgutil.iter_modules(ir.__path__), key=lambda i: i.name):
        module = importlib.import_module(f"{ir.__name__}.{info.name}")
        found.extend(getattr(module, "METRICS", ()))
    names = [m.name for m in found]
    duplicated = sorted({n for n in names if names.count(n) > 1})
    if duplicated:
        raise ValueError(f"metrics declared twice in evalkit.scoring.ir: {', '.join(duplicated)}")
    return tuple(sorted(found, key=lambda m: (m.order, m.name)))


FORMS: dict[str, Metric] = {m.name: m for m in _declared()}
"""Metric name to its declaration. ``recall`` is evalkit's answer recall; ``recall_trec`` is trec_eval's."""

WRITTEN: tuple[Metric, ...] = tuple(m for m in FORMS.values() if m.column is not None)
"""The metrics the sweep writes as result columns, in column order."""
