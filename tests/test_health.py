"""Chunk health on hand-made chunks: mid-sentence starts, lone headings, split tables, code cut inside a def."""

from __future__ import annotations

import json

import pytest

from evalkit.chunking.chunkers import chunk_document
from evalkit.chunking.health import ChunkHealth, chunk_health
from evalkit.records import Chunk, ChunkingSpec, Document, span_id


def chunk(doc: Document, start: int, end: int, prefix: str = "") -> Chunk:
    return Chunk(span_id(doc.doc_id, start, end), doc.doc_id, start, end, doc.text[start:end], prefix=prefix)


def at(doc: Document, text: str) -> int:
    return doc.text.index(text)


def flagged(health: ChunkHealth, name: str) -> list[str]:
    return [e.chunk_id for e in getattr(health, name).examples]


def test_mid_sentence_start_in_english() -> None:
    doc = Document("en", "Limits apply per key. Bursts of 20 are allowed.\nPi is 3.14 exactly.")
    good = [
        chunk(doc, 0, 20),  # document start
        chunk(doc, at(doc, "Bursts"), at(doc, "allowed")),  # after ". "
        chunk(doc, at(doc, "Pi is"), len(doc.text)),  # after a newline
    ]
    bad = [
        chunk(doc, at(doc, "of 20"), at(doc, "allowed")),  # mid-sentence
        chunk(doc, at(doc, "14 exactly"), len(doc.text)),  # "3.|14": no space after the dot
    ]
    health = chunk_health([doc], good + bad)
    assert health.mid_sentence.count == 2
    assert flagged(health, "mid_sentence") == [c.chunk_id for c in bad]
    assert "|of 20" in health.mid_sentence.examples[0].detail


def test_mid_sentence_start_in_chinese() -> None:
    doc = Document("zh", "住宿标准为每晚六百元。出差需提前三天申请；报销需在三十天内提交！逾期不予受理")
    good = [chunk(doc, at(doc, "出差"), at(doc, "申请")), chunk(doc, at(doc, "报销"), len(doc.text))]
    good.append(chunk(doc, at(doc, "逾期"), len(doc.text)))  # after ！
    bad = [chunk(doc, at(doc, "提前"), at(doc, "申请")), chunk(doc, at(doc, "六百元"), at(doc, "出差"))]
    health = chunk_health([doc], good + bad)
    assert health.mid_sentence.count == 2
    assert set(flagged(health, "mid_sentence")) == {c.chunk_id for c in bad}


def test_lone_heading_alone_or_at_the_end_of_a_chunk() -> None:
    text = "# Travel\n\nIntro line.\n\n## Hotels\n\nThe cap is 220 EUR.\n\n```python\n# not a heading\nx = 1\n```\n"
    doc = Document("guide", text)
    only_heading = chunk(doc, 0, len("# Travel"))
    trailing = chunk(doc, at(doc, "Intro"), at(doc, "## Hotels") + len("## Hotels"))
    fine = chunk(doc, at(doc, "## Hotels"), at(doc, "EUR.") + 4)
    code_comment_last = chunk(doc, at(doc, "```python"), at(doc, "# not a heading") + len("# not a heading"))
    health = chunk_health([doc], [only_heading, trailing, fine, code_comment_last])
    assert flagged(health, "lone_heading") == [only_heading.chunk_id, trailing.chunk_id]
    assert "only heading" in health.lone_heading.examples[0].detail
    assert "'## Hotels'" in health.lone_heading.examples[1].detail


TABLE_DOC = "Rates:\n\n| City | Cap |\n|---|---|\n| Berlin | 220 EUR |\n| Paris | 250 EUR |\n| Rome | 200 EUR |\n"


def test_table_split_without_header_unless_a_prefix_carries_it() -> None:
    doc = Document("rates", TABLE_DOC)
    header = "| City | Cap |\n|---|---|\n"
    whole = chunk(doc, at(doc, "| City"), len(doc.text) - 1)
    rows_bare = chunk(doc, at(doc, "| Paris"), len(doc.text) - 1)
    rows_prefixed = chunk(doc, at(doc, "| Paris"), len(doc.text) - 1, prefix=header)
    intro = chunk(doc, 0, len("Rates:"))
    health = chunk_health([doc], [intro, whole, rows_bare])
    assert flagged(health, "split_table") == [rows_bare.chunk_id]
    assert "'| City | Cap |'" in health.split_table.examples[0].detail
    assert chunk_health([doc], [intro, whole, rows_prefixed]).split_table.count == 0


def test_markdown_chunker_carries_table_headers_and_recursive_does_not() -> None:
    rows = "".join(f"| city {i:02d} | {100 + i} EUR |\n" for i in range(40))
    doc = Document("big-table", "# Caps\n\n| City | Cap |\n|---|---|\n" + rows)
    spec = ChunkingSpec("markdown", 200, 0)
    assert chunk_health([doc], chunk_document(doc, spec)).split_table.count == 0
    recursive = chunk_health([doc], chunk_document(doc, ChunkingSpec("recursive", 200, 0)))
    assert recursive.split_table.count >= 3


PY_SOURCE = '''import time


class Bucket:
    """A token bucket."""

    def __init__(self, rate: float) -> None:
        self.rate = rate
        self.tokens = 0.0

    @property
    def full(self) -> bool:
        return self.tokens >= 1


def helper(x: int) -> int:
    y = x + 1
    return y * 2
'''


def test_code_split_inside_a_python_def_but_not_between_definitions() -> None:
    doc = Document("src-bucket", PY_SOURCE, "docs/src-bucket.md", "bucket.py", {"code_lang": "python"})
    inside_init = at(doc, "self.tokens")
    before_helper = at(doc, "def helper")
    chunks = [
        chunk(doc, 0, inside_init),  # ends inside def __init__
        chunk(doc, inside_init, before_helper - 2),  # starts inside __init__
        chunk(doc, before_helper, len(doc.text)),  # a whole top-level def
    ]
    health = chunk_health([doc], chunks)
    assert flagged(health, "split_code") == [chunks[0].chunk_id, chunks[1].chunk_id]
    assert "ends inside def __init__" in health.split_code.examples[0].detail
    # "#" lines of a source file are not Markdown headings.
    assert health.lone_heading.count == 0


def test_code_split_inside_a_fenced_block_and_a_def_inside_it() -> None:
    text = (
        "Usage:\n\n```python\ndef track(event):\n    send(event)\n    return True\n```\n\n```bash\npip install x\n```\n"
    )
    doc = Document("guide", text)
    in_def = chunk(doc, 0, at(doc, "return True"))
    in_bash = chunk(doc, at(doc, "install"), len(doc.text))
    whole = chunk(doc, 0, len(doc.text))
    health = chunk_health([doc], [in_def, in_bash, whole])
    assert flagged(health, "split_code") == [in_def.chunk_id, in_bash.chunk_id]
    assert "def track" in health.split_code.examples[0].detail
    assert "fenced bash code block" in health.split_code.examples[1].detail


def test_counts_examples_json_and_report_rows() -> None:
    doc = Document("en", " ".join(f"word{i}" for i in range(60)))
    chunks = [chunk(doc, i, i + 5) for i in range(1, 300, 40) if not doc.text[i].isspace()]
    health = chunk_health([doc], chunks)
    assert health.n_chunks == len(chunks)
    assert health.mid_sentence.count == len(chunks) > 5
    assert len(health.mid_sentence.examples) == 5
    assert health.mid_sentence.share == 1.0
    assert json.loads(json.dumps(health.to_dict()))["checks"]["mid_sentence"]["count"] == len(chunks)
    rows = health.findings("recursive-s512-o64")
    assert {r["rule"] for r in rows} == {"mid_sentence", "lone_heading", "split_table", "split_code"}
    assert set(rows[0]) == {"chunking", "rule", "count", "share", "message", "examples"}


def test_a_chunk_of_an_unknown_document_is_an_error() -> None:
    doc = Document("a", "text")
    with pytest.raises(ValueError, match="not given: b"):
        chunk_health([doc], [Chunk("b#0-1", "b", 0, 1, "t")])
