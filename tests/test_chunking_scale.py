"""Chunking and chunk health on pathological documents: exact spans, full coverage, bounded sizes and memory.

Long lines, long runs without separators, deep heading nesting and huge
tables, kept small here (a few thousand characters) so the suite stays fast;
the 0.1-5 MB sizes are ``benchmarks/chunking_scale.py``'s. The memory test
guards the quadratic paths issue 13 found (a heading-first line used 24 GB).
"""

from __future__ import annotations

import tracemalloc

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from evalkit.chunking.chunkers import CHUNKERS, chunk_document
from evalkit.chunking.health import MAX_EXAMPLES, chunk_health
from evalkit.chunking.markdown_parse import MAX_TITLE
from evalkit.records import Chunk, ChunkingSpec, Document
from tests.test_chunking import check_invariants, check_parents

SCALE = settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])

UNITS = ["word ", "x", "中", "今天天气", "e\u0301", "|", "| a ", ")", ".", "...", "-", "#", " ", "\t", "  ", "。", "，"]


@st.composite
def long_lines(draw: st.DrawFn) -> str:
    """One line of a few thousand characters: repeated units, maybe opened as a heading, a table row or a fence."""
    lead = draw(st.sampled_from(["", "# ", "###### ", "| ", "```", "def f(", "    "]))
    units = draw(st.lists(st.sampled_from(UNITS), min_size=1, max_size=4))
    return lead + "".join(units) * draw(st.integers(500, 1500))


no_separators = st.builds(
    lambda unit, n: unit * n,
    st.sampled_from(["x", "中", "ab", "e\u0301", "👍🏽", "-", "...", "))", "|"]),
    st.integers(1000, 4000),
)


@st.composite
def deep_nesting(draw: st.DrawFn) -> str:
    """Headings nested and re-nested (levels 1-7), with bodies short, long or missing."""
    lines = []
    for level in draw(st.lists(st.integers(1, 7), min_size=50, max_size=300)):
        lines.append("#" * level + " " + draw(st.sampled_from(["T", "Title words", "x" * 300, ""])))
        lines.append(draw(st.sampled_from(["", "Body text. More.", "word " * 40, "| a |\n|---|\n| 1 |"])))
    return "\n".join(lines)


@st.composite
def huge_tables(draw: st.DrawFn) -> str:
    """One or more pipe tables of many rows, some rows longer than a chunk, maybe under a heading."""
    parts = []
    for _ in range(draw(st.integers(1, 3))):
        columns = draw(st.integers(1, 6))
        rows = ["| " + " | ".join(f"h{i}" for i in range(columns)) + " |", "|" + "---|" * columns]
        for r in range(draw(st.integers(50, 400))):
            cell = draw(st.sampled_from(["1", "word", "x" * 200, ""]))
            rows.append("| " + " | ".join(f"{cell}{r}" for _ in range(columns)) + " |")
        parts.append(draw(st.sampled_from(["", "# Tables\n", "## Data\n\n"])) + "\n".join(rows))
    return "\n\n".join(parts)


pathological = st.one_of(long_lines(), no_separators, deep_nesting(), huge_tables())


@st.composite
def small_specs(draw: st.DrawFn, chunker: str) -> ChunkingSpec:
    size = draw(st.sampled_from([8, 33, 64, 128]))
    overlap = draw(st.sampled_from([0, 1, size // 4, size - 1]))
    return ChunkingSpec(chunker, size, overlap)


def check_health(doc: Document, chunks: tuple[Chunk, ...]) -> None:
    """Health runs, counts stay within the chunks, and examples are few and short whatever the document."""
    health = chunk_health([doc], chunks)
    assert health.n_chunks == len(chunks)
    for check in health.checks:
        assert 0 <= check.count <= len(chunks)
        assert len(check.examples) == min(check.count, MAX_EXAMPLES)
        assert all(len(e.detail) < 4 * MAX_TITLE for e in check.examples)


@pytest.mark.parametrize("chunker", sorted(CHUNKERS))
@SCALE
@given(data=st.data(), text=pathological, path=st.sampled_from(["doc.md", "doc.py"]))
def test_pathological_documents_keep_every_invariant(chunker: str, data: st.DataObject, text: str, path: str) -> None:
    spec = data.draw(small_specs(chunker))
    doc = Document("doc", text, path=path)
    chunks = chunk_document(doc, spec)
    check_invariants(doc, spec, chunks)
    if chunker == "parent_child":
        check_parents(doc, spec, chunks)
    # Labels stay short even when a heading line is the whole document.
    for chunk in chunks:
        assert all(len(title) <= MAX_TITLE for title in chunk.section_path)
        assert len(chunk.prefix) <= 6 * (MAX_TITLE + 3) + 200  # a breadcrumb of six titles, a table head
    check_health(doc, chunks)


def test_a_heading_that_is_the_whole_document_gets_a_capped_title() -> None:
    doc = Document("d", "# " + "word " * 2000)
    chunks = chunk_document(doc, ChunkingSpec("markdown", 100, 10))
    assert len(chunks) > 50
    title = chunks[0].section_path[0]
    assert len(title) == MAX_TITLE and title.endswith("…") and title.startswith("word word")
    assert all(c.section_path == (title,) for c in chunks)
    assert {c.prefix for c in chunks[1:]} == {title + "\n"}
    assert chunks[0].prefix == ""  # the first chunk begins with its heading line


def _heading_first(n: int) -> str:
    return "# " + ("lorem ipsum dolor " * (n // 18 + 1))[: n - 2]


def _table(n: int) -> str:
    rows = ["| a | b |", "|---|---|"] + [f"| {i} | row {i} |" for i in range(n // 12)]
    return "# Table\n" + "\n".join(rows)


def _nesting(n: int) -> str:
    return "\n".join(f"{'#' * (i % 6 + 1)} H{i}\nbody {i}." for i in range(n // 16))


def _code(n: int) -> str:
    return "\n".join(f"class C{i}:\n    def m(self):\n        return {i}" for i in range(n // 40))


@pytest.mark.parametrize("chunker", sorted(CHUNKERS))
@pytest.mark.parametrize("shape", [_heading_first, _table, _nesting, _code], ids=lambda f: f.__name__.strip("_"))
def test_peak_memory_stays_linear(chunker: str, shape) -> None:  # type: ignore[no-untyped-def]
    # Before issue 13's fix a heading-first line of 40k characters peaked at 700-3,400 bytes a
    # character (a copy of the line per chunk); linear code stays near 10-40.
    text = shape(40_000)
    doc = Document("d", text, path="d.py" if shape is _code else "d.md")
    tracemalloc.start()
    try:
        chunk_health([doc], chunk_document(doc, ChunkingSpec(chunker, 64, 16)))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak / len(text) < 150, f"{peak / len(text):.0f} bytes per character"
