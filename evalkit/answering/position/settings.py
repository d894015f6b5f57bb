"""Settings of the position experiment, read from the ``position:`` config block."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from evalkit.answering.context import (
    Placement,
    parse_placement,
)
from evalkit.settings import ConfigError, check_keys, config_int

ArmKind = Literal["stuff", "retrieve", "files"]
OUT_DIR = "position"
"""Subfolder of the run folder the experiment writes to."""
SUMMARY = "summary.parquet"
"""Accuracy per (arm, placement, gold bucket by character midpoint), ``bucket_by`` = ``chars``."""
SUMMARY_BLOCKS = "summary_blocks.parquet"
"""The same table with the gold bucket by block index, ``bucket_by`` = ``blocks``."""
EFFECTS_JSON = "effects.json"
"""Paired position effects with MDEs, flip rates, where the gold landed, arms, refusals, citations."""
STATUS_JSON = "status.json"
"""Whether the experiment ran, why not, and the command that runs it."""
DEFAULT_ARMS = ("stuff", "retrieve-5", "retrieve-10", "files")
DEFAULT_PLACEMENTS = ("shuffle", "gold_at:head", "gold_at:mid", "gold_at:tail")
SHUFFLE = parse_placement("shuffle")


@dataclass(frozen=True)
class Arm:
    """One way of filling the context."""

    name: str
    """Config spelling: ``stuff``, ``retrieve-<k>``, ``files`` or ``files-<k>``."""
    kind: ArmKind
    """``stuff``, ``retrieve`` or ``files``."""
    k: int = 0
    """Pool units retrieved (``retrieve`` and ``files``); 0 for ``stuff``."""


def parse_arm(name: str, files_top_k: int = 5) -> Arm:
    """``"retrieve-5"`` as ``Arm("retrieve-5", "retrieve", 5)``; ``files`` takes ``files_top_k`` units."""
    kind, _, k_text = str(name).partition("-")
    if kind == "stuff" and not k_text:
        return Arm("stuff", "stuff")
    if kind in ("retrieve", "files"):
        if not k_text and kind == "files":
            return Arm("files", "files", files_top_k)
        if k_text.isdigit() and int(k_text) >= 1:
            return Arm(str(name), kind, int(k_text))  # type: ignore[arg-type]  # checked above
    raise ConfigError(f"position.arms: {name!r} is not stuff, retrieve-<k>, files or files-<k> (k >= 1)")


@dataclass(frozen=True)
class SubsetSpec:
    """Which questions the experiment asks."""

    size: int | None = 12
    """Questions in the subset; None: every question of the sweep."""
    unanswerable: int = 2
    """Unanswerable questions included (as many as exist, up to this), the rest answerable."""
    seed: int = 0
    """Seed of the stratified draw (by ``lang`` within answerable and within unanswerable)."""
    unanswerable_share: float = 0.2
    """With a time budget: the share of unanswerable questions as the subset grows (``unanswerable`` is then unused)."""


@dataclass(frozen=True)
class BudgetSpec:
    """Token budget of one prompt; None fields come from the generator."""

    window: int | None = None
    """Context window; None: the generator's (llama.cpp ``n_ctx``, Claude's window), else the price table's."""
    max_output: int | None = None
    """Reserved for the answer; None: the generator config's ``max_tokens``."""
    headroom: int = 256
    """Reserved for chat templates and counting error (at least the generator's own ``headroom``)."""
    context_share: float = 0.5
    """Retrieved items (retrieve and files arms) take at most this share of the window."""


@dataclass(frozen=True)
class PositionSettings:
    """The ``position:`` config block, validated."""

    arms: tuple[Arm, ...] = tuple(parse_arm(a) for a in DEFAULT_ARMS)
    """Arms, in the order the summary lists them."""
    repeats: int = 5
    """Seeded shuffles of each repeated placement on the controlled arms: ``shuffle``, and ``gold_at:*`` (the gold
    item fixed, the other items shuffled; one shuffle seed per repeat, shared by head, mid and tail: paired)."""
    placements: tuple[Placement, ...] = tuple(parse_placement(p) for p in DEFAULT_PLACEMENTS)
    """Placements of the controlled arms: ``shuffle``, ``gold_at:*`` (repeated) and ``score`` (once)."""
    controlled_arms: tuple[str, ...] | None = ("retrieve-10",)
    """Arms the placements run on; None: every arm. Every other arm runs ``shuffle`` only."""
    arm_repeats: int | None = None
    """Shuffles on the arms that are not controlled; None: ``repeats``."""
    time_budget_s: float | None = None
    """Size the subset to fit this many seconds at the planning speeds below (questions are added in a seeded,
    stratified order while the planned time fits; ``subset.size`` then caps it); None: ``subset.size`` alone."""
    subset: SubsetSpec = SubsetSpec()
    chunking: str | None = None
    """Chunking key whose pool is read; None: the baseline chunking when swept, else the first of the grid."""
    budget: BudgetSpec = BudgetSpec()
    refusals: tuple[str, ...] = ()
    """Extra strings scored as refusals, besides the generator's and :data:`DEFAULT_REFUSALS`."""
    seed: int = 0
    """Seed of the shuffles."""
    tokenizer_family: str | None = None
    """Family for local token estimates; None: the model's in conf/pricing, else ``generic``."""
    count_with_model: bool = True
    """Count planned prompts with the model's own counter when it has one (Anthropic count_tokens)."""
    prompt_tokens_per_s: float = 150.0
    """Prompt reading speed of a local model, for the planned time."""
    output_tokens_per_s: float = 31.0
    """Generation speed of a local model, for the planned time."""
    expected_output_tokens: int = 32
    """Output tokens assumed per answer in the planned time and cost."""
    workers: int = 1
    """Parallel single requests (remote backends); a local model answers one at a time anyway."""
    flush_every: int = 8
    """Rows are written after every this many answers."""
    n_resamples: int = 2000
    """Bootstrap resamples of each interval."""
    dry_run: bool = False
    """Plan and print, send nothing."""

    @classmethod
    def from_config(cls, cfg: Mapping[str, Any] | None, *, seed: int = 0) -> PositionSettings:
        """Read the ``position:`` block (unknown keys are errors); ``seed`` is the sweep's, used when unset."""
        cfg = dict(cfg or {})
        known = {
            "arms", "files_top_k", "repeats", "placements", "controlled_arms", "subset", "chunking", "budget",
            "refusals", "seed", "tokenizer_family", "count_with_model", "prompt_tokens_per_s",
            "output_tokens_per_s", "expected_output_tokens", "workers", "flush_every", "n_resamples", "dry_run",
            "arm_repeats", "time_budget_s",
        }  # fmt: skip
        check_keys(cfg, known, "position")
        files_k = config_int(cfg.get("files_top_k", 5), "position.files_top_k", 1)
        arms = tuple(parse_arm(a, files_k) for a in _list(cfg.get("arms", DEFAULT_ARMS), "position.arms"))
        if not arms or len({a.name for a in arms}) != len(arms):
            raise ConfigError("position.arms: give at least one arm, each once")
        try:
            placements = tuple(parse_placement(str(p)) for p in _list(cfg.get("placements", DEFAULT_PLACEMENTS), ""))
        except ValueError as exc:
            raise ConfigError(f"position.placements: {exc}") from exc
        if not placements or len({p.name for p in placements}) != len(placements):
            raise ConfigError("position.placements: give at least one placement, each once")
        controlled = cfg.get("controlled_arms", ("retrieve-10",))
        controlled_arms = None if controlled is None else tuple(str(a) for a in _list(controlled, ""))
        names = {a.name for a in arms}
        deterministic = any(p.policy != "shuffle" for p in placements)
        if deterministic and controlled_arms is not None and not set(controlled_arms) <= names:
            missing = ", ".join(sorted(set(controlled_arms) - names))
            raise ConfigError(f"position.controlled_arms: {missing} not among position.arms")
        subset_cfg = dict(cfg.get("subset") or {})
        check_keys(subset_cfg, {"size", "unanswerable", "unanswerable_share", "seed"}, "position.subset")
        size = subset_cfg.get("size", 12)
        budget_cfg = dict(cfg.get("budget") or {})
        check_keys(budget_cfg, {"window", "max_output", "headroom", "context_share"}, "position.budget")
        window, max_output = budget_cfg.get("window"), budget_cfg.get("max_output")
        share = float(budget_cfg.get("context_share", 0.5))
        if not 0.0 < share <= 1.0:
            raise ConfigError(f"position.budget.context_share: {share} must lie in (0, 1]")
        family = cfg.get("tokenizer_family")
        run_seed = config_int(cfg.get("seed", seed), "position.seed", 0)
        arm_repeats, budget_s = cfg.get("arm_repeats"), cfg.get("time_budget_s")
        return cls(
            arms=arms,
            repeats=config_int(cfg.get("repeats", 5), "position.repeats", 1),
            placements=placements,
            controlled_arms=controlled_arms,
            subset=SubsetSpec(
                size=None if size is None else config_int(size, "position.subset.size", 1),
                unanswerable=config_int(subset_cfg.get("unanswerable", 2), "position.subset.unanswerable", 0),
                seed=config_int(subset_cfg.get("seed", run_seed), "position.subset.seed", 0),
                unanswerable_share=_share(subset_cfg.get("unanswerable_share", 0.2)),
            ),
            chunking=None if cfg.get("chunking") is None else str(cfg["chunking"]),
            budget=BudgetSpec(
                window=None if window is None else config_int(window, "position.budget.window", 1),
                max_output=None if max_output is None else config_int(max_output, "position.budget.max_output", 1),
                headroom=config_int(budget_cfg.get("headroom", 256), "position.budget.headroom", 0),
                context_share=share,
            ),
            refusals=tuple(str(r) for r in _list(cfg.get("refusals") or (), "position.refusals")),
            seed=run_seed,
            tokenizer_family=None if family is None else str(family),
            count_with_model=bool(cfg.get("count_with_model", True)),
            prompt_tokens_per_s=_positive(cfg.get("prompt_tokens_per_s", 150.0), "position.prompt_tokens_per_s"),
            output_tokens_per_s=_positive(cfg.get("output_tokens_per_s", 31.0), "position.output_tokens_per_s"),
            expected_output_tokens=config_int(
                cfg.get("expected_output_tokens", 32), "position.expected_output_tokens", 0
            ),
            workers=config_int(cfg.get("workers", 1), "position.workers", 1),
            flush_every=config_int(cfg.get("flush_every", 8), "position.flush_every", 1),
            n_resamples=config_int(cfg.get("n_resamples", 2000), "position.n_resamples", 1),
            dry_run=bool(cfg.get("dry_run", False)),
            arm_repeats=None if arm_repeats is None else config_int(arm_repeats, "position.arm_repeats", 1),
            time_budget_s=None if budget_s is None else _positive(budget_s, "position.time_budget_s"),
        )

    def is_controlled(self, arm: Arm) -> bool:
        return self.controlled_arms is None or arm.name in self.controlled_arms

    def placements_for(self, arm: Arm) -> tuple[Placement, ...]:
        """Placements run on ``arm``: the configured ones on a controlled arm, ``shuffle`` on every other."""
        return self.placements if self.is_controlled(arm) else (SHUFFLE,)

    def repeats_for(self, placement: Placement, arm: Arm | None = None) -> int:
        """Shuffles of a placement on ``arm``: ``score`` runs once (a repeat would resend the same prompt)."""
        if placement.policy == "score":
            return 1
        if arm is not None and not self.is_controlled(arm):
            return self.arm_repeats or self.repeats
        return self.repeats


def _list(value: Any, key: str) -> list[Any]:
    if isinstance(value, str):
        return [value]
    try:
        return list(value)
    except TypeError as exc:
        raise ConfigError(f"{key}: expected a list, got {value!r}") from exc


def _share(value: Any) -> float:
    share = _positive(value, "position.subset.unanswerable_share") if value else 0.0
    if share >= 1.0:
        raise ConfigError(f"position.subset.unanswerable_share: {share} must lie in [0, 1)")
    return share


def _positive(value: Any, key: str) -> float:
    try:
        number = float(value)
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"{key}: {value!r} is not a number") from exc
    if not number > 0 or math.isinf(number):
        raise ConfigError(f"{key}: {number} must be a positive number")
    return number
