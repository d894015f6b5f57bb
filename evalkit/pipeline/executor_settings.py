"""Where and how the units of work run (``conf/executor/*.yaml``): never what they compute."""

from __future__ import annotations

from dataclasses import dataclass, field

from evalkit.plugins import Choices, Registry
from evalkit.retrieval.pools import DEFAULT_BLOCK_CELLS
from evalkit.run.files import DEFAULT_RESULTS_BLOCK_ROWS

IN_PROCESS = "local"
"""``executor=local``: the units run in this process (the default; the one executor that may call production)."""


@dataclass(frozen=True)
class ExecutorBackend:
    """A built-in executor as evalkit sees it: where its factory is and where it runs the units."""

    target: str
    """``module:attribute`` of ``factory(settings) -> Executor`` (the executor entry-point contract), imported
    when a sweep runs: the plan checks names here without importing the executors (which import the units)."""
    in_process: bool = False
    """Runs the units in this process (the one kind of executor that may call production's retriever)."""


EXECUTORS: Registry[ExecutorBackend] = Registry(
    "executor",
    {
        IN_PROCESS: ExecutorBackend("evalkit.pipeline.executor:LocalExecutor", in_process=True),
        "ray": ExecutorBackend("evalkit.pipeline.executor:ray_executor"),
    },
)
"""The registration table: the one place a built-in executor's name is written in code; installed plugins
after evalkit's own (a plugin's entry point is its factory, and it runs elsewhere as far as evalkit knows)."""
EXECUTOR_NAMES = Choices("executor", EXECUTORS.builtin_names())


class ClusterError(RuntimeError):
    """The cluster could not finish a unit (after its retries): finished units are kept, the command resumes."""


class ClusterUnreachable(RuntimeError):
    """Ray could not be started or reached (a wrong address, a refused token): nothing ran, nothing to resume."""


@dataclass(frozen=True)
class ExecutorSettings:
    """``executor=local`` (this process) or ``executor=ray`` (a Ray cluster); results are identical."""

    name: str = field(default=IN_PROCESS, metadata={"choices": EXECUTOR_NAMES})
    address: str | None = None
    """Ray only. None: start a local Ray instance for the sweep and stop it after; ``auto``: the
    cluster this machine belongs to; ``host:port``: that cluster's head (``ray://`` Ray Client
    addresses also need ``pip install "ray[client]==2.60.0"``)."""
    num_cpus: int | None = field(default=None, metadata={"min": 1})
    """Ray only: CPUs of the local instance started when ``address`` is null (null: all)."""
    connect_timeout_s: float = field(default=20.0, metadata={"min": 1, "max": 300})
    """Ray only: how long reaching ``address`` may take before the sweep stops with one line (the GCS
    handshake within it also waits Ray's own 10 s, so keep it >= 11 to give the handshake a second)."""
    max_retries: int = field(default=3, metadata={"min": 0})
    """Ray only: times a task whose worker died is run again (its results are the same)."""
    batches_in_flight: int = field(default=8, metadata={"min": 1})
    """Ray only: embedding batches sent to the cluster before the driver waits for one."""
    chunk_ahead_min_chars: int = field(default=2_000_000, metadata={"min": 0})
    """Local only: from this many characters of documents, the next chunking is chunked in a second process
    while this one is retrieved and scored (both cores busy, two chunkings' chunks held at most). Below it,
    starting the process costs more than chunking saves (squad2-en, 0.55 M characters: 1.6 s for 6 chunkings)."""
    block_cells: int = field(default=DEFAULT_BLOCK_CELLS, metadata={"min": 1})
    """Scores held at once (questions x units) when retrieving: bounds memory on large corpora."""
    results_block_rows: int = field(default=DEFAULT_RESULTS_BLOCK_ROWS, metadata={"min": 1})
    """Result rows (config x question) held at once when results are written and aggregated; a block holds
    whole configs, so at least one config's questions. Bounds memory on large sets; never changes a number."""

    @property
    def in_process(self) -> bool:
        return EXECUTORS.builtin(self.name) and EXECUTORS[self.name].in_process
