"""``labels reanchor``: labels kept on their text when the documents change; what is not certain, queued.

One home for the feature: ``textkey`` (matching keys with offsets back to
the text; bit-parallel approximate search), ``fuzzy`` (the bounded fuzzy
step), ``find`` (where one span is now: context, exact, normalised, fuzzy,
never a guess), ``plan`` (a set read whole, every span to look at, the lines
to write) and ``write`` (the report, the set and the queue, atomically).
The documents as labelled come from ``--before`` or the set's own
``.history/`` (:mod:`evalkit.labels.history`).
"""

from evalkit.curate.reanchor.find import Found, Searchable, StaleSpan, find_again
from evalkit.curate.reanchor.fuzzy import FUZZY_FLOOR
from evalkit.curate.reanchor.plan import Reanchoring, plan_reanchor
from evalkit.curate.reanchor.write import apply_reanchor, format_reanchor, reanchor_hint, report_record

__all__ = [
    "FUZZY_FLOOR",
    "Found",
    "Reanchoring",
    "Searchable",
    "StaleSpan",
    "apply_reanchor",
    "find_again",
    "format_reanchor",
    "plan_reanchor",
    "reanchor_hint",
    "report_record",
]
