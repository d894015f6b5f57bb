"""Labelled sets: reading, validating, describing, checking, importing and exporting them.

Owns the on-disk format of a labelled set (``docs/``, ``docs.jsonl``,
``questions.jsonl``) and everything about its content:

- ``parse`` (fields of one line -> records and problem lines) and ``read``,
  the one reader: strict for the sweep (``load_labelset``: every problem at
  once, ``file:line: field: what``), tolerant for curation and the
  report (``read_set(path, "tolerant")``: usable questions kept, stale spans
  dropped and listed); ``load`` wraps the tolerant mode for the tools;
- ``validate`` (the sweep's verdict plus warnings; ``python -m
  evalkit.labels validate``), ``stats``, ``health`` and ``similarity``;
- importers and exporters (``squad_format``, ``ragas_format``,
  ``hf_format``, with ``anchor``/``locate`` to anchor text to spans) and
  ``write``;
- ``history`` (the documents as labelled, kept in the set's ``.history/``
  for :mod:`evalkit.curate.reanchor`, the one home of reanchoring).

May import: :mod:`evalkit.records` only (never a stage: chunking,
retrieval, answers, scoring, pipeline, report; nor :mod:`evalkit.curate`,
which grows sets in this format). ``__main__`` is an entry point: it adds
curation's subcommands (sample, annotate, add-failures, generate) to the one
``python -m evalkit.labels`` parser, importing :mod:`evalkit.curate.cli`
when it builds it. Every module is importable without side effects; the
functions are pure unless named for writing (``write_*``) or reading
(``read_*``, ``load_*``, ``*_load``, ``import_*``). ``anchor`` (text back to
document spans) needs only records, so a retriever returning bare text can
reuse it.
"""

from evalkit.labels.anchor import ImportResult
from evalkit.labels.health import Finding, LabelHealth, format_health, label_health
from evalkit.labels.hf_format import hf_rows, import_hf, read_table, write_hf
from evalkit.labels.load import TolerantSet, read_documents, tolerant_load
from evalkit.labels.locate import Location, build_locator, locate
from evalkit.labels.ragas_format import import_ragas, ragas_rows, read_rows, write_rows
from evalkit.labels.squad_format import import_squad, read_squad
from evalkit.labels.stats import LabelStats, format_stats, label_stats
from evalkit.labels.validate import Validation, validate
from evalkit.labels.write import question_record, write_labelset

__all__ = [
    "Finding",
    "ImportResult",
    "LabelHealth",
    "LabelStats",
    "Location",
    "TolerantSet",
    "Validation",
    "build_locator",
    "format_health",
    "format_stats",
    "hf_rows",
    "import_hf",
    "import_ragas",
    "import_squad",
    "label_health",
    "label_stats",
    "locate",
    "question_record",
    "ragas_rows",
    "read_documents",
    "read_rows",
    "read_squad",
    "read_table",
    "tolerant_load",
    "validate",
    "write_hf",
    "write_labelset",
    "write_rows",
]
