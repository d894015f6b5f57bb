"""Settings of the position experiment, read from the ``position:`` config block."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from typing import Any, ClassVar, Literal

from evalkit.answers.context import (
    Placement,
    parse_placement,
)
from evalkit.settings import ConfigError, check_keys, parse_settings

ArmKind = Literal["stuff", "retrieve", "files", "closed"]
StuffScope = Literal["document", "corpus"]
CLOSED_BOOK = "closed-book"
"""The control arm: the question alone, no context (what the model knows without reading)."""
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
    if name == CLOSED_BOOK:
        return Arm(CLOSED_BOOK, "closed")
    if kind in ("retrieve", "files"):
        if not k_text and kind == "files":
            return Arm("files", "files", files_top_k)
        if k_text.isdigit() and int(k_text) >= 1:
            return Arm(str(name), kind, int(k_text))  # type: ignore[arg-type]  # checked above
    raise ConfigError(f"position.arms: {name!r} is not stuff, retrieve-<k>, files, files-<k> (k >= 1) or closed-book")


@dataclass(frozen=True)
class SubsetSpec:
    """Which questions the experiment asks."""

    size: int | None = field(default=12, metadata={"min": 1})
    """Questions in the subset; None: every question of the sweep."""
    unanswerable: int = field(default=2, metadata={"min": 0})
    """Unanswerable questions included (as many as exist, up to this), the rest answerable."""
    seed: int | None = field(default=None, metadata={"min": 0})
    """Seed of the stratified draw (by ``lang`` within answerable and within unanswerable); None: position.seed."""
    unanswerable_share: float = field(default=0.2, metadata={"min": 0.0, "max": 0.99})
    """With a time budget: the share of unanswerable questions as the subset grows (``unanswerable`` is then unused)."""


@dataclass(frozen=True)
class BudgetSpec:
    """Token budget of one prompt; None fields come from the generator."""

    window: int | None = field(default=None, metadata={"min": 1})
    """Context window; None: the generator's (llama.cpp ``n_ctx``, Claude's window), else the price table's."""
    max_output: int | None = field(default=None, metadata={"min": 1})
    """Reserved for the answer; None: the generator config's ``max_tokens``."""
    headroom: int = field(default=256, metadata={"min": 0})
    """Reserved for chat templates and counting error (at least the generator's own ``headroom``)."""
    context_share: float = field(default=0.5, metadata={"above": 0.0, "max": 1.0})
    """Retrieved items (retrieve and files arms) take at most this share of the window."""


@dataclass(frozen=True)
class StuffSpec:
    """What the ``stuff`` arm puts in the context."""

    scope: StuffScope = "document"
    """``document``: the gold's whole document (the seed's "stuff the whole document"); ``corpus``: the gold's
    documents first, then as many other documents as the window holds (whole, never cut), with the token count."""


_POSITIVE = {"above": 0.0}
_PRESETS = ("custom", "smoke", "powered", "protocol")
_LIST = {"scalar_ok": True}
_MAYBE_EMPTY = {"scalar_ok": True, "allow_empty": True}


@dataclass(frozen=True)
class _Spelled:
    """The four keys whose written form is not their settings' form (arm and placement names, the seeds)."""

    arms: tuple[str, ...] = field(default=DEFAULT_ARMS, metadata=_LIST)
    files_top_k: int = field(default=5, metadata={"min": 1})
    placements: tuple[str, ...] = field(default=DEFAULT_PLACEMENTS, metadata=_LIST)
    seed: int | None = field(default=None, metadata={"min": 0})


_SPELLED = frozenset(f.name for f in fields(_Spelled))


@dataclass(frozen=True)
class PositionSettings:
    """The ``position:`` config block, validated: one record, read by :meth:`from_config` with every key checked
    by :func:`evalkit.settings.parse_settings` (the metadata on each field is its rule)."""

    WRITTEN_FORMS: ClassVar[type] = _Spelled
    """How the keys spelt otherwise in a config file are written (the config files' JSON Schema reads them)."""

    arms: tuple[Arm, ...] = tuple(parse_arm(a) for a in DEFAULT_ARMS)
    """Arms, in the order the summary lists them (written as names: ``stuff``, ``retrieve-5``, ``files``)."""
    repeats: int = field(default=5, metadata={"min": 1})
    """Seeded shuffles of each repeated placement on the controlled arms: ``shuffle``, and ``gold_at:*`` (the gold
    item fixed, the other items shuffled; one shuffle seed per repeat, shared by head, mid and tail: paired)."""
    placements: tuple[Placement, ...] = tuple(parse_placement(p) for p in DEFAULT_PLACEMENTS)
    """Placements of the controlled arms: ``shuffle``, ``gold_at:*`` (repeated) and ``score`` (once)."""
    controlled_arms: tuple[str, ...] | None = field(default=("retrieve-10",), metadata=_LIST)
    """Arms the placements run on; None: every arm. Every other arm runs ``shuffle`` only."""
    arm_repeats: int | None = field(default=None, metadata={"min": 1})
    """Shuffles on the arms that are not controlled; None: ``repeats``."""
    time_budget_s: float | None = field(default=None, metadata=_POSITIVE)
    """Size the subset to fit this many seconds at the planning speeds below (questions are added in a seeded,
    stratified order while the planned time fits; ``subset.size`` then caps it); None: ``subset.size`` alone."""
    subset: SubsetSpec = SubsetSpec()
    chunking: str | None = None
    """Chunking key whose pool is read; None: the baseline chunking when swept, else the first of the grid."""
    budget: BudgetSpec = BudgetSpec()
    refusals: tuple[str, ...] = field(default=(), metadata=_MAYBE_EMPTY)
    """Extra strings scored as refusals, besides the generator's and :data:`DEFAULT_REFUSALS`."""
    seed: int = 0
    """Seed of the shuffles (written ``null``: the sweep's seed)."""
    tokenizer_family: str | None = None
    """Family for local token estimates; None: the model's in conf/pricing, else ``generic``."""
    count_with_model: bool = True
    """Count planned prompts with the model's own counter when it has one (Anthropic count_tokens)."""
    prompt_tokens_per_s: float = field(default=150.0, metadata=_POSITIVE)
    """Prompt reading speed of a local model, for the planned time."""
    output_tokens_per_s: float = field(default=31.0, metadata=_POSITIVE)
    """Generation speed of a local model, for the planned time."""
    expected_output_tokens: int = field(default=32, metadata={"min": 0})
    """Output tokens assumed per answer in the planned time and cost."""
    workers: int = field(default=1, metadata={"min": 1})
    """Parallel single requests (remote backends); a local model answers one at a time anyway."""
    flush_every: int = field(default=8, metadata={"min": 1})
    """Rows are written after every this many answers."""
    n_resamples: int = field(default=2000, metadata={"min": 1})
    """Bootstrap resamples of each interval."""
    dry_run: bool = False
    """Plan and print, send nothing."""
    preset: str = field(default="custom", metadata={"choices": _PRESETS})
    """``smoke`` (the Quickstart's: labelled as such, says what it cannot detect), ``powered``, ``protocol``."""
    stuff: StuffSpec = StuffSpec()
    clean: bool = True
    """Controlled retrieval contexts are clean (:mod:`evalkit.answers.position.clean`); false: the pool's top k."""
    subsample_arms: tuple[str, ...] = field(default=(), metadata=_MAYBE_EMPTY)
    """Arms asked on the first ``subsample_size`` questions only (powered: retrieve-10 and stuff)."""
    subsample_size: int | None = field(default=None, metadata={"min": 1})
    """Questions of the subsample arms; None: every question."""
    target_mde: float = field(default=0.10, metadata={"above": 0.0, "max": 1.0})
    """Powered: the paired head-vs-mid effect (share of questions) the run is sized to detect at 80% power."""
    pilot_questions: int = field(default=50, metadata={"min": 2})
    """Powered: questions of the pilot whose measured discordance sizes the run."""
    max_questions: int | None = field(default=None, metadata={"min": 1})
    """Powered: never plan more questions than this (None: the set)."""
    rounds: int = field(default=4, metadata={"min": 1})
    """Powered: rounds in one invocation, the pilot then re-plans on the measured discordance (1: the pilot only;
    the next invocation re-plans). The size only grows; a round that does not grow it ends the run."""
    max_tokens: int | None = field(default=None, metadata={"min": 1})
    """Output cap of every answer (below the generator's ``max_tokens``); None: the generator's."""
    loglik: bool = False
    """Also score the log-likelihood of the gold answer under every sent prompt (where the generator can)."""

    @classmethod
    def from_config(cls, cfg: Mapping[str, Any] | None, *, seed: int = 0) -> PositionSettings:
        """Read the ``position:`` block strictly (:func:`evalkit.settings.parse_settings`); ``seed``: the sweep's."""
        if cfg is not None and not isinstance(cfg, Mapping):
            raise ConfigError(f"position: expected a section of keys, got {cfg!r}"[:120])
        raw = dict(cfg or {})
        check_keys(raw, {f.name for f in fields(cls)} | _SPELLED, "position")  # one list for every key's typo
        spelled = parse_settings(_Spelled, {k: v for k, v in raw.items() if k in _SPELLED}, "position")
        arms = tuple(parse_arm(a, spelled.files_top_k) for a in spelled.arms)
        if len({a.name for a in arms}) != len(arms):
            raise ConfigError("position.arms: give each arm once")
        try:
            placements = tuple(parse_placement(p) for p in spelled.placements)
        except ValueError as exc:
            raise ConfigError(f"position.placements: {exc}") from exc
        if len({p.name for p in placements}) != len(placements):
            raise ConfigError("position.placements: give each placement once")
        run_seed = seed if spelled.seed is None else spelled.seed
        rest = {k: v for k, v in raw.items() if k not in _SPELLED}
        settings = parse_settings(cls, rest, "position", arms=arms, placements=placements, seed=run_seed)
        names = {a.name for a in arms}
        for key, listed in (("controlled_arms", settings.controlled_arms), ("subsample_arms", settings.subsample_arms)):
            if listed is not None and not set(listed) <= names:
                missing = ", ".join(sorted(set(listed) - names))
                raise ConfigError(f"position.{key}: {missing} not among position.arms")
        if settings.subset.seed is None:
            settings = replace(settings, subset=replace(settings.subset, seed=run_seed))
        return settings

    def on_subsample(self, arm: Arm) -> bool:
        """The arm is asked on the subsample only."""
        return self.subsample_size is not None and arm.name in self.subsample_arms

    def is_controlled(self, arm: Arm) -> bool:
        if arm.kind == "closed":
            return False  # no context: nothing to place
        return self.controlled_arms is None or arm.name in self.controlled_arms

    def placements_for(self, arm: Arm) -> tuple[Placement, ...]:
        """Placements run on ``arm``: the configured ones on a controlled arm, ``shuffle`` on every other."""
        return self.placements if self.is_controlled(arm) else (SHUFFLE,)

    def repeats_for(self, placement: Placement, arm: Arm | None = None) -> int:
        """Shuffles of a placement on ``arm``: ``score`` runs once (a repeat would resend the same prompt)."""
        if placement.policy == "score" or (arm is not None and arm.kind == "closed"):
            return 1
        if arm is not None and not self.is_controlled(arm):
            return self.arm_repeats or self.repeats
        return self.repeats
