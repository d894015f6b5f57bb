"""The primary answer verdict: a gold answer is stated and the answer does not contradict it (pure).

Containment alone (a gold's tokens occur as a run in the answer) calls ``It is not 308, it is 136``
correct for gold ``308``. :func:`judge` works on :func:`evalkit.scoring.normalise.match_tokens` tokens
and says ``stated`` only when all three hold:

1. **Stated**: some gold occurs in the answer as a whole token run (containment; exact match is the
   case where the run is the whole answer).
2. **Not negated, not hedged**, for at least one occurrence. Negated: a negation cue stands right
   before it, with only copulas between (``not``, ``isn't``, ``never``, ``no``, ``cannot``, ``neither``,
   ``nor``; ``不``, ``非``, ``没``, ``未``, ``无``; copulas ``is was are were be been equal to exactly``,
   ``是 为 等 于 有 就 会``): ``it is not 308``, ``isn't 308``, ``不是308``, ``并非308``, ``没有308``; or
   it is followed by a verdict against it (``308 is wrong``, ``308 isn't``, ``308不对``, ``308是错的``).
   Bounds are not negations: ``no more than 600``, ``不超过600`` (the cue is not next to the value).
   Hedged: ``or`` / ``either`` / ``或`` / ``或者`` / ``还是`` right next to it (``308 or 136``), or it
   opens a range (``between 300 and``, ``介于300``, ``300 to 400``, ``300至400``).
3. **No other value of the same type**: when the gold holds a number, no number outside every gold
   occurrence may have the same type and a different value, unless it is itself negated
   (``It is 136, not 308`` is right for gold ``136``). A number's type is whether it looks like a year
   (four digits, 1000-2100) and its unit: the token after it when that token is a word and not a
   function word (``64 gib``, ``25 eur``, ``364.6 公``, ``308 seats``; ``%`` counts), or that another
   number follows (the day in ``February 7, 2016``, so ``Super Bowl 50 was played on February 7,
   2016`` keeps ``50`` apart from ``7``). So ``308 seats, of which 136 are held by Labour`` stays
   right (``136`` has no unit, ``308`` has ``seats``), ``In 1998 it had 308 staff`` too (a year is not
   a count), but ``308 and 136`` is not, nor (wrongly, see below) ``needs 64 GiB, 128 GiB
   recommended``.

Reasons: ``stated``, ``missing`` (1 fails), ``negated`` / ``hedged`` (every occurrence fails 2),
``other value`` (3 fails). No F1 fallback: a long answer reaches a high F1 by echoing the question.

Known failure modes, each a row of the hand-labelled table in ``tests/test_answer_verdicts.py``
(96 answers: the primary agrees with 88 labels, 2 wrongly correct and 6 wrongly wrong; containment
with 71, 24 wrongly correct; the labels and the rule were written by the same hand, so this checks
the rule's intent, it is no held-out estimate):

- a second number of the same type that is context, not a rival: ``20 requests per second, with
  bursts of 40 requests``; ``needs 64GiB, 128GiB recommended``; ``共有308个席位，其中136个...``
  (the classifier ``个`` is the unit of both); ``founded in 1998 and renamed in 2004``; ``rose from
  300 to 400`` for gold ``400`` (bare numbers share the empty unit);
- the same value written in another order: ``5 March 1998`` for gold ``March 5, 1998``;
- negation farther away than the copulas: ``I would not say it is 308``;
- a gold echoed in a question back: ``Is it 308? I am not sure``.

Not in the table but by construction: a non-numeric rival without ``or`` or a negation (``the
Normans and the Franks``) is not caught; bounds (``不到600``, ``more than 308``) count as stating the
value; ``no, 308`` reads as a denial of the question, not of ``308``, only when a copula intervenes
(``No, it is 308`` is right; ``no 308`` is negated).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Literal

__all__ = ["Reason", "judge"]

Reason = Literal["stated", "missing", "negated", "hedged", "other value"]

_NUMBER = re.compile(r"\d+(?:\.\d+)?")
_EN_CUES = "not|no|never|isnt|wasnt|arent|werent|doesnt|dont|didnt|cannot|cant|neither|nor|isn t|wasn t|aren t"
_EN_COPULAS = "is|was|are|were|be|been|equal|equals|to|exactly"
_ZH_CUES = "不|非|没|未|无"
_ZH_COPULAS = "是|为|等|于|有|就|会"
_NEGATED_BEFORE = re.compile(rf"(?:^|\s)(?:{_EN_CUES}|{_ZH_CUES})(?:\s(?:{_EN_COPULAS}|{_ZH_COPULAS}))*$")
_NEGATED_AFTER = re.compile(
    r"^(?:(?:is|was|are|were)\s(?:not|incorrect|wrong|false)|isnt|wasnt|isn t|incorrect|wrong|false"
    r"|(?:是\s)?错|不\s(?:对|正\s确))(?:\s|$)"  # not 不是: 十次，不是二十次 negates what follows
)
_HEDGE_AFTER = re.compile(r"^(?:(?:or|或|还\s是)(?:\s|$)|(?:to|至|到)\s\d)")  # 308 or ..., 300 to 400
_HEDGE_BEFORE = re.compile(r"(?:^|\s)(?:or|either|between|或|或\s者|还\s是|介\s于)$")
_FUNCTION_WORDS = frozenset(
    (
        "and or but not nor it its is was are were be been to of in on at by for from with as than then that "
        "this these those which who whom whose per also about around roughly approximately nearly over under "
        "more less most least only just exactly some each both either neither between while when where if so "
        "has have had do does did will would can could may might should must there here they he she we you i "
        "after before since until into out up down s t"
    ).split()
    + list("是的了和与或及到至而但不也在为之就还比约左右多余共计仅只即又并且若则个")
)


def _occurrences(tokens: Sequence[str], needle: Sequence[str]) -> list[tuple[int, int]]:
    n = len(needle)
    return [(i, i + n) for i in range(len(tokens) - n + 1) if n and list(tokens[i : i + n]) == list(needle)]


def _negated(tokens: Sequence[str], start: int, end: int) -> bool:
    before, after = " ".join(tokens[max(0, start - 6) : start]), " ".join(tokens[end : end + 4])
    return bool(_NEGATED_BEFORE.search(before) or _NEGATED_AFTER.search(after))


def _hedged(tokens: Sequence[str], start: int, end: int) -> bool:
    before, after = " ".join(tokens[max(0, start - 2) : start]), " ".join(tokens[end : end + 2])
    return bool(_HEDGE_BEFORE.search(before) or _HEDGE_AFTER.search(after))


def _unit(tokens: Sequence[str], index: int) -> str:
    """The word after ``tokens[index]`` when it names what the number counts, ``#`` when a number follows;
    '' otherwise."""
    following = tokens[index + 1] if index + 1 < len(tokens) else ""
    if _NUMBER.fullmatch(following):
        return "#"  # a number before a number is part of a compound value: the day of "7 2016"
    return "" if not following or following in _FUNCTION_WORDS else following


def _number_type(tokens: Sequence[str], index: int) -> tuple[bool, str]:
    """(looks like a year, unit) of the number at ``tokens[index]``."""
    token = tokens[index]
    year = len(token) == 4 and token.isdigit() and 1000 <= int(token) <= 2100
    return year, _unit(tokens, index)


def _rival_numbers(
    tokens: Sequence[str], gold: Sequence[str], start: int, covered: set[int], gold_values: set[str]
) -> bool:
    """Some number outside every gold occurrence has a gold number's type, another value and no negation."""
    types = {_number_type(tokens, start + k) for k, token in enumerate(gold) if _NUMBER.fullmatch(token)}
    return any(
        _NUMBER.fullmatch(token)
        and token not in gold_values
        and _number_type(tokens, j) in types
        and not _negated(tokens, j, j + 1)
        for j, token in enumerate(tokens)
        if j not in covered
    )


def judge(tokens: Sequence[str], golds: Sequence[Sequence[str]]) -> Reason:
    """The primary verdict of an answer's tokens against the golds' tokens (rules in the module docstring).

    ``golds`` are the usable golds' :func:`~evalkit.scoring.normalise.match_tokens` (empty ones are never
    stated). ``stated`` is correct; every other reason is not.
    """
    found = [(gold, span) for gold in golds for span in _occurrences(tokens, gold)]
    if not found:
        return "missing"
    clean = [(gold, span) for gold, span in found if not _negated(tokens, *span) and not _hedged(tokens, *span)]
    if not clean:
        return "negated" if any(_negated(tokens, *span) for _, span in found) else "hedged"
    covered = {i for _, (start, end) in found for i in range(start, end)}
    gold_values = {token for gold in golds for token in gold if _NUMBER.fullmatch(token)}
    for gold, (start, _) in clean:
        if not _rival_numbers(tokens, gold, start, covered, gold_values):
            return "stated"
    return "other value"
