"""``python -m evalkit.labels annotate SET``: a local page for anchoring questions to document spans.

- :mod:`~evalkit.curate.annotate.checks`: save-time checks (exact slice, trivial, duplicates), pure;
- :mod:`~evalkit.curate.annotate.entries`: one question's decision, the edits, its questions.jsonl line, pure;
- :mod:`~evalkit.curate.annotate.store`: the state on disk, atomic writes under a lock;
- :mod:`~evalkit.curate.annotate.candidates`: passages worth reading (production's, BM25's);
- :mod:`~evalkit.curate.annotate.api`: what the page asks for, as JSON;
- :mod:`~evalkit.curate.annotate.server`: the HTTP server and its guards (token, origin, host);
- ``assets/``: the page (HTML, CSS, one script; text rendered with ``textContent`` only).
"""
