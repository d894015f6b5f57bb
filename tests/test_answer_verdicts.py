"""The primary answer score against a hand-labelled table (English and Chinese).

Each row: an answer, the gold answers, the language, whether the question is answerable, and the
verdict a careful reader gives (True: the answer states the gold and does not contradict it). The
labels were written from the question's point of view before the rule was run; where the rule
disagrees, the row is a known miss (``miss=True``) and the failure mode is named in
:mod:`evalkit.scoring.verdict`. The agreement of containment (the previous primary) and of the new
primary with the labels is asserted as measured.
"""

from __future__ import annotations

from typing import NamedTuple

import pytest

from evalkit.records import Question, Span
from evalkit.scoring.answers import DEFAULT_REFUSALS, score_answer


class Case(NamedTuple):
    answer: str
    golds: tuple[str, ...]
    lang: str
    label: bool
    answerable: bool = True
    miss: bool = False  # the primary disagrees with the label: a documented failure mode


CASES: tuple[Case, ...] = (
    # the issue's four
    Case("需要64GiB内存", ("64 GiB",), "zh", True),
    Case("全长三百六十四点六公里", ("364.6公里",), "zh", True),
    Case("价格是25EUR", ("25 EUR",), "zh", True),
    Case("It is not 308, it is 136", ("308",), "en", False),
    # negations
    Case("It costs 25EUR.", ("25 EUR",), "en", True),
    Case("It is 136, not 308.", ("136",), "en", True),
    Case("It isn't 308; the figure is 136.", ("308",), "en", False),
    Case("The answer is not 20 requests per second.", ("20",), "en", False),
    Case("308 is wrong; it is 136.", ("308",), "en", False),
    Case("No, it is 308.", ("308",), "en", True),
    Case("It was never 1998.", ("1998",), "en", False),
    Case("不是308，是136。", ("308",), "zh", False),
    Case("答案是136，而不是308。", ("136",), "zh", True),
    Case("并非六百元。", ("600元",), "zh", False),
    Case("不需要64GiB内存。", ("64 GiB",), "zh", True),  # "does not need" negates the verb, not the value
    Case("内存不是64GiB。", ("64 GiB",), "zh", False),
    Case("每晚不超过六百元。", ("600元",), "zh", True),
    Case("The limit is no more than 20 requests per second.", ("20",), "en", True),
    Case("The Normans, not the Franks.", ("Normans",), "en", True),
    Case("Not the Normans but the Franks.", ("Normans",), "en", False),
    Case("I would not say it is 308.", ("308",), "en", False, miss=True),
    Case("Is it 308? I am not sure.", ("308",), "en", False, miss=True),
    # two values: lists, alternatives, ranges
    Case("It is 308 or 136.", ("308",), "en", False),
    Case("Either 308 or 136 seats.", ("308",), "en", False),
    Case("308 and 136.", ("308",), "en", False),
    Case("是308还是136不确定。", ("308",), "zh", False),
    Case("308或136", ("308",), "zh", False),
    Case("Between 300 and 400 seats.", ("300",), "en", False),
    Case("The Normans or the Franks.", ("Normans",), "en", False),
    Case("席位在300到400个之间。", ("300个",), "zh", False),
    Case("介于300和400之间", ("300",), "zh", False),
    Case("Seats rose from 300 to 400.", ("400",), "en", True, miss=True),
    Case("308 isn't correct, it is 136.", ("308",), "en", False),
    Case("308不对，应该是136。", ("308",), "zh", False),
    Case("It has 308 seats, of which 136 are held by Labour.", ("308",), "en", True),
    Case("308 seats in total (136 Labour, 172 others).", ("308",), "en", True),
    Case("In 1998 the company had 308 employees.", ("308",), "en", True),
    Case("共有308个席位，其中136个属于工党。", ("308个",), "zh", True, miss=True),
    Case("20 requests per second, with bursts of 40 requests.", ("20 requests",), "en", True, miss=True),
    # units
    Case("It needs 64 GB.", ("64 GiB",), "en", False),
    Case("It needs 64 GiB of memory.", ("64GiB",), "en", True),
    Case("需要６４ＧｉＢ内存", ("64 GiB",), "zh", True),
    Case("It needs 640 GiB.", ("64 GiB",), "en", False),
    Case("全长364.6公里", ("三百六十四点六公里",), "zh", True),
    Case("全长3646公里", ("364.6公里",), "zh", False),
    Case("全长364.6公里", ("6公里",), "zh", False),
    Case("需要64GiB内存，建议128GiB。", ("64 GiB",), "zh", True, miss=True),
    Case("About 308 seats.", ("308",), "en", True),
    # currency, thousands
    Case("It costs $25.", ("25$",), "en", True),
    Case("€25", ("25 EUR",), "en", True),
    Case("25 euros", ("25 EUR",), "en", True),
    Case("25 dollars", ("25 EUR",), "en", False),
    Case("It costs 25 EUR, about $27.", ("25 EUR",), "en", True),
    Case("It costs 25 EUR or 30 EUR.", ("25 EUR",), "en", False),
    Case("价格是25欧元。", ("€25",), "zh", True),
    Case("The cap is 1,000 requests.", ("1000 requests",), "en", True),
    Case("The cap is 10,000.", ("1000",), "en", False),
    # Chinese numerals, and characters that are not numbers
    Case("重试了十二次", ("12次",), "zh", True),
    Case("成立于两千零五年", ("2005年",), "zh", True),
    Case("一万二千元", ("12000元",), "zh", True),
    Case("增长了百分之五", ("5%",), "zh", True),
    Case("增长了5%", ("百分之五",), "zh", True),
    Case("增长了百分之五十", ("5%",), "zh", False),
    Case("我们一起去", ("1",), "zh", False),
    Case("统一标准", ("1",), "zh", False),
    Case("万一失败就重试", ("1",), "zh", False),
    Case("这一点十分重要", ("10",), "zh", False),
    Case("三五天", ("35天",), "zh", False),
    Case("见第三章", ("第3章",), "zh", True),
    Case("约三百零八个席位", ("308个",), "zh", True),
    Case("上限是二百次", ("20次",), "zh", False),
    Case("重试了十次，不是二十次。", ("10次",), "zh", True),
    Case("2024年", ("二〇二四年",), "zh", True),
    # dates
    Case("It was signed on March 5, 1998.", ("March 5, 1998",), "en", True),
    Case("March 6, 1998", ("March 5, 1998",), "en", False),
    Case("It was signed in 1998, not 1997.", ("1998",), "en", True),
    Case("1997 or 1998", ("1998",), "en", False),
    Case("Super Bowl 50 was played on February 7, 2016.", ("February 7, 2016",), "en", True),
    Case("It was signed on March 5, 1998 and announced on March 1.", ("March 5, 1998",), "en", True),
    Case("It was signed on 5 March 1998.", ("March 5, 1998",), "en", True, miss=True),
    Case("It was founded in 1998 and renamed in 2004.", ("1998",), "en", True, miss=True),
    # English number words, entities
    Case("twenty requests", ("20 requests",), "en", True),
    Case("It retried ten times, not twenty.", ("10 times",), "en", True),
    Case("The Normans", ("the Normans",), "en", True),
    Case("They were the Norse.", ("Normans",), "en", False),
    Case("The Denver Broncos won.", ("Denver Broncos",), "en", True),
    Case("Use the RateLimiter class.", ("RateLimiter",), "en", True),
    # refusals
    Case("I don't have that information.", ("20",), "en", False),
    Case("I don't have that information.", (), "en", True, answerable=False),
    Case("The parking allowance is 20 euros.", (), "en", False, answerable=False),
    Case("我没有这方面的信息。", (), "zh", True, answerable=False),
    Case("我没有这方面的信息。", ("600元",), "zh", False),
    # citations
    Case("The burst is 20 requests per second [guide/rate_limits.md].", ("20",), "en", True),
    Case("It is not 20 [guide/rate_limits.md]; it is 50 [ops/faq.md].", ("20",), "en", False),
    Case("The limit is 20 [1][2].", ("20",), "en", True),
    Case("上限是二十次 [doc-3]。", ("20次",), "zh", True),
)


def _question(case: Case) -> Question:
    evidence = (Span("doc", 0, 1),) if case.answerable else ()
    mode = "any" if case.answerable else "none"
    return Question("q", "?", case.golds, case.answerable, evidence, mode, {"lang": case.lang})


def _verdicts(case: Case) -> tuple[bool, bool]:
    """(the previous primary: containment and no refusal, the new primary) for one row."""
    score = score_answer(_question(case), case.answer, DEFAULT_REFUSALS, ["doc"], {})
    contains_primary = (score.contains and not score.refused) if case.answerable else score.refused
    return contains_primary, score.correct


def test_the_table_covers_what_the_issue_asks():
    assert len(CASES) >= 60
    assert {case.lang for case in CASES} == {"en", "zh"}
    assert sum(not case.answerable for case in CASES) >= 3


@pytest.mark.parametrize("case", [case for case in CASES if not case.miss], ids=lambda case: case.answer[:40])
def test_primary_agrees_with_the_label(case: Case):
    assert _verdicts(case)[1] is case.label


@pytest.mark.parametrize("case", [case for case in CASES if case.miss], ids=lambda case: case.answer[:40])
def test_known_misses_stay_documented(case: Case):
    # if the rule improves so that one of these agrees, move it out of the miss list and the docstring
    assert _verdicts(case)[1] is not case.label


def test_agreement_of_the_old_and_new_primary_as_measured():
    old = sum(_verdicts(case)[0] is case.label for case in CASES)
    new = sum(_verdicts(case)[1] is case.label for case in CASES)
    assert (len(CASES), old, new) == (96, 71, 88)
    wrongly_correct = [sum(_verdicts(case)[i] and not case.label for case in CASES) for i in (0, 1)]
    assert wrongly_correct == [24, 2]  # containment calls 24 wrong answers right, the primary 2
