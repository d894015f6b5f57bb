"""Curation: growing a labelled set, from production's query log to annotated questions.

- ``querylog`` (reading a production query log, JSONL or CSV), ``traces`` (an OTLP
  JSON trace export read as one: GenAI retrieval spans and OpenInference ``RETRIEVER``
  spans), ``loghits`` (what production returned, placed in the documents) and ``sampling``
  (frequent questions and known failures from a window of it, near-duplicates
  folded); ``sampleset`` writes the sample as an unlabelled set with a queue;
- ``queue``: ``queue.jsonl``, the questions waiting for an annotator;
- ``annotate/``: the local page that anchors questions to document spans;
- ``failures``: the questions a run's production config missed, queued again;
- ``generate``: synthetic candidate questions with source spans (optional);
- ``reanchor/``: labels in changed documents checked against the documents
  as labelled and found again, never guessed; the set rewritten, ambiguous,
  lost and proposed questions queued (``labels reanchor``);
- ``cli``: their subcommands, added to ``python -m evalkit.labels`` (the one
  entry point for labelled sets).

Curation writes labelled sets in :mod:`evalkit.labels`' format and reads them
with its reader; ``labels/`` never imports curation. May import: ``records``,
``labels``, ``cache``, ``confdir`` and, one module each, ``retrieval``
(``annotate/candidates``: the sweep's own BM25 ranks the candidate passages),
``answers`` (``generate``, ``cli``: a generator writes synthetic questions),
``scoring`` and ``run`` (``failures``: the run folder's files and its
production config); no module joins two of those stages
(``tests/test_architecture.py``).
"""
