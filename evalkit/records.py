"""Frozen records passed between evalkit's stages.

Every stage takes records in and gives records out; nothing downstream
mutates what an upstream stage produced. Offsets are Python ``str`` indices
(code points) into the document text read with ``newline=""``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

EvidenceMode = Literal["any", "all", "none"]
HitSource = Literal["dense", "bm25", "hybrid", "external", "rerank"]

# The position experiment's row vocabulary: written by answers/, read by scoring and the report.
PROMPT_TOO_LONG = "system prompt and question exceed the budget"
"""``reason`` when nothing but the fixed parts already breaks the input budget."""
DOES_NOT_FIT = "does not fit"
"""``reason`` when the ``stuff`` arm's documents do not all fit (nothing is truncated)."""
BUCKETS: tuple[str, ...] = ("head", "mid", "tail", "none")
"""Where the gold sat in the context (``none``: no gold item in it)."""

# The cost columns: written by the cost stage, read by scoring (measures, the gate) and the run folder's readers.
COST_PER_QUERY = "cost_per_query_usd"
"""US dollars per query: per question in results, mean per config in the summary."""
COST_PER_DAY = "cost_per_day_usd"
"""US dollars per day at the configured query volume (summary column)."""
COST_COLUMNS = (COST_PER_QUERY, COST_PER_DAY)

THRESHOLD_ATOL = 1e-9
"""Grid thresholds are matched with this absolute tolerance, never with ``==`` (they are floats from YAML)."""


@dataclass(frozen=True)
class Span:
    """A character span of one document; the unit gold labels are anchored to."""

    doc_id: str
    """Document the span lies in."""
    start: int
    """First code point, inclusive."""
    end: int
    """Last code point, exclusive."""
    text: str = ""
    """``document.text[start:end]``; empty where only the offsets matter."""

    def __len__(self) -> int:
        return self.end - self.start


Evidence = Span
"""A gold evidence span: ``text == document.text[start:end]``."""


@dataclass(frozen=True)
class Document:
    """One corpus document as read from disk."""

    doc_id: str
    """Identifier that evidence spans and chunks refer to."""
    text: str
    """Full UTF-8 text, newlines untouched."""
    path: str = ""
    """Path relative to the labelled set's folder."""
    title: str = ""
    """Human title (shown in reports)."""
    meta: Mapping[str, Any] = field(default_factory=dict)
    """Free metadata (version, effective_date, acl, section, ...), kept as read."""


@dataclass(frozen=True)
class Question:
    """One labelled question, anchored to document spans, never to chunk ids."""

    id: str
    """Unique id within the labelled set."""
    question: str
    """The question text as a user would ask it."""
    answers: tuple[str, ...]
    """Every acceptable gold answer ('' never included; empty if unanswerable)."""
    answerable: bool
    """False when the corpus holds no answer."""
    evidence: tuple[Evidence, ...]
    """Gold spans; their meaning depends on ``evidence_mode``."""
    evidence_mode: EvidenceMode
    """``any``: one span suffices; ``all``: every span needed; ``none``: unanswerable."""
    tags: Mapping[str, Any] = field(default_factory=dict)
    """Free tags (lang, multi_hop, role, unanswerable_kind, ...); unknown ones kept."""
    source_passage: tuple[Span, ...] = ()
    """The passage the question was written against, where the set records it."""
    line: int = 0
    """1-based line in questions.jsonl (for error messages)."""

    @property
    def lang(self) -> str:
        """Language tag, or '' when the set does not say."""
        return str(self.tags.get("lang", ""))


EXTERNAL_CHUNKING = "external"
"""The chunker name (and chunking key) of ``retriever=external``: production's own chunking, whatever it is."""


@dataclass(frozen=True)
class ChunkingSpec:
    """Parameters that fully determine one chunking of a corpus."""

    chunker: str
    """Chunker name: recursive, markdown, code, parent_child, fixed."""
    chunk_size: int
    """Target maximum chunk length in characters."""
    chunk_overlap: int
    """Characters shared by consecutive chunks of one document."""
    child_size: int = 0
    """Child length for parent_child (0: chunk_size // 4)."""

    @property
    def key(self) -> str:
        """Stable, file-name-safe name of this chunking."""
        if self.chunker == EXTERNAL_CHUNKING:
            return EXTERNAL_CHUNKING
        base = f"{self.chunker}-s{self.chunk_size}-o{self.chunk_overlap}"
        return base + (f"-c{self.child_size}" if self.child_size else "")


@dataclass(frozen=True)
class Chunk:
    """A retrievable piece of one document; always ``text == doc.text[start:end]``."""

    chunk_id: str
    """``{doc_id}#{start}-{end}``: stable for the same span of the same document."""
    doc_id: str
    """Document the chunk was cut from."""
    start: int
    """First code point in the document, inclusive."""
    end: int
    """Last code point in the document, exclusive."""
    text: str
    """Exactly ``document.text[start:end]``."""
    section_path: tuple[str, ...] = ()
    """Markdown heading path above the chunk, outermost first."""
    prefix: str = ""
    """Context embedded and shown before ``text`` but not part of the span (e.g. a table's header row)."""
    parent: Span | None = None
    """For parent-child chunking: the larger span returned in place of this chunk."""

    @property
    def embed_text(self) -> str:
        """What the embedder and BM25 see: prefix, then the chunk text."""
        return f"{self.prefix}{self.text}" if self.prefix else self.text


@dataclass(frozen=True)
class Hit:
    """One retrieved unit for one question."""

    chunk_id: str
    """Id of the retrieved unit (a chunk, or a parent span's id)."""
    score: float
    """Absolute score that thresholds compare against (cosine, BM25 or rerank score)."""
    source: HitSource
    """Stage that produced the ranking."""
    rank_score: float | None = None
    """Score that ordered the ranking when it differs from ``score`` (e.g. RRF)."""


@dataclass(frozen=True)
class Ranking:
    """A ranked candidate pool for one question, best first."""

    question_id: str
    hits: tuple[Hit, ...]


def span_id(doc_id: str, start: int, end: int) -> str:
    """Id of a span-shaped unit; chunk ids and parent ids share this form."""
    return f"{doc_id}#{start}-{end}"


@dataclass(frozen=True)
class Usage:
    """Tokens of one model call, as the provider reported them (or estimated)."""

    input_tokens: int = 0
    output_tokens: int = 0
    cache_creation_input_tokens: int = 0
    cache_read_input_tokens: int = 0
    estimated: bool = False
    """True when counted by a local estimate rather than the provider: labelled wherever shown."""


@dataclass(frozen=True)
class Answer:
    """One generated answer to one question under one context arm and repeat."""

    question_id: str
    text: str
    backend: str
    """anthropic, local, ..."""
    model: str
    usage: Usage
    stop_reason: str
    """end_turn, max_tokens, model_context_window_exceeded, refusal, overflow (HTTP 400 prompt too long), error."""
    cached: bool = False
    """Served from evalkit's cache (no request sent, nothing paid)."""
    truncated: bool = False
    """The answer was cut (max_tokens or the context window), not a normal end."""
    error: str = ""
    """Why there is no answer when stop_reason is ``error`` (a batch entry ``expired``, ``canceled`` or
    ``errored: <type>: <message>``); empty otherwise."""
    first_token_s: float | None = None
    """Seconds from sending the request to its first content token, as measured when it was generated (a
    streamed endpoint's clock, or a local backend's prompt-processing plus first-token time); None: not measured
    (a batch, a non-streamed reply). A cached answer keeps the figure of the call that made it."""
    total_s: float | None = None
    """Seconds from sending the request to its last byte when it was generated; None: not measured."""
    in_flight: int | None = None
    """Requests of this run in flight when this one was sent, itself included (1: it ran alone; on a server
    with fewer slots the others' work is in its first-token time); None: not recorded (cached, batch)."""


# The statistics' results: computed in scoring/, written to review.json by run/ (its schema), shown by the report.
@dataclass(frozen=True)
class Interval:
    """A confidence interval for the mean of one metric."""

    mean: float
    """Sample mean of the non-missing values."""
    low: float
    """Lower bound."""
    high: float
    """Upper bound."""
    n: int
    """Number of values used (missing values excluded)."""
    level: float
    """Two-sided confidence level, e.g. 0.95."""
    method: str = "percentile"
    """How the bounds were computed: ``percentile``, ``bca``, ``wilson``, ``degenerate`` (bootstrap_ci of
    all-equal values), ``t-studentised``, ``cluster-bootstrap``, ``wilson-questions``, ``newcombe`` or
    ``wilson-difference``."""
    n_missing: int = 0
    """Number of NaN values dropped before computing."""

    @property
    def half_width(self) -> float:
        """Half the interval's width (the "+-" figure a report shows)."""
        return (self.high - self.low) / 2.0


@dataclass(frozen=True)
class PairedComparison:
    """Candidate versus baseline on the same questions, one metric."""

    metric: str
    """Metric name, e.g. ``hit@5``."""
    baseline_mean: float
    """Mean of the baseline's values over the compared questions."""
    candidate_mean: float
    """Mean of the candidate's values over the compared questions."""
    delta: float
    """``candidate_mean - baseline_mean``."""
    delta_low: float
    """Lower bound of the bootstrap interval for ``delta``."""
    delta_high: float
    """Upper bound of the bootstrap interval for ``delta``."""
    p_value: float
    """Two-sided p-value for "no difference", from ``test``."""
    n: int
    """Number of question pairs compared."""
    test: str
    """Source of ``p_value``: ``bootstrap`` or ``permutation`` (paired sign flip)."""
    p_adjusted: float | None = None
    """Holm-adjusted p-value when this comparison is one of a family, else None."""
    level: float = 0.95
    """Two-sided level of ``[delta_low, delta_high]``."""
    n_missing: int = 0
    """Pairs dropped because either value was NaN."""

    @property
    def within_noise(self) -> bool:
        """Whether the interval of the difference contains 0."""
        return self.delta_low <= 0.0 <= self.delta_high


@dataclass(frozen=True)
class RatioInterval:
    """Interval for ``mean(candidate) / mean(baseline)`` on paired values (e.g. cost)."""

    ratio: float
    """Observed ratio of means."""
    low: float
    """Lower percentile-bootstrap bound."""
    high: float
    """Upper percentile-bootstrap bound (``inf`` if some resample had a zero baseline)."""
    n: int
    """Number of question pairs used."""
    level: float
    """Two-sided confidence level."""
    n_missing: int = 0
    """Pairs dropped because either value was NaN."""

    @property
    def percent_change(self) -> float:
        """Observed relative change in percent: ``100 * (ratio - 1)``."""
        return 100.0 * (self.ratio - 1.0)


@dataclass(frozen=True)
class ItemStats:
    """One question's item statistics across the configs (means in the measure's own direction)."""

    question_id: str
    facility: float
    """Mean score over the configs."""
    r: float
    """Item-rest correlation (point-biserial for 0/1 scores); NaN when the question's score is constant."""
    p_upper: float
    """Mean score under the upper group (the configs best on the rest of the set)."""
    p_lower: float
    """Mean score under the lower group."""
    n_configs: int
    reason: str
    """Why it is listed: ``negative``, ``upper_miss``, ``always`` (every config right), ``never`` (every config
    wrong) or ``constant``."""
    doubt: str = ""
    """Suspect gold's second signal (``scoring.gold_doubt.KINDS``: the gold elsewhere, or a hard question); ''
    before the review reads the labelled set, or when it could not."""
    gold_overlap: float = math.nan
    """Share of the question's term weight in the gold's window; ``elsewhere_overlap``: in the best window elsewhere."""
    elsewhere_overlap: float = math.nan
    elsewhere_doc_id: str = ""
    gold_doc_retrieved: bool | None = None
    stuffed_answer: str = ""
    """The model's answer with the gold's whole document stuffed (position arm ``stuff``) when all such answers were
    wrong, none a refusal; shown beside the verdict, not part of it."""


@dataclass(frozen=True)
class ItemAnalysis:
    """The item analysis of one run on one measure: questions that never discriminate and gold to doubt."""

    measure: str
    n_configs: int
    n_questions: int
    group_size: int
    """Configs in each of the upper and lower groups."""
    upper_rest: float
    """The upper group's mean score on the whole set (what the upper group usually finds)."""
    suspect: tuple[ItemStats, ...]
    """Suspect gold, most suspect first (negative discrimination, then the lowest upper-group score)."""
    never_discriminating: tuple[ItemStats, ...]
    """Questions every config scores the same (``always``, ``never`` or ``constant``)."""
    skipped: str = ""
    """Why there is no analysis (too few configs or questions); empty when there is one."""


@dataclass(frozen=True)
class Mde:
    """Minimum detectable effect of a paired comparison on this set (80% power, exact)."""

    value: float
    """The effect in the metric's units; ``inf`` when not detectable at this size."""
    n: int
    how: str
    """The inputs in words, e.g. ``exact McNemar power, 12.3% of questions discordant ...``."""

    @property
    def detectable(self) -> bool:
        """False when no effect, however large, reaches 80% power on this many questions."""
        return math.isfinite(self.value)
