"""The metric registry: one module per metric family, each with two forms side by side.

- the **per-question** form: pure Python over one question's ranked list of
  relevance flags (best first, after threshold filtering), as trec_eval and
  ranx define it; this is the definition, cross-checked against ranx and
  ragas in ``tests/test_metrics_reference.py``;
- the **vectorised** form: numpy over every question of a chunking at once,
  a :class:`~evalkit.scoring.ir.returned.Returned` (questions x pool-rank
  matrix of what was returned); this is what the sweep runs.

``tests/test_slicing.py`` (hypothesis) and ``tests/test_registry.py`` (hand-worked
values) keep the two forms equal. Each metric is declared once, in its own module, as a
:class:`~evalkit.scoring.ir.metric.Metric`: both forms and its column (label, direction,
unit, definition, whether the objective and the gate may name it); :data:`FORMS` collects them.

Families: :mod:`.hit` (hit@k), :mod:`.precision` (precision@k, recall_trec@k),
:mod:`.context_precision`, :mod:`.reciprocal_rank` (MRR), :mod:`.ndcg`,
:mod:`.zero_hit`, :mod:`.coverage` (multi-hop span coverage and evalkit's
headline recall@k, which is hit@k for mode ``any``).

Adding a metric: a new module with ``<name>_at_k(rel, k, ...)``, ``<name>_matrix(returned)``
and ``METRICS = (Metric(...),)``, and a hand-worked case in ``tests/test_registry.py``;
the registry, the slicing and the rows the sweep writes pick it up from the declaration.
"""

from __future__ import annotations

from evalkit.scoring.ir.forms import FORMS, WRITTEN, JudgedRanking, Metric
from evalkit.scoring.ir.returned import Returned, returned_mask

__all__ = ["FORMS", "WRITTEN", "JudgedRanking", "Metric", "Returned", "returned_mask"]
