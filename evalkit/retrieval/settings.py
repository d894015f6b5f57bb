"""The retriever's and the reranker's settings (``conf/retriever/*.yaml``, ``conf/reranker/*.yaml``)."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any

from evalkit.http_call import url_problem
from evalkit.plugins import Choices, Registry
from evalkit.retrieval.backends import BUILTIN_RETRIEVERS, RetrieverBackend, backend_of, taking_index
from evalkit.settings import ConfigError, check_keys

RETRIEVERS = Choices("retriever", BUILTIN_RETRIEVERS)
"""evalkit's own retrievers, then installed plugins' (each an external retriever: its entry point is the target)."""
INDEXES = ("exact", "hnsw", "lancedb")
HNSW_KEYS = ("hnsw_connectivity", "hnsw_expansion_add", "hnsw_expansion_search")
LANCEDB_INDEXES = ("flat", "ivf_flat", "ivf_pq", "ivf_hnsw_sq")
"""``flat``: no index, LanceDB scans every row (exact). The others: its approximate indexes (recall reported)."""
LANCEDB_KEYS = ("lancedb_index", "lancedb_partitions", "lancedb_nprobes")
EXTERNAL_KEYS = (
    "target", "url", "version", "batch_size", "max_concurrency", "timeout_s", "max_reply_mb", "max_retries",
    "retry_base_delay_s", "retry_max_delay_s",
)  # fmt: skip
"""The external retriever's settings; other retrievers leave them out of their ids."""
EXTERNAL_IDENTITY = ("target", "url", "version")
"""What names an external retriever's answers (the rest is transport: how the calls are made)."""
NO_RERANKER = "none"
"""``reranker=none``: no rerank stage (the absence of a backend, not one)."""
TRANSPORT_KEYS = frozenset(
    {
        "base_url",
        "max_retries",
        "timeout_s",
        "retry_base_delay_s",
        "retry_max_delay_s",
        "retry_deadline_s",
        "api_key_env",
        "max_reply_mb",
    }
)
"""Backend settings that change how a call is made, never its result: kept out of run and unit ids."""


@dataclass(frozen=True)
class RetrieverSettings:
    """How the candidate pool is retrieved."""

    name: str = field(metadata={"choices": RETRIEVERS})
    fusion: str = field(default="rrf", metadata={"choices": ("rrf", "max")})
    """Hybrid fusion: rrf or max-normalised (never a sum of raw scores)."""
    rrf_k: int = field(default=60, metadata={"min": 1})
    bm25_k1: float = field(default=1.5, metadata={"min": 0.0, "max": 10.0})
    bm25_b: float = field(default=0.75, metadata={"min": 0.0, "max": 1.0})
    thresholds: tuple[float, ...] = field(default=(0.0,), metadata={"allow_empty": True})
    """This retriever's threshold grid (scores differ in scale between retrievers); empty (dense and hybrid's
    default): built from the set's own pool scores, as ``threshold=auto`` builds it."""
    index: str = field(default="exact", metadata={"choices": INDEXES})
    """Dense search: ``exact`` (every unit scored), ``hnsw`` (usearch graph; recall against exact reported) or
    ``lancedb`` (a LanceDB table per chunking: exact when ``lancedb_index=flat``, else recall reported)."""
    hnsw_connectivity: int = field(default=16, metadata={"min": 2, "max": 256})
    hnsw_expansion_add: int = field(default=128, metadata={"min": 1})
    hnsw_expansion_search: int = field(default=64, metadata={"min": 1})
    lancedb_index: str = field(default="flat", metadata={"choices": LANCEDB_INDEXES})
    lancedb_partitions: int | None = field(default=None, metadata={"min": 1})
    """IVF partitions of an approximate LanceDB index; None: LanceDB's choice (about sqrt of the rows)."""
    lancedb_nprobes: int = field(default=20, metadata={"min": 1})
    """IVF partitions searched per question."""
    target: str | None = None
    """retriever=external: ``package.module:function``, called as ``function(queries, k)`` (``documents=`` too
    when it declares that parameter: the labelled set's documents)."""
    url: str | None = None
    """retriever=external: an HTTP endpoint taking ``{"queries": [...], "k": N}`` by POST."""
    version: str = ""
    """retriever=external: production's index version; part of every cached reply's key (change it on a reindex)."""
    batch_size: int = field(default=32, metadata={"min": 1, "max": 10_000})
    max_concurrency: int = field(default=4, metadata={"min": 1, "max": 64})
    timeout_s: float = field(default=30.0, metadata={"above": 0.0})
    """retriever.url: one request from connect to the reply's last byte (a retry gets its own)."""
    max_reply_mb: float = field(default=32.0, metadata={"above": 0.0})
    """retriever.url: a reply larger than this is refused (read in pieces: memory stays bounded by it)."""
    max_retries: int = field(default=3, metadata={"min": 0, "max": 100})
    retry_base_delay_s: float = field(default=0.5, metadata={"min": 0.0})
    retry_max_delay_s: float = field(default=10.0, metadata={"min": 0.0})

    def __post_init__(self) -> None:
        plugin = RETRIEVERS.plugin(self.name)
        if plugin is not None:  # an installed retriever: the external contract, its entry point the target
            if self.url is not None or self.target not in (None, plugin.value):
                raise ConfigError(f"retriever.target: retriever={self.name} is {plugin.where}; drop target and url")
            object.__setattr__(self, "target", plugin.value)
        if self.index not in self.backend.indexes:
            takers = " or ".join(f"retriever={name}" for name in taking_index(self.index))
            raise ConfigError(f"retriever.index: {self.index} applies to {takers}, not {self.name}; use index=exact")
        if self.external and (self.target is None) == (self.url is None):
            raise ConfigError(
                "retriever.target: retriever=external needs exactly one of retriever.target=package.module:function "
                "and retriever.url=http://host:port/path"
            )
        if self.url is not None:  # with the rest of the config, before any work: never a file:// read
            problem = url_problem(self.url)
            if problem is not None:
                raise ConfigError(f"retriever.url: {problem}; expected http://host:port/path or https://...")

    @property
    def max_reply_bytes(self) -> int:
        return int(self.max_reply_mb * 1024 * 1024)

    @property
    def backend(self) -> RetrieverBackend:
        """What this retriever needs and how it searches (evalkit.retrieval.backends)."""
        return backend_of(self.name)

    @property
    def external(self) -> bool:
        """Production's own retriever: ``retriever=external`` or an installed retriever plugin."""
        return self.backend.external

    def identity(self) -> dict[str, Any]:
        """What changes the pool (the threshold grid does not: it slices the pool).

        Each index's keys count only with that index (exact leaves out ``index`` too), so adding
        an index's keys changed no existing run or unit id.
        """
        if self.external:
            return {"name": self.name, **{k: getattr(self, k) for k in EXTERNAL_IDENTITY}}
        skip = {"thresholds", *EXTERNAL_KEYS}
        skip |= {"index"} if self.index == "exact" else set()
        skip |= set() if self.index == "hnsw" else set(HNSW_KEYS)
        skip |= set() if self.index == "lancedb" else set(LANCEDB_KEYS)
        if self.lancedb_index == "flat":  # a full scan: IVF partitions and probes do not change its pool
            skip |= {"lancedb_partitions", "lancedb_nprobes"}
        return {k: v for k, v in asdict(self).items() if k not in skip}


@dataclass(frozen=True)
class RerankerBackend:
    """A built-in reranker as evalkit sees it: where its factory is and what it declares (no name is tested)."""

    target: str
    """``module:attribute`` of ``factory(settings, cache, pricing_dir) -> Reranker`` (the reranker entry-point
    contract), imported when a config names it."""
    keys: frozenset[str] = frozenset()
    """Its settings besides ``name`` and ``thresholds``: ``reranker=local`` with ``model=`` is a mistake."""
    priced: bool = False
    """Billed per request, its ``model`` priced from the price files (the cost model adds it)."""


_RERANK = "evalkit.retrieval.rerank"
_COHERE_KEYS = frozenset({"model", "max_documents_per_request", "max_tokens_per_doc", "max_reply_mb", *TRANSPORT_KEYS})
RERANKER_BACKENDS: Registry[RerankerBackend] = Registry(
    "reranker",
    {
        "local": RerankerBackend(f"{_RERANK}.local:NanoReranker.from_settings"),
        "e5": RerankerBackend(f"{_RERANK}.local:E5Reranker.from_settings"),
        "cohere": RerankerBackend(f"{_RERANK}.cohere:CohereReranker.from_settings", _COHERE_KEYS, priced=True),
        "fake": RerankerBackend("evalkit.retrieval.fake:OverlapReranker.from_settings"),  # wiring tests only
    },
)
"""The registration table: the one place a built-in reranker's name is written in code. An installed plugin
(entry-point group ``evalkit.rerankers``) names its factory itself; its keys are its name and its thresholds
(on its own score scale)."""
RERANKERS = Choices("reranker", (NO_RERANKER, *RERANKER_BACKENDS.builtin_names()))
"""``none``, evalkit's own rerankers, then installed plugins'."""
PLUGIN_RERANKER = RerankerBackend("")
"""An installed reranker's traits as far as evalkit knows them, and ``reranker=none``'s: unpriced, no keys."""


def reranker_backend(name: str) -> RerankerBackend:
    """What ``reranker.name`` declares: evalkit's own backend's traits, else a plugin's (or none's)."""
    return RERANKER_BACKENDS[name] if RERANKER_BACKENDS.builtin(name) else PLUGIN_RERANKER


@dataclass(frozen=True)
class RerankerSettings:
    """The rerank stage: ``none``, a local model, or Cohere with its request settings."""

    name: str = field(default="none", metadata={"choices": RERANKERS})
    thresholds: tuple[float, ...] | None = None
    """The reranker's own threshold grid (on its score scale)."""
    model: str = "rerank-v3.5"
    max_documents_per_request: int = field(default=1000, metadata={"min": 1, "max": 1000})
    max_tokens_per_doc: int = field(default=4096, metadata={"min": 1})
    max_retries: int = field(default=4, metadata={"min": 0, "max": 100})
    retry_base_delay_s: float = field(default=1.0, metadata={"min": 0.0})
    retry_max_delay_s: float = field(default=60.0, metadata={"min": 0.0})
    """Cap on any single wait, a server's ``Retry-After`` included (evalkit/retry.py)."""
    retry_deadline_s: float | None = field(default=None, metadata={"above": 0.0})
    """Give up rather than wait past this many seconds since a request's first attempt; None: no deadline."""
    timeout_s: float = field(default=60.0, metadata={"above": 0.0})
    max_reply_mb: float = field(default=64.0, metadata={"above": 0.0})
    """A larger reply is refused (one line), never held whole (a 1,000-document rerank reply is about 100 KB)."""
    api_key_env: str = "COHERE_API_KEY"
    base_url: str | None = None

    @property
    def enabled(self) -> bool:
        return self.name != NO_RERANKER

    @property
    def backend(self) -> RerankerBackend:
        """What this reranker declares (its table entry)."""
        return reranker_backend(self.name)

    @property
    def priced_model(self) -> str | None:
        """The model the price files charge per query for (None: a reranker that costs nothing per call)."""
        return self.model if self.backend.priced else None

    def identity(self) -> dict[str, Any]:
        """What changes rerank scores: the backend and its model settings, not transport or thresholds."""
        keys = {"name", *self.backend.keys} - TRANSPORT_KEYS
        return {k: v for k, v in asdict(self).items() if k in keys}


def check_reranker_keys(raw: dict[str, Any], where: str = "reranker") -> None:
    """Each backend takes its own keys: ``reranker=local`` with ``model=`` is a mistake, not a no-op."""
    name = raw.get("name", "none")
    if name not in RERANKERS:
        raise ConfigError(f"{where}.name: unknown reranker {name!r}; known: {', '.join(RERANKERS)}")
    keys = {"name"} if name == NO_RERANKER else {"name", "thresholds", *reranker_backend(name).keys}
    check_keys(raw, keys, where)


def score_range(retriever: RetrieverSettings, reranker: str) -> tuple[float, float] | None:
    """The values the score a threshold is compared with can take, when the retriever alone sets it.

    BM25 scores are never negative; dense scores are cosines in [-1, 1], and so are hybrid ones (a hybrid
    threshold compares the dense cosine of each fused hit, never the rank-based fused value). With a reranker
    (its own scale): None (not known here).
    """
    if reranker != NO_RERANKER:
        return None
    return retriever.backend.score_range(retriever)


def threshold_warnings(thresholds: tuple[float, ...], retriever: RetrieverSettings, reranker: str) -> list[str]:
    """One line per threshold outside the score's range: below it filters nothing, above it returns nothing."""
    known = score_range(retriever, reranker)
    if known is None:
        return []
    low, high = known
    named = retriever.backend.score_name
    what = f"{retriever.name} scores ({named})" if named else f"{retriever.name} scores"
    where = f"{what} lie in [{low:g}, {high:g}]" if math.isfinite(high) else (
        f"{what} are never below {low:g}")  # fmt: skip
    out = []
    for t in thresholds:
        if t < low:
            out.append(f"threshold {t:g} is below every score ({where}): it filters nothing, like {low:g}")
        elif t > high:
            out.append(f"threshold {t:g} is above every score ({where}): no question gets any context")
    return out
