"""Settings of the answer check, read from the ``answer_check:`` config block (``conf/answer_check/*.yaml``).

The dataclass is the one source of defaults: they are the ``smoke`` preset's (the sweep's default), and each
preset file in ``conf/answer_check/`` sets only its name and what it changes (a test keeps it so).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from evalkit.settings import ConfigError, parse_settings

ROLES = ("recommended", "cheaper", "moves", "gate_passing")
"""Configs of the retrieval decision the check can answer, beside production (always answered)."""
PRESETS = ("off", "smoke", "powered", "custom")
DESIGNS = ("stratified", "uniform")


@dataclass(frozen=True)
class AnswerCheckSettings:
    """The ``answer_check:`` block, validated (each field's metadata is its rule)."""

    preset: str = field(default="smoke", metadata={"choices": PRESETS})
    """``off``: no answers; ``smoke``: a few questions, labelled as such; ``powered``: a pilot, then the size
    that shows non-inferiority at the gate's answer margin with ``target_power``; ``custom``: ``questions``."""
    roles: tuple[str, ...] = field(default=ROLES, metadata={"scalar_ok": True, "choices": ROLES})
    """Which configs of the decision are answered besides production."""
    configs: tuple[str, ...] = field(default=(), metadata={"scalar_ok": True, "allow_empty": True})
    """Config ids answered besides the roles' (e.g. the one a pull request proposes), after production."""
    gate_passing_top: int = field(default=2, metadata={"min": 0})
    """How many of the gate-passing set (best primary first) the ``gate_passing`` role adds."""
    max_configs: int = field(default=3, metadata={"min": 1})
    """Configs answered at most, production included (roles in the order above fill it)."""
    questions: int = field(default=2, metadata={"min": 2})
    """Questions answered per config (smoke, custom; the same questions for every config: paired). The
    smoke's 2 keep the Quickstart at about 5 minutes (3 configs x 2 + 2 stuffed answers, ~25 s each locally)."""
    unanswerable_share: float = field(default=0.2, metadata={"min": 0.0, "max": 0.9})
    """Share of unanswerable questions in the sample (as many as the set has, up to this share)."""
    design: str = field(default="stratified", metadata={"choices": DESIGNS})
    """Powered: ``stratified`` draws where retrieval says answers can differ (identical contexts never asked,
    Neyman over retrieval-discordance strata, a prediction-powered estimate); ``uniform``: one paired sample."""
    pilot_questions: int = field(default=40, metadata={"min": 2})
    """Powered: the pilot whose discordance sizes the check."""
    max_questions: int | None = field(default=None, metadata={"min": 2})
    """Powered: never more questions than this (None: the set)."""
    target_power: float = field(default=0.8, metadata={"above": 0.0, "max": 0.99})
    """Powered: power to show non-inferiority at the margin when the true difference is 0."""
    max_tokens: int = field(default=48, metadata={"min": 1})
    """Output cap of every answer (answers are short; the cap bounds decoding time)."""
    context_share: float = field(default=0.75, metadata={"above": 0.0, "max": 1.0})
    """Share of the window the retrieved chunks may take (the lowest-ranked are dropped past it, counted)."""
    seed: int | None = field(default=None, metadata={"min": 0})
    """Seed of the question sample; None: the sweep's."""
    workers: int = field(default=1, metadata={"min": 1})
    """Parallel single requests for remote generators."""
    flush_every: int = field(default=8, metadata={"min": 1})
    """Rows are written after every this many answers (the resume point)."""
    latency_profile: str | None = None
    """A latency profile of production's generator (``python -m evalkit.latency probe``): first-token latency
    then constrains the objective and the gate although the answers come from a stand-in. None: latency
    constrains only when the answering model is the one ``cost:`` prices."""
    stuff: bool = True
    """Also answer with the gold's whole document (the stuff-or-retrieve comparison) on the same questions."""

    @property
    def enabled(self) -> bool:
        return self.preset != "off"

    @classmethod
    def from_config(cls, cfg: Mapping[str, Any] | None, *, seed: int = 0) -> AnswerCheckSettings:
        """Read the block strictly; ``seed``: the sweep's (used when the block's is null)."""
        if cfg is not None and not isinstance(cfg, Mapping):
            raise ConfigError(f"answer_check: expected a section of keys, got {cfg!r}"[:120])
        settings = parse_settings(cls, cfg or {}, "answer_check")
        return settings if settings.seed is not None else cls(**{**settings.__dict__, "seed": seed})
