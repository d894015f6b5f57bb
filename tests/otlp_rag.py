"""A small traced RAG system for the tests: the OpenTelemetry SDK writes its spans as OTLP JSON files.

``retrieve`` ranks paragraphs of a corpus by word overlap with the question (best first) and records the
retrieval span under one of two conventions: the OpenTelemetry GenAI retrieval span (``gen_ai.operation.name
= retrieval``, ``gen_ai.retrieval.query.text``, ``gen_ai.retrieval.documents`` as the JSON string the SDK
must write, since span attributes cannot hold objects) or OpenInference's ``RETRIEVER`` span (``input.value``,
flattened ``retrieval.documents.N.document.*``). The user and role are set on the request's root span, as
instrumentations do. The export is the SDK's own OTLP protobuf encoder (``encode_spans``), written as JSON
by protobuf's ``MessageToDict``: one request per line, as the collector's file exporter writes.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from google.protobuf.json_format import MessageToDict
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, ArrayValue, KeyValue, KeyValueList
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult
from opentelemetry.trace import Status, StatusCode

_WORD = re.compile(r"\w+")


class OtlpJsonFileExporter(SpanExporter):
    """Writes each export as one OTLP JSON ``ExportTraceServiceRequest`` line (or keeps them for one document)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.spans: list[ReadableSpan] = []

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        self.spans.extend(spans)
        with open(self.path, "a", encoding="utf-8") as handle:
            handle.write(json.dumps(MessageToDict(encode_spans(spans))) + "\n")
        return SpanExportResult.SUCCESS

    def write_document(self, path: Path) -> None:
        """Every span so far as a single pretty-printed OTLP JSON document."""
        path.write_text(json.dumps(MessageToDict(encode_spans(self.spans)), indent=2), encoding="utf-8")

    def write_structured(self, path: Path) -> None:
        """Every span so far with ``gen_ai.retrieval.documents`` in structured form (an array of key-value lists,
        as a collector that parsed the JSON string emits), in proto field names (``resource_spans``)."""
        request = encode_spans(self.spans)
        for batch in request.resource_spans:
            for scope in batch.scope_spans:
                for span in scope.spans:
                    for attribute in span.attributes:
                        if attribute.key == "gen_ai.retrieval.documents":
                            documents = json.loads(attribute.value.string_value)
                            attribute.value.CopyFrom(AnyValue(array_value=ArrayValue(values=[
                                AnyValue(kvlist_value=KeyValueList(values=[
                                    KeyValue(key="id", value=AnyValue(string_value=d["id"])),
                                    KeyValue(key="score", value=AnyValue(double_value=d["score"])),
                                ])) for d in documents
                            ])))  # fmt: skip
        path.write_text(json.dumps(MessageToDict(request, preserving_proto_field_name=True)) + "\n", encoding="utf-8")

    def shutdown(self) -> None:
        return None


@dataclass(frozen=True)
class Passage:
    doc_id: str
    start: int
    end: int
    text: str


def passages(documents: dict[str, str]) -> list[Passage]:
    """Every non-blank paragraph of every document, with its offsets."""
    out = []
    for doc_id, text in documents.items():
        for match in re.finditer(r"[^\n]+(?:\n(?!\n)[^\n]+)*", text):
            if match.group().strip():
                out.append(Passage(doc_id, match.start(), match.end(), match.group()))
    return out


class TracedRag:
    """The production system under trace: ``ask`` opens a request span and retrieves inside it."""

    def __init__(self, path: Path, documents: dict[str, str], convention: str, k: int = 2, worst: bool = False) -> None:
        self.exporter = OtlpJsonFileExporter(path)
        self.provider = TracerProvider(resource=Resource.create({"service.name": "rag-prod"}))
        self.provider.add_span_processor(SimpleSpanProcessor(self.exporter))
        self.tracer = self.provider.get_tracer("tests.otlp_rag")
        self.passages = passages(documents)
        self.convention = convention
        self.k = k
        self.worst = worst
        self.short: dict[str, int] = {}
        """Questions production returns fewer hits for (an index that finds little, or nothing)."""
        """A broken production: the least overlapping paragraphs, still in descending score order."""

    def rank(self, question: str) -> list[tuple[Passage, float]]:
        words = {w.lower() for w in _WORD.findall(question)}
        scored = [
            (p, len(words & {w.lower() for w in _WORD.findall(p.text)}) / max(len(words), 1)) for p in self.passages
        ]
        ranked = sorted(scored, key=lambda ps: ps[1] if self.worst else -ps[1])[: self.short.get(question, self.k)]
        return sorted(ranked, key=lambda ps: -ps[1])

    def ask(self, question: str, at_ns: int, user: str = "", role: str = "", fail: bool = False) -> list[Passage]:
        with self.tracer.start_as_current_span("rag.request", start_time=at_ns) as root:
            if user:
                root.set_attribute("user.id", user)
            if role:
                root.set_attribute("enduser.role", role)
            root.set_attribute("session.id", f"s-{user or 'anon'}")
            hits = self.retrieve(question, at_ns + 1000)
            if fail:
                root.set_status(Status(StatusCode.ERROR, "generation failed"))
            with self.tracer.start_as_current_span("chat model", start_time=at_ns + 2000) as llm:
                llm.set_attribute("gen_ai.operation.name", "chat")
            return [p for p, _ in hits]

    def retrieve(self, question: str, at_ns: int) -> list[tuple[Passage, float]]:
        hits = self.rank(question)
        if self.convention == "genai":
            with self.tracer.start_as_current_span("retrieval kb", start_time=at_ns) as span:
                span.set_attribute("gen_ai.operation.name", "retrieval")
                span.set_attribute("gen_ai.data_source.id", "kb")
                span.set_attribute("gen_ai.retrieval.query.text", question)
                documents = [{"id": f"{p.doc_id}#{p.start}-{p.end}", "score": s} for p, s in hits]
                span.set_attribute("gen_ai.retrieval.documents", json.dumps(documents))
        else:
            with self.tracer.start_as_current_span("retriever", start_time=at_ns) as span:
                span.set_attribute("openinference.span.kind", "RETRIEVER")
                span.set_attribute("input.value", question)
                for i, (p, s) in enumerate(hits):
                    # Content only, no id: the hit is anchored back to its span by its text.
                    span.set_attribute(f"retrieval.documents.{i}.document.content", p.text)
                    span.set_attribute(f"retrieval.documents.{i}.document.score", s)
                    span.set_attribute(f"retrieval.documents.{i}.document.metadata", json.dumps({"source": p.doc_id}))
        return hits
