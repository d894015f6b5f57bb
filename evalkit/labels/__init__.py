"""Labelled-set tooling: validate, describe, check, import and export (``python -m evalkit.labels``).

Every module is importable without side effects; the functions below are
pure unless named for writing (``write_*``) or reading (``read_*``, ``*_load``,
``import_*``).
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
