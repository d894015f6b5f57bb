"""``labels generate``: candidate questions with their source span, from a generator (Claude, local, fake).

Optional bootstrap for a set with no log yet. For each passage picked from
the documents (blocks of at least ``min_chars``, at most one per document per
round, in a seeded order), the generator is asked for one question the
passage answers and the exact words that answer it. The quote is anchored in
the passage (exact, else white-space-normalised, :func:`evalkit.labels.locate.locate_in_text`);
a reply that cannot be parsed or whose quote is not in the passage is
rejected (one line each), never guessed. Accepted candidates go to the
annotation queue as ``proposed`` spans, tagged ``synthetic=true`` and
``derived_label=true``: the method warns that synthetic questions flatter
scores, so the report keeps them apart from real ones.

Requests go through the generation cache (:func:`evalkit.answers.generation.generate_cached`):
asking again costs nothing.
"""

from __future__ import annotations

import hashlib
import random
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from evalkit.answers.generation.base import Generator
from evalkit.answers.generation.cached import generate_cached
from evalkit.answers.generation.request import GenerationRequest
from evalkit.cache import Cache
from evalkit.curate.annotate.candidates import passages
from evalkit.curate.queue import QueueItem
from evalkit.curate.sampling import language
from evalkit.labels.locate import locate_in_text
from evalkit.records import Document, Span

__all__ = ["Generated", "generate_candidates", "parse_reply", "pick_passages", "request_for"]

PROMPTS = {
    "en": (
        "You write evaluation questions for a company knowledge base. Given one passage, write ONE question "
        "an employee might ask that this passage answers, and quote the exact words of the passage that answer "
        "it (a short span copied character for character). Reply in exactly two lines:\n"
        "Question: <the question>\nAnswer: <the exact words from the passage>"
    ),
    "zh": (
        "你为公司知识库编写评测问题。根据给出的一段文字，写一个员工可能会问、且这段文字能回答的问题，"
        "并逐字摘录文中回答该问题的原文（一小段，逐字复制）。只回复两行：\n问题：<问题>\n答案：<原文摘录>"
    ),
}
_QUESTION = re.compile(
    r"^\s*(?:\*\*)?(?:question|q|问题)(?:\*\*)?\s*[:：]\s*(?P<text>.+?)\s*$", re.IGNORECASE | re.MULTILINE
)
_ANSWER = re.compile(
    r"^\s*(?:\*\*)?(?:answer|a|答案)(?:\*\*)?\s*[:：]\s*(?P<text>.+?)\s*$", re.IGNORECASE | re.MULTILINE
)
_QUOTES = "\"'“”‘’「」『』`"


@dataclass(frozen=True)
class Generated:
    """Candidates that were accepted, and one line per rejected reply."""

    items: tuple[QueueItem, ...]
    rejected: tuple[str, ...]
    requests: int


def pick_passages(documents: Sequence[Document], n: int, seed: int = 0, min_chars: int = 40) -> list[Span]:
    """``n`` passages: documents in a seeded order, one passage each per round, so every document is used."""
    rng = random.Random(seed)
    pools = []
    for doc in sorted(documents, key=lambda d: d.doc_id):
        blocks = [p for p in passages(doc) if len(p.text) >= min_chars and not p.text.lstrip().startswith("#")]
        rng.shuffle(blocks)
        if blocks:
            pools.append(blocks)
    rng.shuffle(pools)
    picked: list[Span] = []
    while len(picked) < n and any(pools):
        for pool in pools:
            if pool and len(picked) < n:
                picked.append(pool.pop())
    return picked


def request_for(passage: Span, doc: Document, model: str, max_tokens: int = 200) -> GenerationRequest:
    """The one-turn request asking for a question and its answer quote."""
    lang = "zh" if language(passage.text).startswith("zh") else "en"
    label = "段落" if lang == "zh" else "Passage"
    context = f"[{doc.doc_id}] {doc.title}\n{label}:\n{passage.text}"
    return GenerationRequest(
        model=model,
        system=PROMPTS[lang],
        messages=(("user", (context,)),),
        max_tokens=max_tokens,
        question_id=f"{doc.doc_id}#{passage.start}-{passage.end}",
    )


def parse_reply(reply: str) -> tuple[str, str] | None:
    """``(question, quote)`` from a reply's ``Question:``/``Answer:`` lines (or 问题：/答案：), else None."""
    question, answer = _QUESTION.search(reply), _ANSWER.search(reply)
    if question is None or answer is None:
        return None
    quote = answer["text"].strip()
    while quote != (bare := quote.strip().strip(_QUOTES).rstrip("。.").strip()):  # 「…」。 and "…".
        quote = bare
    text = question["text"].strip().strip(_QUOTES)
    return (text, quote) if text and quote else None


def anchor(passage: Span, document: str, quote: str) -> Span | None:
    """The quote's span inside the passage (exact, else white-space-normalised), or None."""
    found = locate_in_text(document, quote, passage.start, passage.end)
    if found is None:
        return None
    return Span(passage.doc_id, found[0], found[1], document[found[0] : found[1]])


def generate_candidates(
    generator: Generator,
    cache: Cache,
    documents: Mapping[str, Document],
    n: int,
    seed: int = 0,
    min_chars: int = 40,
) -> Generated:
    """Ask ``generator`` for ``n`` candidates; returns the accepted ones as queue items and the rejections."""
    items: list[QueueItem] = []
    rejected: list[str] = []
    chosen = pick_passages(list(documents.values()), n, seed, min_chars)
    for passage in chosen:
        doc = documents[passage.doc_id]
        request = request_for(passage, doc, generator.model)
        answer = generate_cached(generator, request, cache)
        where = f"{doc.doc_id}[{passage.start}:{passage.end}]"
        parsed = parse_reply(answer.text) if answer.stop_reason not in ("overflow", "error") else None
        if parsed is None:
            rejected.append(f"{where}: reply has no 'Question:' and 'Answer:' lines: {answer.text[:80]!r}")
            continue
        question, quote = parsed
        span = anchor(passage, doc.text, quote)
        if span is None:
            rejected.append(f"{where}: the quoted answer {quote[:60]!r} is not in the passage")
            continue
        digest = hashlib.sha256(f"{question}\0{span.doc_id}\0{span.start}".encode()).hexdigest()[:10]
        tags = {
            "source": "generated",
            "synthetic": True,
            "derived_label": True,
            "lang": language(question),
            "generator": generator.identity,
            "model": generator.model,
        }
        items.append(QueueItem(f"gen-{digest}", question, tags, proposed=(span,)))
    return Generated(tuple(items), tuple(rejected), len(chosen))
