"""Answer scoring: SQuAD v2.0 and CMRC 2018 worked examples, folding (mixed scripts, currencies, Chinese
numerals), the primary verdict, refusals, citations, quotes and flip rate."""

from __future__ import annotations

import math
from decimal import Decimal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evalkit.records import Question, Span
from evalkit.scoring.answers import (
    DEFAULT_REFUSALS,
    cited_doc_ids,
    cjk_f1,
    cjk_tokens,
    contains_match,
    exact_match,
    flip_rate,
    is_refusal,
    match_tokens,
    normalize_cjk,
    normalize_squad,
    primary_match,
    primary_reason,
    quoted_passages,
    quotes_valid,
    scheme_for,
    score_answer,
    squad_exact,
    squad_f1,
    strip_citations,
    token_f1,
)
from evalkit.scoring.numerals import zh_numerals_to_digits, zh_value

# SQuAD v2.0 -----------------------------------------------------------------------


def test_squad_normalisation():
    assert normalize_squad("The Normans.") == "normans"
    assert normalize_squad("  An   apple, a PEAR;  the end!") == "apple pear end"
    assert normalize_squad("theory") == "theory"  # articles only as whole words
    assert normalize_squad("“Normans”") == "“normans”"  # the official script strips ASCII punctuation only


def test_squad_exact_the_normans():
    # SQuAD v2.0 dev, "In what country is Normandy located?" style: articles and case do not matter
    assert squad_exact("the Normans", "Normans")
    assert exact_match("Normans", ["the Normans", "Norse"], "en")
    assert not exact_match("The Normans were Norse", ["the Normans"], "en")


def test_squad_f1_partial_overlap():
    # gold "Denver Broncos" -> [denver, broncos]; prediction "the Denver Broncos won" -> [denver, broncos, won]
    # common 2: precision 2/3, recall 2/2, F1 = 2 * (2/3) * 1 / (2/3 + 1) = 0.8
    assert squad_f1("Denver Broncos", "the Denver Broncos won") == pytest.approx(0.8)
    # "When were the Normans in Normandy?": golds "10th and 11th centuries" and "in the 10th and 11th centuries"
    # prediction "the 10th century" -> [10th, century]; vs [10th, and, 11th, centuries]: common 1,
    # P = 1/2, R = 1/4, F1 = 2 * (1/8) / (3/4) = 1/3; vs [in, 10th, and, 11th, centuries]: P = 1/2, R = 1/5,
    # F1 = 2 * (1/10) / (7/10) = 2/7. token_f1 takes the max: 1/3.
    golds = ["10th and 11th centuries", "in the 10th and 11th centuries"]
    assert squad_f1(golds[1], "the 10th century") == pytest.approx(2 / 7)
    assert token_f1("the 10th century", golds, "en") == pytest.approx(1 / 3)
    # repeated tokens count as a multiset: gold [a1, a1], prediction [a1] -> P 1, R 1/2, F1 2/3
    assert squad_f1("a1 a1", "a1") == pytest.approx(2 / 3)


def test_squad_empty_answers_follow_the_official_script():
    assert squad_f1("", "") == 1.0  # both no-answer
    assert squad_f1("Normans", "") == 0.0
    assert squad_f1("the", "an") == 1.0  # both normalise to nothing
    assert not exact_match("anything", [], "en") and token_f1("anything", [], "en") == 0.0


# Chinese (CMRC 2018) ------------------------------------------------------------------


def test_chinese_width_and_punctuation_normalisation():
    assert normalize_cjk("３６４．６ 公里。") == normalize_cjk("364.6公里") == "3646公里"
    assert exact_match("３６４．６ 公里。", ["364.6公里"], "zh")
    assert exact_match("３６４．６ 公里。", ["364.6公里"], "")  # language detected from the golds
    assert normalize_cjk("「ＲａｔｅＬｉｍｉｔｅｒ」（默认）！") == "ratelimiter默认"


def test_cjk_tokens_mix_characters_and_words():
    assert cjk_tokens("全长364.6公里, RateLimiter!") == ["全", "长", "364", "6", "公", "里", "ratelimiter"]


def test_cmrc_f1_uses_the_longest_common_contiguous_run():
    # gold [364, 6, 公, 里] (4) in prediction [全, 长, 364, 6, 公, 里] (6): run 4, P = 4/6, R = 4/4,
    # F1 = 2 * (2/3) / (5/3) = 0.8
    assert cjk_f1("364.6公里", "全长364.6公里") == pytest.approx(0.8)
    # 北京大学 vs 北大京学: the longest common *contiguous* run is 1 (a subsequence LCS would say 2),
    # P = R = 1/4, F1 = 0.25, as CMRC's find_lcs gives
    assert cjk_f1("北京大学", "北大京学") == pytest.approx(0.25)
    assert cjk_f1("六百元", "三天") == 0.0
    # token_f1 folds Chinese numerals first: prediction [每, 晚, 不, 超, 过, 600, 元] (7), both golds [600, 元]
    # (2): run 2, P = 2/7, R = 1, F1 = 2 * (2/7) / (9/7) = 4/9 (cjk_f1 on the raw text keeps CMRC's 8 tokens)
    assert token_f1("每晚不超过六百元", ["六百元", "600元"], "zh-Hans") == pytest.approx(4 / 9)
    assert cjk_f1("六百元", "每晚不超过六百元") == pytest.approx(2 * 1 * 3 / 8 / (1 + 3 / 8))


@pytest.mark.parametrize(
    ("lang", "text", "scheme"),
    [
        ("en", "住宿标准是多少？", "squad"),
        ("zh-Hans", "What?", "cjk"),
        ("ja", "", "cjk"),
        ("ko_KR", "", "cjk"),
        ("", "住宿标准是每晚多少钱？", "cjk"),
        ("", "RateLimiter 默认允许多少请求？", "cjk"),  # one Latin word among nine CJK characters
        ("", "What does 报销 mean here?", "squad"),  # two CJK characters among four English words
        ("", "", "squad"),
    ],
)
def test_scheme_from_tag_else_cjk_share(lang, text, scheme):
    assert scheme_for(lang, text) == scheme


# Containment ------------------------------------------------------------------------


def test_contains_on_token_boundaries():
    assert contains_match("The burst is 20 requests per second.", ["20"], "en")
    assert not contains_match("The burst is 200 requests per second.", ["20"], "en")
    assert contains_match("They were “the Normans” — of Normandy.", ["Normans"], "en")  # curly quotes, em dash
    assert contains_match("住宿标准为每晚不超过六百元。", ["六百元"], "zh")
    assert not contains_match("上限是200次。", ["20"], "zh")
    assert contains_match("Normans", ["the Normans"], "en")  # exact implies contains
    assert not contains_match("anything", [], "en")


# Folding: dashes, quotes, number words, empty golds ---------------------------------------


@pytest.mark.parametrize("dash", ["-", "\u2010", "\u2011", "\u2012", "\u2013", "\u2014", "\u2212", "\uff0d"])
def test_dash_variants_match(dash):
    # official SQuAD deletes the ASCII hyphen ("20-18" -> "2018") but keeps an en dash: both now read "2018"
    assert exact_match(f"20{dash}18", ["20-18"], "en") and exact_match("20-18", [f"20{dash}18"], "en")
    assert contains_match(f"The final score was 20{dash}18 [sports.md].", ["20–18"], "en")
    assert not contains_match("The final score was 20 18.", ["20–18"], "en")  # a space is not a dash
    assert contains_match(f"比分是20{dash}18。", ["20-18"], "zh")


def test_quote_variants_match():
    assert exact_match("don’t panic", ["don't panic"], "en") and exact_match("“Normans”", ['"Normans"'], "en")
    assert exact_match("‘Normans’", ["Normans"], "en") and exact_match("«Normans»", ["Normans"], "en")
    assert normalize_squad("don’t") == "don’t"  # the official replica itself is unchanged


@pytest.mark.parametrize(
    ("prediction", "gold"),
    [
        ("It retried ten times [ops.md].", "10 times"),
        ("10 times", "ten times"),
        ("twenty-one days", "21 days"),
        ("twenty one days", "21 days"),
        ("a hundred euros", "100 euros"),
        ("two hundred and fifty", "250"),
        ("three thousand two hundred", "3,200"),
        ("zero", "0"),
    ],
)
def test_english_number_words_match_digits(prediction, gold):
    assert contains_match(prediction, [gold], "en")


def test_english_number_words_keep_token_boundaries():
    assert match_tokens("one two", "squad") == ["1", "2"]  # two numbers, not 3 or 12
    assert match_tokens("twenty twenty", "squad") == ["20", "20"]
    assert not contains_match("It retried a hundred times.", ["10 times"], "en")
    assert not contains_match("twenty one days", ["20 days"], "en")
    # exact and F1 see the same tokens: "ten times" vs "10 times" is an exact match with F1 1
    assert exact_match("Ten times.", ["10 times"], "en") and token_f1("Ten times.", ["10 times"], "en") == 1.0


@pytest.mark.parametrize(
    ("prediction", "gold"),
    [
        ("重试了十次", "10次"),
        ("重试了10次", "十次"),
        ("上限是十二次", "12次"),
        ("上限是二十五次", "25次"),
        ("每晚不超过六百元", "600元"),
        ("一百零五公里", "105公里"),
        ("两天", "2天"),
        ("三万五千元", "35000元"),
        ("二〇二四年", "2024年"),
        ("八百", "800"),
        ("九", "9"),
    ],
)
def test_chinese_numerals_match_digits(prediction, gold):
    assert contains_match(prediction, [gold], "zh")


def test_chinese_numerals_keep_token_boundaries():
    assert not contains_match("上限是二百次", ["20"], "zh")  # 200, not 20
    assert not contains_match("上限是十次", ["1"], "zh")
    assert exact_match("十", ["10"], "zh") and token_f1("十", ["10"], "zh") == 1.0


def test_golds_that_normalise_to_nothing_are_dropped():
    # evaluate-v2.0.py: gold_answers = [a for a in answers if normalize_answer(a)] or [""]
    assert not exact_match("an", ["the", "20"], "en")  # before: "the" and "an" both normalise to ""
    assert exact_match("20", ["the", "20"], "en") and token_f1("20", ["...", "20"], "en") == 1.0
    assert token_f1("The 20 limit", ["a", "20"], "en") == pytest.approx(2 * (1 / 2) / (1 + 1 / 2))
    # none left: the gold is the empty no-answer, as in the official script
    assert exact_match("", ["the"], "en") and token_f1("", ["the"], "en") == 1.0
    assert not exact_match("Normans", ["the"], "en") and token_f1("Normans", ["the"], "en") == 0.0
    assert not contains_match("", ["the"], "en") and not contains_match("the end", ["the", "."], "en")
    assert not contains_match("。", ["。"], "zh")  # an empty CJK gold is never contained either
    # and an answerable question whose only gold is empty is not answered by an empty answer
    assert not score(question(("the",)), "").correct


# Refusals ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "I don't have that information",
        "I don't have that information.",
        "  I don’t have that information!\n",
        "i don't have that information",
        "**I don't have that information.**",
        "我没有这方面的信息",
        "我没有这方面的信息。",
        " 我没有这方面的信息！ ",
    ],
)
def test_refusal_detected_in_both_languages(text):
    assert is_refusal(text, DEFAULT_REFUSALS)


@pytest.mark.parametrize(
    "text",
    [
        "",
        "I don't have that information, but the limit is probably 20.",
        "The limit is 20. I don't have that information about bursts.",
        "我没有这方面的信息，但应该是六百元。",
        "I have that information",
    ],
)
def test_not_a_refusal(text):
    assert not is_refusal(text, DEFAULT_REFUSALS)


def test_refusal_strings_are_configurable():
    assert is_refusal("Not in the documents.", ["not in the documents"])
    assert not is_refusal("I don't have that information", ["not in the documents"])


# Citations and quotes -----------------------------------------------------------------------


def test_cited_doc_ids():
    text = (
        "Burst is 20 [guide/rate_limits-v2.md#intro]; see also [ops/faq.md] and [a, b] [guide/rate_limits-v2.md#intro]."
    )
    assert cited_doc_ids(text) == ("guide/rate_limits-v2.md#intro", "ops/faq.md", "a", "b")
    assert cited_doc_ids("a [markdown link](http://x) and [not a citation]") == ()


def test_quoted_passages():
    text = 'He said "burst of 20" and “twenty   requests\nper second” and 「每晚不超过六百元」 and "short".'
    assert quoted_passages(text) == ("burst of 20", "twenty requests per second", "每晚不超过六百元")


DOCS = {
    "guide/rate_limits.md": "The RateLimiter allows a burst of\n  20 requests per second by default.\n",
    "hr/travel.md": "住宿标准为每晚不超过六百元。",
}


def test_quotes_checked_against_current_provided_text():
    provided = ["guide/rate_limits.md"]
    assert quotes_valid("It allows “a burst of 20 requests” [guide/rate_limits.md].", provided, DOCS)  # whitespace
    assert not quotes_valid('It allows "a burst of 50 requests".', provided, DOCS)  # not in the text
    assert quotes_valid('Burst "20".', provided, DOCS) is None  # too short to check
    assert quotes_valid("No quotes here.", provided, DOCS) is None
    assert not quotes_valid("「每晚不超过六百元」", provided, DOCS)  # in a document that was not provided
    assert quotes_valid("「每晚不超过六百元」", [*provided, "hr/travel.md"], DOCS)
    edited = {**DOCS, "guide/rate_limits.md": "The RateLimiter allows a burst of 50 requests per second.\n"}
    assert not quotes_valid("“a burst of 20 requests”", provided, edited)  # the current text decides


# score_answer ----------------------------------------------------------------------------------


def question(
    answers: tuple[str, ...], *, lang: str = "en", text: str = "What burst does RateLimiter allow?"
) -> Question:
    answerable = bool(answers)
    evidence = (Span("guide/rate_limits.md", 0, 10),) if answerable else ()
    return Question("q1", text, answers, answerable, evidence, "any" if answerable else "none", {"lang": lang})


def score(q: Question, text: str, provided=("guide/rate_limits.md",)):
    return score_answer(q, text, DEFAULT_REFUSALS, provided, DOCS)


def test_answerable_contained_answer_is_correct():
    result = score(
        question(("20", "20 requests")), "The RateLimiter allows 20 requests per second [guide/rate_limits.md]."
    )
    assert result.correct and result.contains and not result.exact and not result.refused
    assert result.citations == ("guide/rate_limits.md",) and result.citations_valid
    assert result.quotes_valid is None and result.scheme == "squad"
    # the citation is stripped before matching; the best F1 is against "20 requests": the prediction
    # [ratelimiter, allows, 20, requests, per, second] holds both gold tokens among 6: P = 2/6, R = 1,
    # F1 = 2 * (1/3) / (4/3) = 0.5
    assert result.f1 == pytest.approx(0.5)


def test_citations_do_not_break_exact_match_or_refusal():
    assert score(question(("20",)), "20 [guide/rate_limits.md]").exact
    assert score(question(()), "I don't have that information [guide/rate_limits.md].").refused
    assert strip_citations("20 [a/b.md] and [a link](x)") == "20   and [a link](x)"


def test_answerable_question_answered_with_refusal_is_wrong():
    result = score(question(("20",)), "I don't have that information.")
    assert result.refused and not result.correct


def test_unanswerable_correct_only_on_refusal():
    unanswerable = question((), text="What is the parking allowance?")
    assert score(unanswerable, "I don't have that information.").correct
    assert not score(unanswerable, "The parking allowance is 20 euros.").correct
    assert not score(unanswerable, "").correct


def test_chinese_question_scored_with_cjk_scheme():
    q = question(("六百元",), lang="", text="住宿标准是每晚多少钱？")
    result = score_answer(q, "每晚不超过６００元，即六百元。[hr/travel.md]", DEFAULT_REFUSALS, ["hr/travel.md"], DOCS)
    assert result.scheme == "cjk" and result.correct and result.citations_valid
    assert score_answer(q, "我没有这方面的信息。", DEFAULT_REFUSALS, [], DOCS).correct is False


def test_citation_of_a_document_not_provided_is_invalid():
    result = score(question(("20",)), "20 [guide/rate_limits.md] [hr/travel.md]")
    assert result.citations == ("guide/rate_limits.md", "hr/travel.md")
    assert not result.citations_valid
    assert result.correct  # citation validity is reported beside correctness, not folded into it


# Flip rate ---------------------------------------------------------------------------------------


def test_flip_rate_worked_example():
    outcomes = {
        "q1": [True, True, True],  # stable
        "q2": [True, False, True],  # flips
        "q3": [False, False],  # stable
        "q4": [True],  # one repeat: not counted
    }
    assert flip_rate(outcomes) == pytest.approx(1 / 3)
    assert math.isnan(flip_rate({"q4": [True]}))
    assert math.isnan(flip_rate({}))


# Mixed scripts, currencies, thousands -------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "tokens"),
    [
        ("需要64GiB内存", ["需", "要", "64", "gib", "内", "存"]),
        ("需要６４ＧｉＢ内存", ["需", "要", "64", "gib", "内", "存"]),  # full width folded by NFKC
        ("64 GiB", ["64", "gib"]),
        ("25EUR", ["25", "eur"]),
        ("€25", ["25", "eur"]),
        ("25 €", ["25", "eur"]),
        ("$25", ["25", "usd"]),
        ("25$", ["25", "usd"]),
        ("25欧元", ["25", "eur"]),
        ("全长364.6公里", ["全", "长", "364.6", "公", "里"]),  # a decimal is one token
        ("1,000", ["1000"]),
        ("1,000.5", ["1000.5"]),
        ("1,2,3", ["1", "2", "3"]),  # not thousands: a list
        ("100，200元", ["100", "200", "元"]),  # a full-width comma separates list items
        ("5%", ["5", "%"]),
        ("5 percent", ["5", "%"]),
        ("5％", ["5", "%"]),
        ("10th 1990s mp3", ["10th", "1990s", "mp3"]),  # ordinals, decades, letters then digits stay
        ("10sec", ["10", "sec"]),
    ],
)
def test_mixed_script_tokens(text, tokens):
    assert match_tokens(text, "cjk") == tokens
    assert match_tokens(text, "squad") == tokens


def test_squad_scheme_keeps_the_official_deletions():
    assert match_tokens("don't", "squad") == ["dont"] and match_tokens("20-18", "squad") == ["2018"]
    assert match_tokens("The RateLimiter", "squad") == ["ratelimiter"]


@pytest.mark.parametrize(
    ("prediction", "gold", "lang"),
    [
        ("需要64GiB内存", "64 GiB", "zh"),
        ("三百六十四点六公里", "364.6公里", "zh"),
        ("364.6公里", "三百六十四点六公里", "zh"),
        ("25EUR", "25 EUR", "en"),
        ("价格是25EUR", "25 EUR", "zh"),
        ("It costs €25.", "25 EUR", "en"),
        ("It costs $25.", "25$", "en"),
        ("It costs 25 euros.", "€25", "en"),
        ("The cap is 1,000 requests.", "1000 requests", "en"),
        ("增长了百分之五", "5%", "zh"),
        ("It grew by 5 percent.", "5%", "en"),
        ("１２ＧＢ", "12 GB", "en"),
    ],
)
def test_issue_cases_are_contained(prediction, gold, lang):
    assert contains_match(prediction, [gold], lang) and primary_match(prediction, [gold], lang)


@pytest.mark.parametrize(
    ("prediction", "gold", "lang"),
    [
        ("全长364.6公里", "6公里", "zh"),  # a decimal's digits are no separate number
        ("全长2.5%", "5%", "zh"),
        ("It costs 25 dollars.", "25 EUR", "en"),
        ("It needs 64 GB.", "64 GiB", "en"),
        ("The cap is 10,000.", "1000", "en"),
        ("1,2,3", "123", "en"),
    ],
)
def test_folding_creates_no_false_match(prediction, gold, lang):
    assert not contains_match(prediction, [gold], lang)


# Chinese numerals ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("run", "value"),
    [
        ("三百六十四点六", "364.6"),
        ("十二", "12"),
        ("二十", "20"),
        ("两千零五", "2005"),
        ("一万二千", "12000"),
        ("一万二", "12000"),
        ("三百五", "350"),
        ("一百零五", "105"),
        ("二〇二四", "2024"),
        ("三千万", "30000000"),
        ("一亿零五百万", "105000000"),
        ("十", "10"),
        ("零点五", "0.5"),
    ],
)
def test_chinese_numeral_values(run, value):
    assert zh_value(run) == Decimal(value)


@pytest.mark.parametrize("run", ["万一", "千万", "百万", "百", "三百百", "十百", "二三十"])
def test_ill_formed_runs_have_no_value(run):
    assert zh_value(run) is None


@pytest.mark.parametrize(
    ("text", "converted"),
    [
        ("三百六十四点六公里", "364.6公里"),
        ("十二", "12"),
        ("两千零五年", "2005年"),
        ("一万二千", "12000"),
        ("百分之五", "5%"),
        ("百分之百", "100%"),
        ("百分之三十", "30%"),
        ("两天", "2天"),
        ("九个", "9个"),
        ("第三章", "第3章"),
        ("九", "9"),  # a whole text
        ("12万元", "120000元"),
        ("1.5亿", "150000000"),
        ("三百gb", "300gb"),
    ],
)
def test_chinese_numerals_converted_where_they_are_numbers(text, converted):
    assert zh_numerals_to_digits(text) == converted


@pytest.mark.parametrize(
    "text",
    ["我们一起去", "统一标准", "万一失败", "十分重要", "千万不要", "有一点点", "三五天", "一两个", "百万富翁", "一样",
     "七八"],
)  # fmt: skip
def test_numeral_characters_in_words_stay_characters(text):
    assert zh_numerals_to_digits(text) == text


@pytest.mark.parametrize(
    ("prediction", "gold"),
    [("我们一起去", "1"), ("统一标准", "1"), ("万一失败", "1"), ("十分重要", "10"), ("千万不要", "10000000"),
     ("三五天", "35天"), ("一两个", "12个")],
)  # fmt: skip
def test_numeral_false_positives(prediction, gold):
    assert not contains_match(prediction, [gold], "zh")


# The primary verdict -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("prediction", "gold", "lang", "reason"),
    [
        ("It is not 308, it is 136", "308", "en", "negated"),
        ("It isn't 308.", "308", "en", "negated"),
        ("不是308，是136。", "308", "zh", "negated"),
        ("308 is wrong.", "308", "en", "negated"),
        ("308 or 136", "308", "en", "hedged"),
        ("308或136", "308", "zh", "hedged"),
        ("It is 308; some say 136.", "308", "en", "other value"),
        ("需要64GiB内存，建议128GiB。", "64 GiB", "zh", "other value"),
        ("It is 136.", "308", "en", "missing"),
        ("It is 136, not 308.", "136", "en", "stated"),
        ("每晚不超过六百元。", "600元", "zh", "stated"),
        ("It has 308 seats, of which 136 are held by Labour.", "308", "en", "stated"),
        ("It costs 25 EUR, about $27.", "25 EUR", "en", "stated"),
    ],
)
def test_primary_reason(prediction, gold, lang, reason):
    assert primary_reason(prediction, [gold], lang) == reason
    assert primary_match(prediction, [gold], lang) is (reason == "stated")
    assert contains_match(prediction, [gold], lang) is (reason != "missing")


def test_score_answer_correct_is_the_primary_and_contains_stays_beside_it():
    result = score(question(("308",)), "It is not 308, it is 136 [guide/rate_limits.md].")
    assert result.contains and not result.correct and result.reason == "negated" and not result.exact
    assert result.f1 == pytest.approx(2 * (1 / 7) * 1 / (1 / 7 + 1))  # 1 common token of 7 predicted
    fine = score(question(("308",)), "308 [guide/rate_limits.md]")
    assert fine.correct and fine.exact and fine.contains and fine.f1 == 1.0 and fine.reason == "stated"
    refused = score(question(("308",)), "I don't have that information.")
    assert refused.reason == "missing" and not refused.correct
    unanswerable = score(question(()), "I don't have that information.")
    assert unanswerable.correct and unanswerable.refused


# Properties ----------------------------------------------------------------------------------------

_PIECES = list("abcxyz ABC 0123456789 .,-%$€'") + list("一二三十百千万点零两个天年元公里需要内存不是或")
_TEXT = st.lists(st.sampled_from([*_PIECES, "GiB", "EUR", "not ", "the ", "ten ", "%"]), max_size=30).map("".join)
_ENGLISH_GOLD = st.lists(st.sampled_from([*"abcdefgxyz 0123456789.,-$%", "GiB", "EUR", "ten "]), max_size=20).map(
    "".join
)


@settings(max_examples=300, deadline=None)
@given(text=_TEXT, scheme=st.sampled_from(["squad", "cjk"]))
def test_match_tokens_are_idempotent(text, scheme):
    tokens = match_tokens(text, scheme)
    assert match_tokens(" ".join(tokens), scheme) == tokens


@settings(max_examples=300, deadline=None)
@given(gold=_TEXT, lang=st.sampled_from(["en", "zh"]))
def test_a_gold_always_matches_itself(gold, lang):
    if match_tokens(gold, scheme_for(lang)):
        assert exact_match(gold, [gold], lang) and contains_match(gold, [gold], lang)
        assert primary_match(gold, [gold], lang) and token_f1(gold, [gold], lang) == 1.0


@settings(max_examples=300, deadline=None)
@given(gold=_ENGLISH_GOLD)
def test_not_before_the_gold_is_never_correct(gold):
    if match_tokens(gold, "squad"):
        assert not primary_match(f"not {gold}", [gold], "en")
        assert not primary_match(f"It is not {gold}.", [gold], "en")
