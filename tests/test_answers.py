"""Answer scoring: SQuAD v2.0 and CMRC 2018 worked examples, refusals, citations, quotes and flip rate."""

from __future__ import annotations

import math

import pytest

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
    quoted_passages,
    quotes_valid,
    scheme_for,
    score_answer,
    squad_exact,
    squad_f1,
    strip_citations,
    token_f1,
)

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
