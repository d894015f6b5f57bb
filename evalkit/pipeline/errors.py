"""The failures a user can act on, by kind, for the entry points to print as one line each.

The entry points import these from here so that they need not reach into the stages.
"""

from __future__ import annotations

from evalkit.answers.generation.request import GenerationError
from evalkit.cache import CacheUnusableError
from evalkit.chunking.chunkers import ChunkingError
from evalkit.cost.budget import BudgetExceeded
from evalkit.labels.read import LabelsetError
from evalkit.pipeline.executor_settings import ClusterError, ClusterUnreachable
from evalkit.plugins import PluginError
from evalkit.retrieval.embedding.base import EmbeddingError
from evalkit.retrieval.external.calls import ExternalCallError
from evalkit.retrieval.external.hits import ExternalHitError
from evalkit.retrieval.rerank.base import RerankError
from evalkit.retrieval.vectorstore import StoreError
from evalkit.run.disk import UnwritableError, describe_os_error, is_disk_error
from evalkit.run.lock import RunLocked
from evalkit.settings import ConfigError
from evalkit.usercode import UserCodeError


class NotStarted(RuntimeError):
    """A model, API or plugin failed while being set up, before any work (a missing model file or key): no resume."""


CALL_ERRORS: tuple[type[Exception], ...] = (
    EmbeddingError, RerankError, GenerationError, ClusterError, ExternalCallError, ExternalHitError, UserCodeError,
    StoreError,
)  # fmt: skip
"""A model or API call (or a target's, a plugin's code) failed: finished units are kept, the same command resumes."""
SETUP_ERRORS: tuple[type[Exception], ...] = (
    ConfigError, ChunkingError, RunLocked, CacheUnusableError, UnwritableError, PluginError, ClusterUnreachable,
    NotStarted,
)  # fmt: skip
"""The config cannot run: nothing was computed."""

__all__ = [
    "CALL_ERRORS",
    "SETUP_ERRORS",
    "BudgetExceeded",
    "ConfigError",
    "LabelsetError",
    "NotStarted",
    "PluginError",
    "UnwritableError",
    "describe_os_error",
    "is_disk_error",
]
