"""What the annotation page asks for, as JSON-able dicts: the queue, one question, a document, a search, an edit.

Transport-free (the HTTP handler in :mod:`evalkit.curate.annotate.server`
only routes and guards): every answer is built from the store and the
documents the store read, so nothing here can name a file.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from evalkit.curate.annotate.candidates import Candidates
from evalkit.curate.annotate.checks import duplicates, is_trivial
from evalkit.curate.annotate.entries import EditError, Entry, entry_json
from evalkit.curate.annotate.store import AnnotationStore
from evalkit.curate.sampling import language
from evalkit.records import Span

__all__ = ["AnnotationApi", "EditError", "NotFound"]

MAX_FIND = 50
SNIPPET = 60


class NotFound(LookupError):
    """A question or document id the set does not hold."""


def _span(span: Span) -> dict[str, Any]:
    return {"doc_id": span.doc_id, "start": span.start, "end": span.end, "text": span.text}


class AnnotationApi:
    """The page's view of one set."""

    def __init__(self, store: AnnotationStore) -> None:
        self.store = store
        self.candidates = Candidates(store.documents)

    def state(self) -> dict[str, Any]:
        """The queue with each question's status, progress and the resume point."""
        entries, last, base = self.store.snapshot()
        rows = []
        for item in self.store.items:
            entry = entries.get(item.id, Entry())
            status = entry.status if entry.status != "untouched" else ("labelled" if item.id in base else "todo")
            tags = item.tags
            rows.append(
                {
                    "id": item.id,
                    "question": item.question,
                    "status": status,
                    "frequency": tags.get("frequency"),
                    "failure": bool(tags.get("failure")),
                    "source": tags.get("source", ""),
                }
            )
        ids = [r["id"] for r in rows]
        after = ids.index(last) + 1 if last in ids else 0
        todo = [r["id"] for r in rows[after:] + rows[:after] if r["status"] == "todo"]
        docs = [
            {"doc_id": d.doc_id, "title": d.title or d.doc_id, "n_chars": len(d.text), "lang": language(d.text[:2000])}
            for d in self.store.documents.values()
        ]
        return {
            "set": self.store.root.resolve().name,
            "questions": rows,
            "done": sum(r["status"] in ("labelled", "unanswerable") for r in rows),
            "skipped": sum(r["status"] == "skipped" for r in rows),
            "resume": todo[0] if todo else (last or (ids[0] if ids else "")),
            "documents": docs,
            "problems": list(self.store.problems)[:20],
        }

    def question(self, qid: str) -> dict[str, Any]:
        """One question: its tags, decision, candidates, duplicates and the trivial flag."""
        try:
            item = self.store.item(qid)
        except EditError:
            raise NotFound(f"no question {qid!r}") from None
        entries, _, base = self.store.snapshot()
        entry = entries.get(qid, Entry())
        texts = {d: doc.text for d, doc in self.store.documents.items()}
        labelled = [(i, q) for i, q in self.store.labelled_questions() if i != qid]
        found = self.candidates.for_question(item.question, item.returned)
        twins = duplicates(item.question, labelled)
        return {
            "id": item.id,
            "question": item.question,
            "tags": dict(item.tags),
            "variants": list(item.variants),
            "entry": entry_json(entry) | {"evidence_mode": entry.evidence_mode},
            "earlier": base.get(qid),
            "proposed": [_span(s) for s in item.proposed],
            "candidates": [_span(c.span) | {"source": c.source, "score": round(c.score, 3)} for c in found],
            "duplicates": [{"id": i, "question": q, "similarity": round(j, 3)} for i, q, j in twins],
            "trivial": entry.status == "labelled" and is_trivial(entry.evidence, texts),
        }

    def document(self, doc_id: str) -> dict[str, Any]:
        doc = self.store.documents.get(doc_id)
        if doc is None:
            raise NotFound(f"no document {doc_id!r} in this set")
        return {"doc_id": doc.doc_id, "title": doc.title or doc.doc_id, "text": doc.text}

    def find(self, needle: str) -> dict[str, Any]:
        """Case-insensitive substring matches of ``needle`` across every document (the first ones, in context)."""
        needle = needle.strip()
        hits: list[dict[str, Any]] = []
        for doc in self.store.documents.values() if needle else ():
            lowered = doc.text.lower()
            # lower() may change a text's length (İ): offsets are exact only where it does not, else match as is
            haystack, wanted = (lowered, needle.lower()) if len(lowered) == len(doc.text) else (doc.text, needle)
            at = haystack.find(wanted)
            while at >= 0 and len(hits) < MAX_FIND:
                end = at + len(wanted)
                snippet = doc.text[max(0, at - SNIPPET) : end + SNIPPET]
                hits.append({"doc_id": doc.doc_id, "start": at, "end": end, "snippet": snippet})
                at = haystack.find(wanted, end)
        return {"query": needle, "hits": hits, "truncated": len(hits) >= MAX_FIND}

    def edit(self, payload: Mapping[str, Any]) -> dict[str, Any]:
        """Apply an edit (``{"id", "op", ...}``) and return the question as saved."""
        qid, op = payload.get("id"), payload.get("op")
        if not isinstance(qid, str) or not isinstance(op, str):
            raise EditError("an edit needs 'id' and 'op'")
        self.store.edit(qid, op, payload)
        return self.question(qid) | {"saved": True}
