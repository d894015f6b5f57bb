"""Chunkers: span-exact invariants (property tests) and worked examples."""

from __future__ import annotations

import re
from itertools import pairwise

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from evalkit.chunking.chunkers import CHUNKERS, ChunkingError, chunk_corpus, chunk_document, chunker_of, validate_spec
from evalkit.records import Chunk, ChunkingSpec, Document, span_id

# --------------------------------------------------------------------------
# Invariants every chunker keeps
# --------------------------------------------------------------------------


def check_invariants(doc: Document, spec: ChunkingSpec, chunks: tuple[Chunk, ...]) -> None:
    """Assert everything a chunking of ``doc`` under ``spec`` promises."""
    text = doc.text
    ids = [c.chunk_id for c in chunks]
    assert len(ids) == len(set(ids)), "chunk ids repeat"
    for c in chunks:
        assert c.doc_id == doc.doc_id
        assert 0 <= c.start < c.end <= len(text)
        assert c.text == text[c.start : c.end]
        assert c.chunk_id == span_id(doc.doc_id, c.start, c.end)
        assert c.text.strip(), f"whitespace-only chunk {c.chunk_id}"
        assert len(c.text) <= spec.chunk_size, f"{c.chunk_id} is longer than {spec.chunk_size}"
        assert not c.prefix or c.prefix.endswith("\n")
    for a, b in pairwise(chunks):
        assert a.start < b.start and a.end < b.end, f"{a.chunk_id} then {b.chunk_id}: not in document order"
        assert a.end - b.start <= spec.chunk_overlap, f"{a.chunk_id} and {b.chunk_id} overlap too much"
    covered = bytearray(len(text))
    for c in chunks:
        covered[c.start : c.end] = b"\x01" * (c.end - c.start)
    missing = [i for i, ch in enumerate(text) if not ch.isspace() and not covered[i]]
    assert not missing, f"characters not in any chunk: {missing[:10]}"


def check_parents(doc: Document, spec: ChunkingSpec, chunks: tuple[Chunk, ...]) -> None:
    """Each child lies inside its parent; parents are the recursive chunks of the spec."""
    parents = chunk_document(doc, ChunkingSpec("recursive", spec.chunk_size, spec.chunk_overlap))
    expected = {(p.start, p.end) for p in parents}
    child_size = spec.child_size or max(1, spec.chunk_size // 4)
    seen = set()
    for c in chunks:
        assert c.parent is not None
        assert c.parent.doc_id == doc.doc_id
        assert (c.parent.start, c.parent.end) in expected
        assert c.parent.start <= c.start and c.end <= c.parent.end
        assert c.parent.text == doc.text[c.parent.start : c.parent.end]
        assert len(c.text) <= child_size
        seen.add((c.parent.start, c.parent.end))
    assert seen == expected, "every parent has at least one child"


# --------------------------------------------------------------------------
# Strategies
# --------------------------------------------------------------------------

FRAGMENTS = [
    "。",
    "！",
    "？",
    "；",
    "，",
    "、",
    "…",
    "｡",
    ". ",
    "! ",
    "? ",
    ", ",
    " ",
    "  ",
    "\n",
    "\n\n",
    "\r\n",
    "\r\n\r\n",
    "\t",
    "今天天气很好",
    "我们去公园散步吧",
    "中华人民共和国",
    "e\u0301",
    "a\u0308\u0323",
    "👍🏽",
    "👨\u200d👩\u200d👧",
    "🇨🇳",
    "1\ufe0f\u20e3",
    "https://example.com/a/very/long/path?with=query&and=more",
    "# Title\n",
    "## Sub section\n",
    "### Deep\n",
    "#nohash\n",
    "| a | b |\n|---|---|\n| 1 | 2 |\n| 3 | 4 |\n",
    "| x |\n",
    "```python\n",
    "```\n",
    "~~~\n",
    "def f(x):\n    return x\n",
    "class A:\n    pass\n",
    "@decorator\n",
    "func Run() {\n}\n",
    "export function g() {}\n",
    "word ",
    "Hello world",
]

texts = st.lists(
    st.one_of(st.sampled_from(FRAGMENTS), st.text(max_size=12)),
    max_size=30,
).map("".join)


@st.composite
def specs(draw: st.DrawFn, chunker: str) -> ChunkingSpec:
    size = draw(st.integers(min_value=1, max_value=60))
    overlap = draw(st.integers(min_value=0, max_value=size - 1))
    child = draw(st.integers(min_value=0, max_value=size)) if chunker == "parent_child" else 0
    return ChunkingSpec(chunker, size, overlap, child)


PROPERTY = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@pytest.mark.parametrize("chunker", sorted(CHUNKERS))
@PROPERTY
@given(data=st.data(), text=texts)
def test_invariants_hold_on_random_text(chunker: str, data: st.DataObject, text: str) -> None:
    spec = data.draw(specs(chunker))
    doc = Document("doc", text)
    chunks = chunk_document(doc, spec)
    check_invariants(doc, spec, chunks)
    if chunker == "parent_child":
        check_parents(doc, spec, chunks)


@pytest.mark.parametrize("chunker", sorted(CHUNKERS))
@pytest.mark.parametrize("text", ["", " ", "\n\n\r\n\t  ", "\u3000\u00a0"])
def test_empty_and_whitespace_documents_give_no_chunks(chunker: str, text: str) -> None:
    spec = ChunkingSpec(chunker, 10, 2)
    assert chunk_document(Document("d", text), spec) == ()


@pytest.mark.parametrize("chunker", sorted(CHUNKERS))
def test_chunking_is_deterministic_and_leaves_the_document_alone(chunker: str) -> None:
    doc = Document("d", "# T\n\n" + "今天天气很好。我们去公园散步吧！" * 20)
    spec = ChunkingSpec(chunker, 30, 5)
    assert chunk_document(doc, spec) == chunk_document(doc, spec)
    assert doc.text.startswith("# T")


# --------------------------------------------------------------------------
# recursive
# --------------------------------------------------------------------------

CHINESE = (
    "今天天气很好。我们去公园散步吧！你想一起来吗？公园里的花都开了。"
    "孩子们在草地上奔跑，老人们坐在长椅上聊天。傍晚我们一起回家；路上买了水果。"
)


def test_chinese_paragraph_splits_at_sentence_ends() -> None:
    doc = Document("zh", CHINESE)
    spec = ChunkingSpec("recursive", 24, 0)
    chunks = chunk_document(doc, spec)
    check_invariants(doc, spec, chunks)
    assert len(chunks) > 2
    # Every sentence is shorter than 24, so no chunk ends mid-sentence.
    assert all(c.text[-1] in "。！？；" for c in chunks)
    assert "".join(c.text for c in chunks) == CHINESE


def test_overlap_starts_about_overlap_back_at_a_word() -> None:
    words = " ".join(f"w{i:03d}" for i in range(200))
    doc = Document("en", words)
    spec = ChunkingSpec("recursive", 50, 12)
    chunks = chunk_document(doc, spec)
    check_invariants(doc, spec, chunks)
    for a, b in pairwise(chunks):
        assert 5 <= a.end - b.start <= 12  # words are 4 characters + a space
        assert b.text.startswith("w") and doc.text[b.start - 1] == " "


def test_long_run_without_separators_falls_back_to_characters() -> None:
    run = "中" * 5000
    doc = Document("run", run)
    spec = ChunkingSpec("recursive", 300, 50)
    chunks = chunk_document(doc, spec)
    check_invariants(doc, spec, chunks)
    assert [len(c.text) for c in chunks[:-1]] == [300] * (len(chunks) - 1)
    assert all(a.end - b.start == 50 for a, b in pairwise(chunks))


def test_url_is_cut_only_when_it_does_not_fit() -> None:
    url = "https://example.com/" + "a/b.c?d=e&f=1,2;3" * 30
    doc = Document("u", f"See {url} for details. Then stop.")
    spec = ChunkingSpec("recursive", 100, 0)
    chunks = chunk_document(doc, spec)
    check_invariants(doc, spec, chunks)
    assert chunks[0].text == "See"
    assert chunks[-1].text.endswith("Then stop.")


def test_paragraphs_are_preferred_over_sentences() -> None:
    doc = Document("p", "First para. Two sentences.\n\nSecond para is here.\n\nThird one.")
    chunks = chunk_document(doc, ChunkingSpec("recursive", 50, 0))
    assert [c.text for c in chunks] == [
        "First para. Two sentences.\n\nSecond para is here.",
        "Third one.",
    ]


def test_combining_marks_and_emoji_are_not_split() -> None:
    text = "e\u0301" * 40 + "👨\u200d👩\u200d👧" * 10
    doc = Document("g", text)
    spec = ChunkingSpec("recursive", 7, 2)
    chunks = chunk_document(doc, spec)
    check_invariants(doc, spec, chunks)
    for c in chunks:
        assert c.text[0] not in "\u0301\u200d" and c.text[-1] != "\u200d"


def test_crlf_is_never_split() -> None:
    doc = Document("crlf", "line one\r\nline two\r\n\r\nline three\r\n")
    chunks = chunk_document(doc, ChunkingSpec("recursive", 10, 0))
    assert [c.text for c in chunks] == ["line one", "line two", "line three"]


# --------------------------------------------------------------------------
# fixed
# --------------------------------------------------------------------------


def test_fixed_windows_use_the_stride() -> None:
    doc = Document("f", "abcdefghij")
    chunks = chunk_document(doc, ChunkingSpec("fixed", 4, 1))
    assert [(c.start, c.end, c.text) for c in chunks] == [
        (0, 4, "abcd"),
        (3, 7, "defg"),
        (6, 10, "ghij"),
    ]


def test_fixed_skips_whitespace_only_windows() -> None:
    doc = Document("f", "ab" + " " * 10 + "cd")
    chunks = chunk_document(doc, ChunkingSpec("fixed", 4, 0))
    assert [(c.start, c.text) for c in chunks] == [(0, "ab  "), (12, "cd")]


# --------------------------------------------------------------------------
# markdown
# --------------------------------------------------------------------------

API_DOC = """# API reference

Everything public lives here.

## RateLimiter

Limits how often a call may run.

### Parameters

- rate: calls per second.
- burst: calls allowed at once.

### Returns

A limiter object.

## Cache

Stores results for later.
"""


def test_markdown_section_paths_for_nested_headings() -> None:
    doc = Document("api", API_DOC)
    spec = ChunkingSpec("markdown", 80, 0)
    chunks = chunk_document(doc, spec)
    check_invariants(doc, spec, chunks)
    by_start = {c.text.splitlines()[0]: c for c in chunks}
    assert by_start["# API reference"].section_path == ("API reference",)
    assert by_start["## RateLimiter"].section_path == ("API reference", "RateLimiter")
    assert by_start["### Parameters"].section_path == ("API reference", "RateLimiter", "Parameters")
    assert by_start["### Returns"].section_path == ("API reference", "RateLimiter", "Returns")
    assert by_start["## Cache"].section_path == ("API reference", "Cache")
    # Each chunk begins with its own heading line: no breadcrumb needed.
    assert all(c.prefix == "" for c in chunks)


def test_markdown_merges_small_sections_with_their_parent_or_siblings() -> None:
    doc = Document("api", API_DOC)
    spec = ChunkingSpec("markdown", 130, 0)
    chunks = chunk_document(doc, spec)
    check_invariants(doc, spec, chunks)
    # RateLimiter (155 characters) does not fit: its intro takes Parameters
    # along, Returns no longer fits beside them.
    assert [c.text.split("\n", 1)[0] for c in chunks] == [
        "# API reference",
        "## RateLimiter",
        "### Returns",
        "## Cache",
    ]
    assert "### Parameters" in chunks[1].text
    assert chunks[1].section_path == ("API reference", "RateLimiter")


def test_markdown_merged_siblings_get_their_parents_path_and_a_breadcrumb() -> None:
    intro = "The limiter limits how often a call may run, per key, with a token bucket."
    text = f"# RateLimiter\n\n{intro}\n\n## Parameters\n\nrate, burst.\n\n## Returns\n\nA limiter.\n"
    doc = Document("r", text)
    spec = ChunkingSpec("markdown", 100, 0)
    chunks = chunk_document(doc, spec)
    check_invariants(doc, spec, chunks)
    assert [c.text for c in chunks] == [
        f"# RateLimiter\n\n{intro}",
        "## Parameters\n\nrate, burst.\n\n## Returns\n\nA limiter.",
    ]
    # The merged chunk does not begin with the heading of its path's last
    # entry (RateLimiter), so it carries the breadcrumb.
    assert chunks[1].section_path == ("RateLimiter",)
    assert chunks[1].prefix == "RateLimiter\n"
    assert chunks[0].prefix == ""


def test_markdown_breadcrumb_when_a_chunk_starts_inside_a_section() -> None:
    body = " ".join(f"Sentence number {i} is here." for i in range(12))
    doc = Document("b", f"# Guide\n\n## Install\n\n{body}\n")
    spec = ChunkingSpec("markdown", 120, 20)
    chunks = chunk_document(doc, spec)
    check_invariants(doc, spec, chunks)
    # A heading never forms a chunk alone: the heading-only "# Guide" goes with what follows.
    assert chunks[0].text.startswith("# Guide\n\n## Install\n\nSentence number 0")
    assert chunks[0].text.endswith("is here.")
    assert chunks[0].section_path == ("Guide",)
    assert chunks[0].prefix == ""
    for c in chunks[1:]:
        assert c.section_path == ("Guide", "Install")
        assert c.prefix == "Guide > Install\n"


def _table(rows: int) -> str:
    lines = ["| name | value |", "|------|------:|"]
    lines += [f"| item{i:02d} | {i * 7} |" for i in range(rows)]
    return "\n".join(lines) + "\n"


def _is_table(markdown: str) -> bool:
    lines = markdown.rstrip("\n").split("\n")
    cells = {line.count("|") for line in lines}
    return (
        len(lines) >= 3
        and all(line.startswith("|") and line.endswith("|") for line in lines)
        and re.fullmatch(r"\|-+\|-+:\|", lines[1]) is not None
        and len(cells) == 1
    )


def test_markdown_table_split_carries_its_header() -> None:
    table = _table(20)
    text = f"## Data\n\nNumbers below.\n\n{table}"
    doc = Document("t", text)
    spec = ChunkingSpec("markdown", 90, 20)
    chunks = chunk_document(doc, spec)
    check_invariants(doc, spec, chunks)
    in_table = [c for c in chunks if c.start >= text.index("| item00")]
    assert len(in_table) >= 3
    header = "| name | value |\n|------|------:|\n"
    for c in in_table:
        assert c.prefix == "Data\n\n" + header
        table_part = c.prefix.split("\n\n", 1)[1] + c.text
        assert _is_table(table_part), table_part
        assert c.text == text[c.start : c.end]
    rows = [line for c in chunks for line in c.text.splitlines() if line.startswith("| item")]
    assert sorted(set(rows)) == [f"| item{i:02d} | {i * 7} |" for i in range(20)]


def test_markdown_table_that_fits_stays_whole() -> None:
    table = _table(3)
    doc = Document("t", "Intro line.\n\n" + table + "\nAfter.\n")
    spec = ChunkingSpec("markdown", len(table), 10)
    chunks = chunk_document(doc, spec)
    check_invariants(doc, spec, chunks)
    assert table.strip() in [c.text for c in chunks]


def test_markdown_code_fence_is_kept_whole_when_it_fits() -> None:
    fence = "```python\ndef f(x):\n    y = x + 1\n\n    return y\n```"
    doc = Document("c", "Some prose before the code block.\n\n" + fence + "\n\nAnd prose after it.\n")
    spec = ChunkingSpec("markdown", len(fence) + 5, 10)
    chunks = chunk_document(doc, spec)
    check_invariants(doc, spec, chunks)
    assert any(fence in c.text for c in chunks)


def test_markdown_oversized_fence_is_cut_at_lines_with_the_fence_line_as_prefix() -> None:
    code = "\n".join(f"x{i} = {i} * factor + offset" for i in range(30))
    fence = f"```python\n{code}\n```"
    doc = Document("c", fence)
    spec = ChunkingSpec("markdown", 100, 0)
    chunks = chunk_document(doc, spec)
    check_invariants(doc, spec, chunks)
    lines = set(fence.split("\n"))
    for c in chunks:
        assert all(line in lines for line in c.text.split("\n")), "cut inside a line"
    assert all(c.prefix == "```python\n" for c in chunks[1:])


def test_markdown_ignores_headings_inside_fences() -> None:
    doc = Document("f", "# Real\n\n```\n# not a heading\n```\n")
    chunks = chunk_document(doc, ChunkingSpec("markdown", 200, 0))
    assert [c.section_path for c in chunks] == [("Real",)]


# --------------------------------------------------------------------------
# code
# --------------------------------------------------------------------------

PYTHON = '''import os


def alpha(x):
    """Alpha."""
    return x + 1


@cache
@other
def beta(y):
    return y * 2


# Holds state.
class Gamma:
    def __init__(self):
        self.v = 1

    def run(self):
        return self.v
'''


def test_code_splits_at_definitions() -> None:
    doc = Document("py", PYTHON)
    spec = ChunkingSpec("code", 50, 10)
    chunks = chunk_document(doc, spec)
    check_invariants(doc, spec, chunks)
    assert [c.text.split("\n", 1)[0] for c in chunks] == [
        "import os",
        "def alpha(x):",
        "@cache",  # decorators go with their definition
        "# Holds state.",  # so does the comment above it
        "def __init__(self):",  # Gamma is too big: cut at blank lines, then lines
        "def run(self):",  # no overlap into half a statement
    ]
    assert [c.section_path for c in chunks] == [(), ("alpha",), ("beta",), ("Gamma",), ("Gamma",), ("Gamma",)]


def test_code_merges_small_definitions_up_to_the_size() -> None:
    doc = Document("py", PYTHON)
    spec = ChunkingSpec("code", 70, 10)
    chunks = chunk_document(doc, spec)
    check_invariants(doc, spec, chunks)
    assert chunks[0].text.startswith("import os") and chunks[0].text.endswith("return x + 1")
    assert chunks[0].section_path == ("alpha",)  # the definition covering most of the chunk
    assert chunks[1].text.startswith("@cache") and chunks[1].text.endswith("return y * 2")


def test_code_finds_go_and_javascript_definitions() -> None:
    go = "package main\n\nfunc (s *Server) Start() error {\n\treturn nil\n}\n\ntype Config struct {\n\tPort int\n}\n"
    js = "import x from 'y';\n\nexport function load(a) {\n  return a;\n}\n\nclass Store {\n  get() {}\n}\n"
    spec = ChunkingSpec("code", 50, 0)
    go_chunks = chunk_document(Document("go", go), spec)
    js_chunks = chunk_document(Document("js", js), spec)
    assert [c.section_path for c in go_chunks] == [(), ("Start",), ("Config",)]
    assert go_chunks[1].text == "func (s *Server) Start() error {\n\treturn nil\n}"
    assert [c.section_path for c in js_chunks] == [(), ("load",), ("Store",)]


def test_code_chunker_reads_code_inside_markdown() -> None:
    text = (
        "# Usage\n\nCall it like this.\n\n```python\ndef first():\n    return 1\n\ndef second():\n    return 2\n```\n"
    )
    doc = Document("md", text)
    spec = ChunkingSpec("code", 40, 0)
    chunks = chunk_document(doc, spec)
    check_invariants(doc, spec, chunks)
    assert any(c.text.startswith("def second():") and c.section_path == ("second",) for c in chunks)


# --------------------------------------------------------------------------
# parent_child
# --------------------------------------------------------------------------


def test_parent_child_children_map_to_their_parents() -> None:
    text = "\n\n".join(CHINESE for _ in range(4))
    doc = Document("pc", text)
    spec = ChunkingSpec("parent_child", 80, 20, child_size=20)
    chunks = chunk_document(doc, spec)
    check_invariants(doc, spec, chunks)
    check_parents(doc, spec, chunks)
    parents = {c.parent for c in chunks}
    assert len(parents) > 2 and len(chunks) > 2 * len(parents)
    # Children do not overlap even though parents do.
    assert all(a.end <= b.start for a, b in pairwise(chunks))


def test_parent_child_default_child_size_is_a_quarter() -> None:
    doc = Document("pc", "x" * 400)
    chunks = chunk_document(doc, ChunkingSpec("parent_child", 100, 0))
    assert {len(c.text) for c in chunks} == {25}


# --------------------------------------------------------------------------
# Specs and the corpus entry point
# --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        (ChunkingSpec("sentences", 100, 0), "unknown chunker 'sentences'; choose one of: code, fixed, markdown"),
        (ChunkingSpec("recursive", 0, 0), "chunk_size must be at least 1"),
        (ChunkingSpec("recursive", 100, 100), "chunk_overlap (100) must be smaller than chunk_size (100)"),
        (ChunkingSpec("recursive", 100, 150), "must be smaller than chunk_size"),
        (ChunkingSpec("recursive", 100, -1), "chunk_overlap must be 0 or more"),
        (ChunkingSpec("parent_child", 100, 0, child_size=200), "child_size (200) must not exceed chunk_size (100)"),
        (ChunkingSpec("parent_child", 100, 0, child_size=-5), "child_size must be 0"),
        (ChunkingSpec("recursive", 100, 0, child_size=10), "only used by the parent_child chunker"),
        (ChunkingSpec("recursive", 100.0, 0), "chunk_size must be an int, got 100.0 (float)"),  # type: ignore[arg-type]
    ],
)
def test_bad_specs_raise_a_helpful_error(spec: ChunkingSpec, message: str) -> None:
    with pytest.raises(ChunkingError) as caught:
        validate_spec(spec)
    assert message in str(caught.value)
    with pytest.raises(ValueError):
        chunk_document(Document("d", "text"), spec)


def test_chunkers_check_sizes_when_called_directly() -> None:
    with pytest.raises(ChunkingError, match="chunk_overlap"):
        chunker_of("recursive")(Document("d", "text"), ChunkingSpec("recursive", 5, 9))


def test_chunk_corpus_keeps_document_order_and_rejects_duplicate_ids() -> None:
    docs = [Document("a", "Alpha text. More."), Document("b", "Beta text.")]
    spec = ChunkingSpec("recursive", 12, 0)
    chunks = chunk_corpus(docs, spec)
    assert [c.doc_id for c in chunks] == ["a", "a", "b"]
    assert chunks == chunk_document(docs[0], spec) + chunk_document(docs[1], spec)
    with pytest.raises(ChunkingError, match="duplicate doc_id 'a'"):
        chunk_corpus([docs[0], docs[0]], spec)


def test_chunkers_registry_is_read_only() -> None:
    assert set(CHUNKERS) == {"fixed", "recursive", "markdown", "code", "parent_child"}
    with pytest.raises(TypeError):
        CHUNKERS["mine"] = CHUNKERS["fixed"]  # type: ignore[index]
