"""``sample``: a query log and a folder of documents in, an unlabelled set (documents and a queue) out.

Writes the documents in the labelled-set format (:func:`evalkit.labels.write.write_labelset`,
with an empty ``questions.jsonl``) and the sampled questions into
``queue.jsonl`` (:mod:`evalkit.curate.queue`), which ``annotate`` opens. The log is a JSONL/CSV
query log or an OTLP JSON trace export (:mod:`evalkit.curate.traces`).
With ``append``, the set's documents stay as they are and only questions
not yet queued or labelled (same folded text) join the queue: the weekly
replay of fresh production questions.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from evalkit.curate.loghits import with_anchored_content
from evalkit.curate.querylog import read_query_log
from evalkit.curate.queue import QUEUE, QueueItem, items_from_sample, merge_queue, read_queue, write_queue
from evalkit.curate.sampling import Sample, SampleSettings, fold_key, group_id, sample
from evalkit.labels.load import read_documents
from evalkit.labels.locate import build_locator
from evalkit.labels.write import write_labelset

__all__ = ["SampleOutcome", "sample_into_set"]


@dataclass(frozen=True)
class SampleOutcome:
    """What ``sample`` did, for the command's summary."""

    out: Path
    picked: Sample
    added: tuple[QueueItem, ...]
    """Items that joined the queue (with ``append``: the new ones only)."""
    problems: tuple[str, ...]
    """Log rows skipped, one line each."""
    rows: int
    unknown_docs: tuple[str, ...]
    """Document ids production returned that the corpus does not hold."""


def _labelled_keys(out: Path) -> set[str]:
    """Ids of the questions already in ``questions.jsonl`` and of their folded texts."""
    path = out / "questions.jsonl"
    keys: set[str] = set()
    for line in path.read_text(encoding="utf-8").splitlines() if path.is_file() else ():
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(record, dict) and isinstance(record.get("question"), str):
            keys.add(group_id(fold_key(record["question"])))
            keys.add(str(record.get("id")))
    return keys


def sample_into_set(
    log: Path, docs: Path | None, out: Path, settings: SampleSettings, *, append: bool = False, overwrite: bool = False
) -> SampleOutcome:
    """Sample ``log`` into the set at ``out``; raises ``LabelsetError``/``ValueError``/``OSError`` on unusable input."""
    reading = read_query_log(log)
    if not reading.entries and reading.problems:  # say why, not only that nothing is left
        raise ValueError(f"no usable row in {log}: {len(reading.problems)} skipped, the first {reading.problems[0]}")
    if append:
        if not (out / "docs.jsonl").is_file():
            raise ValueError(f"{out}: --append needs an existing set (docs.jsonl); run sample without --append first")
        documents = read_documents(out)
    else:
        if docs is None:
            raise ValueError("--docs DOCS is needed (the corpus the questions are answered from)")
        documents = read_documents(docs)
    by_id = {d.doc_id: d for d in documents}
    # Traces may log the returned content rather than ids: it is shown where it occurs in the corpus.
    loose = any(h.text and not h.doc_id for e in reading.entries for h in e.hits)
    entries = with_anchored_content(reading.entries, documents, build_locator(documents) if loose else None)
    picked = sample(entries, settings)
    items = items_from_sample(picked, by_id)
    unknown = sorted({s.doc_id for g, _ in picked.picked for s in g.returned if s.doc_id not in by_id})
    if append:
        existing, problems = read_queue(out, by_id)
        if problems:
            raise ValueError(f"{out / QUEUE}: {len(problems)} unreadable line(s), first: {problems[0]}")
        known = _labelled_keys(out) | {group_id(fold_key(i.question)) for i in existing}
        merged = merge_queue(existing, items, known)
        added = tuple(merged[len(existing) :])
        write_queue(out, merged)
    else:
        if (out / "annotations.json").exists():
            raise FileExistsError(f"{out} holds annotations (annotations.json); use --append, or another folder")
        write_labelset(out, documents, [], overwrite=overwrite)
        write_queue(out, items)
        added = tuple(items)
    return SampleOutcome(out, picked, added, reading.problems, reading.rows, tuple(unknown))
