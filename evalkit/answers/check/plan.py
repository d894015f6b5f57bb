"""What the answer check asks (pure): which configs, which questions, and each config's own context.

- **Configs.** Production, then the decision's configs by role (:data:`settings.ROLES`): the pick, the cheaper
  pick, each one-knob move's best value, the top of the gate-passing set; deduplicated, capped at
  ``max_configs``.
- **Questions.** One seeded sample for every config (the comparison is paired), stratified by answerability:
  about ``unanswerable_share`` unanswerable, the rest answerable, in labelled-set order.
- **Context as production builds it.** The config's chunking pool, the entries at or above its threshold in
  rank order, cut at its top_k (the same slice the retrieval metrics scored; a question with none gets no
  context: a zero-hit, which the model should answer with a refusal), rendered in rank order under the
  generator's window. The ``stuff`` arm sends the gold's whole documents instead (unanswerable questions have
  no gold document and are not stuffed).
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from evalkit.answers.blocks import ContextItem
from evalkit.answers.check.settings import AnswerCheckSettings
from evalkit.answers.context import Budget, assemble, whole_item
from evalkit.answers.generation.request import GenerationRequest
from evalkit.answers.placement import parse_placement
from evalkit.answers.pools import gold_doc_ids
from evalkit.answers.requests import RequestSpec, build_context_request
from evalkit.records import Document, Question
from evalkit.settings import ConfigError

PRODUCTION = "production"
STUFF = "stuff"
"""The arm that sends the gold's whole documents (the seed's "stuff the whole document")."""
RETRIEVE = "retrieve"
_RANK_ORDER = parse_placement("score")


@dataclass(frozen=True)
class CheckedConfig:
    """One config the check answers, and why it is checked."""

    config_id: str
    roles: tuple[str, ...]
    """``production``, ``recommended``, ``cheaper``, ``move:<knob>``, ``gate_passing``."""
    chunking: str
    top_k: int
    threshold: float


@dataclass(frozen=True)
class PlannedRequest:
    """One (config or arm, question) answer to get."""

    config_id: str
    """The config whose context this is (``stuff`` for the whole-document arm)."""
    question_id: str
    arm: str
    """``retrieve`` (a config's own context) or ``stuff``."""
    request: GenerationRequest
    unit_ids: tuple[str, ...]
    """Context units in the order sent (doc ids for ``stuff``)."""
    doc_ids: tuple[str, ...]
    """Documents the context shows, in order (answers' citations are checked against them)."""
    n_returned: int
    """Units the config returned before the window was applied."""
    n_dropped: int
    """Returned units left out to fit the window (lowest ranked first)."""
    planned_tokens: int
    """Local estimate of the prompt's tokens (system, context, question)."""
    fits: bool
    """False: the prompt does not fit the window even without context (not sent)."""
    doc_tokens: int = 0
    """``stuff``: estimated tokens of the gold's documents (the length bucket of the routing rule)."""


def configs_to_check(record: Mapping[str, Any], summary_rows: Mapping[str, Mapping[str, Any]],
                     settings: AnswerCheckSettings) -> tuple[CheckedConfig, ...]:  # fmt: skip
    """Production and the decision's configs by role, each once, at most ``max_configs``."""
    production = (record.get("production") or {}).get("config_id")
    if not production:
        return ()
    named: dict[str, list[str]] = {production: [PRODUCTION]}

    def add(config_id: Any, role: str) -> None:
        if config_id and str(config_id) in summary_rows:
            named.setdefault(str(config_id), []).append(role)

    for config_id in settings.configs:
        if config_id not in summary_rows:
            raise ConfigError(f"answer_check.configs: {config_id!r} is not a config of this sweep")
        add(config_id, "asked")

    for role in settings.roles:
        if role == "recommended":
            add((record.get("recommended") or {}).get("config_id"), role)
        elif role == "cheaper":
            add((record.get("cheaper_pick") or {}).get("config_id"), role)
        elif role == "moves":
            for move in record.get("one_knob_moves") or []:
                if move.get("swept") and move.get("beats_production"):
                    add(move.get("config_id"), f"move:{move['knob']}")
        elif role == "gate_passing":
            for entry in ((record.get("gate_passing") or {}).get("configs") or [])[: settings.gate_passing_top]:
                add(entry.get("config_id"), role)
    chosen = list(named.items())[: settings.max_configs]
    return tuple(_checked(config_id, tuple(roles), summary_rows[config_id]) for config_id, roles in chosen)


def _checked(config_id: str, roles: tuple[str, ...], row: Mapping[str, Any]) -> CheckedConfig:
    return CheckedConfig(config_id, roles, str(row["chunking"]), int(row["top_k"]), float(row["threshold"]))


def sample_questions(
    questions: Sequence[Question], n: int, unanswerable_share: float, seed: int
) -> tuple[Question, ...]:
    """``n`` questions (seeded), about ``unanswerable_share`` of them unanswerable, in labelled-set order.

    Growing ``n`` keeps every earlier question (each side is a prefix of one seeded order), so a powered
    check that grows from its pilot re-asks nothing.
    """
    answerable = [q for q in questions if q.answerable]
    unanswerable = [q for q in questions if not q.answerable]
    rng = random.Random(f"answer-check:{seed}")
    rng.shuffle(answerable)
    rng.shuffle(unanswerable)
    n = min(n, len(questions))
    n_unanswerable = min(len(unanswerable), round(n * unanswerable_share))
    n_answerable = min(len(answerable), n - n_unanswerable)
    n_unanswerable = min(len(unanswerable), n - n_answerable)
    chosen = {q.id for q in answerable[:n_answerable]} | {q.id for q in unanswerable[:n_unanswerable]}
    return tuple(q for q in questions if q.id in chosen)


def returned_items(ranked: Sequence[ContextItem], top_k: int, threshold: float) -> tuple[ContextItem, ...]:
    """The config's returned list: pool entries at or above the threshold, in rank order, first ``top_k``.

    The same slice :func:`evalkit.scoring.ir.returned.returned_mask` scores.
    """
    return tuple(item for item in ranked if item.score >= threshold)[:top_k]


def plan_requests(
    configs: Sequence[CheckedConfig],
    questions: Sequence[Question],
    ranked: Mapping[str, Mapping[str, Sequence[ContextItem]]],
    documents: Mapping[str, Document],
    spec: RequestSpec,
    budget: Budget,
    count_tokens: Callable[[str], int],
    *,
    stuff: bool,
) -> tuple[PlannedRequest, ...]:
    """Every (config, question) request, then the stuff arm's; ``ranked``: chunking -> question id -> pool."""
    planned = [
        _retrieve(config, question, ranked[config.chunking].get(question.id, ()), spec, budget, count_tokens)
        for config in configs
        for question in questions
    ]
    if stuff:
        planned += [_stuff(q, documents, spec, budget, count_tokens) for q in questions if gold_doc_ids(q)]
    return tuple(planned)


def _retrieve(
    config: CheckedConfig,
    question: Question,
    ranked: Sequence[ContextItem],
    spec: RequestSpec,
    budget: Budget,
    count_tokens: Callable[[str], int],
) -> PlannedRequest:
    returned = returned_items(ranked, config.top_k, config.threshold)
    prompts = spec.prompts(question.lang)
    placed = assemble(prompts["system"], question.question, returned, budget, count_tokens, _RANK_ORDER, 0)
    request = build_context_request(spec, question, placed.items)
    return PlannedRequest(
        config.config_id, question.id, RETRIEVE, request, tuple(i.unit_id for i in placed.items),
        tuple(dict.fromkeys(i.doc_id for i in placed.items)), len(returned), len(placed.dropped),
        placed.total_tokens, placed.fits,
    )  # fmt: skip


def _stuff(
    question: Question,
    documents: Mapping[str, Document],
    spec: RequestSpec,
    budget: Budget,
    count_tokens: Callable[[str], int],
) -> PlannedRequest:
    docs = [documents[doc_id] for doc_id in gold_doc_ids(question) if doc_id in documents]
    items = tuple(whole_item(doc, score=-float(i), is_gold=True) for i, doc in enumerate(docs))
    prompts = spec.prompts(question.lang)
    placed = assemble(
        prompts["system"], question.question, items, budget, count_tokens, _RANK_ORDER, 0, overflow="refuse"
    )
    doc_ids = tuple(d.doc_id for d in docs)
    doc_tokens = sum(count_tokens(d.text) for d in docs)
    request = build_context_request(spec, question, items)
    return PlannedRequest(
        STUFF, question.id, STUFF, request, doc_ids, doc_ids, len(items), 0, placed.total_tokens, placed.fits,
        doc_tokens,
    )  # fmt: skip
