"""Spelled numbers to Arabic digits (pure): English number words and Chinese numerals.

Chinese numerals are converted only where they are numbers in context, because a numeral character
is often part of an ordinary word (``一起`` together, ``统一`` unify, ``万一`` in case, ``十分`` very,
``千万`` by all means, ``一点`` a little, ``三五天`` three to five days). A maximal run of numeral
characters (``零〇一二两三四五六七八九十百千万亿``, with ``点`` + digits as a decimal part) becomes
digits when it is a well-formed number (:func:`zh_value` is not None) and at least one of:

1. it is *compound*: two or more characters holding a unit (``十百千万亿``) or a decimal ``点``:
   ``十二`` 12, ``三百六十四点六`` 364.6, ``两千零五`` 2005, ``一万二千`` 12000;
2. it is three or more plain digits, read digit by digit (``二〇二四`` 2024, ``一九九八`` 1998);
   two plain digits are never converted (``三五天``, ``一两个``, ``七八``: ranges);
3. a measure word, unit or ``%`` / Latin letter follows it without a space (``两天`` 2天, ``十次``
   10次, ``九个``, ``三百GB``), or ``第`` precedes it (``第三章`` 第3章);
4. it stands alone: the text holds no other letter or digit than ASCII letters (a bare gold ``九``,
   ``九。``, ``a 九``; not ``答案：九``, ``三百、一``). Any Han character, digit or numeral makes it
   part of a sentence, a word or a list (``统一``, ``一起``) however it is spaced, and Latin words
   (which folding may drop or rewrite: articles, currency codes) never decide, so folding a folded
   text changes nothing.

Well-formed means the units descend (``千`` > ``百`` > ``十`` inside a group, ``亿`` > ``万``
between groups), every unit but a leading ``十`` has a digit before it, and no two digits touch in
unit form. So ``万一``, ``千万``, ``百万`` (a leading unit) and ``三五`` (a range) stay characters,
and ``十分`` stays (``分`` is not a measure word here: it is also "very"; ``分钟`` is). A trailing
digit after a unit abbreviates the next unit down (``三百五`` 350, ``一万二`` 12000).
``百分之`` + a number is a percentage (``百分之五`` 5%, ``百分之百`` 100%); Arabic digits times ``万``
or ``亿`` are multiplied out (``12万`` 120000, ``1.5亿`` 150000000).

Known misses, on purpose: ``十分`` (10 points), ``一度`` and other measure words outside the list
are not converted; ``一个`` and ``一次`` are (so gold ``1`` is contained in ``一个问题``).
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from decimal import Decimal

__all__ = ["english_words_to_digits", "zh_numerals_to_digits", "zh_value"]

# English ---------------------------------------------------------------------------

_UNITS = (
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen "
    "seventeen eighteen nineteen"
).split()
_TENS = {w: 10 * i for i, w in enumerate("twenty thirty forty fifty sixty seventy eighty ninety".split(), 2)}
_SMALL = (
    {w: i for i, w in enumerate(_UNITS)}
    | _TENS
    | {t + u: v + i for t, v in _TENS.items() for i, u in enumerate(_UNITS[1:10], 1)}  # twenty-one -> twentyone
)
_SCALES = {"thousand": 1_000, "million": 1_000_000, "billion": 1_000_000_000}


def _read_number(tokens: Sequence[str], start: int) -> tuple[int, int]:
    """The number spelled by English words from ``tokens[start]``, and how many tokens it took (0: none).

    Cardinals only: ``twenty one`` 21, ``two hundred and five`` 205, ``hundred`` 100 (``a`` was dropped as an
    article), ``three thousand`` 3000. A word that cannot continue the number (``one two``) starts a new one.
    """
    total = part = 0
    last = ""  # the previous word's kind: "" (none yet), "small", "hundred", "scale"
    scale_cap = math.inf  # scales descend: "two million three thousand"
    i = end = start
    while i < len(tokens):
        word = tokens[i]
        if word in _SMALL:
            value = _SMALL[word]
            if last == "small" and not (part % 100 >= 20 and part % 10 == 0 and value < 10):
                break  # "one two", "twenty twenty": two numbers
            part, last = part + value, "small"
        elif word == "hundred":
            if last == "hundred" or part >= 100:
                break
            part, last = (part or 1) * 100, "hundred"
        elif word in _SCALES:
            if _SCALES[word] >= scale_cap:
                break
            total, part, last, scale_cap = total + (part or 1) * _SCALES[word], 0, "scale", _SCALES[word]
        elif word == "and" and last in ("hundred", "scale") and i + 1 < len(tokens) and tokens[i + 1] in _SMALL:
            i += 1
            continue
        else:
            break
        i += 1
        end = i
    return total + part, end - start


def english_words_to_digits(tokens: Sequence[str]) -> list[str]:
    """Runs of English number words replaced by their digits (one token per number)."""
    out: list[str] = []
    i = 0
    while i < len(tokens):
        value, used = _read_number(tokens, i)
        out.append(str(value) if used else tokens[i])
        i += used or 1
    return out


# Chinese ---------------------------------------------------------------------------

_ZH_DIGITS = dict(zip("零〇一二两三四五六七八九", (0, 0, 1, 2, 2, 3, 4, 5, 6, 7, 8, 9)))
_ZH_SMALL_UNITS = {"十": 10, "百": 100, "千": 1_000}
_ZH_BIG_UNITS = {"万": 10_000, "亿": 100_000_000}
_DIGIT_CHARS = "零〇一二两三四五六七八九"
_NUMERAL = f"[{_DIGIT_CHARS}十百千万亿]"
_RUN = re.compile(f"(第)?({_NUMERAL}+(?:点[{_DIGIT_CHARS}]+)?)")
_PERCENT = re.compile(f"百分之([{_DIGIT_CHARS}十百千万亿]+(?:点[{_DIGIT_CHARS}]+)?)")
_ARABIC_TIMES = re.compile(r"(?<![\d.])(\d+(?:\.\d+)?)([万亿])")
_MEASURE_WORDS = tuple(
    (
        "分钟 小时 点钟 公里 千米 厘米 毫米 公斤 千克 毫升 平方 立方 星期 周年 个月 "
        "个 次 天 日 年 月 周 岁 元 块 角 人 名 位 只 条 件 本 张 页 章 节 段 家 辆 台 部 座 层 楼 号 倍 "
        "秒 米 克 吨 升 度 项 种 类 份 套 间 所 届 期 批 篇 首 场 轮 步 株 头 匹 双 对 行 列 字 道 门 %"
    ).split()
)


def _group_value(chars: str) -> int | None:
    """A group below 10,000 in unit form (``三百六十四``, ``两千零五``, ``十二``, ``三百五``); None if ill-formed."""
    total, digit, last_unit, after_zero = 0, None, 10_000, False
    for index, ch in enumerate(chars):
        if ch in _ZH_DIGITS:
            if digit is not None:
                return None  # two digits touching: a range such as 三五, not a number
            digit, after_zero = _ZH_DIGITS[ch], after_zero or _ZH_DIGITS[ch] == 0
            if digit == 0:
                digit = None
                continue
        else:
            unit = _ZH_SMALL_UNITS[ch]
            if unit >= last_unit or (digit is None and not (ch == "十" and index == 0)):
                return None
            total, digit, last_unit, after_zero = total + (digit or 1) * unit, None, unit, False
    if digit is not None:  # a trailing digit: ones after 零 or alone, else the next unit down (三百五 = 350)
        total += digit if after_zero or last_unit == 10_000 else digit * last_unit // 10
    return total


def _integer_value(run: str) -> int | None:
    """A Chinese integer: digit by digit when it has no unit (``二〇二四``), else by groups of 万 and 亿."""
    if all(ch in _ZH_DIGITS for ch in run):
        return int("".join(str(_ZH_DIGITS[ch]) for ch in run))
    total, last_big, rest = 0, math.inf, run
    for big_char, big in sorted(_ZH_BIG_UNITS.items(), key=lambda item: -item[1]):
        if big_char in rest:
            head, _, rest = rest.partition(big_char)
            if big_char in rest or big >= last_big:
                return None
            value = _group_value(head) if head else None
            if not value:
                return None  # a leading 万 / 亿 (万一, 亿万) is a word, not a number
            total, last_big = total + value * big, big
    if rest and rest[0] in _ZH_DIGITS and rest[0] != "零" and rest[0] != "〇" and len(rest) == 1 and total:
        return total + _ZH_DIGITS[rest[0]] * int(last_big) // 10  # 一万二 = 12000
    tail = _group_value(rest) if rest else 0
    return None if tail is None else total + tail


def zh_value(run: str) -> Decimal | None:
    """The value of a run of Chinese numerals (``三百六十四点六`` 364.6, ``二〇二四`` 2024); None if ill-formed."""
    whole, dot, fraction = run.partition("点")
    integer = _integer_value(whole) if whole else None
    if integer is None or (dot and not fraction) or any(ch not in _ZH_DIGITS for ch in fraction):
        return None
    return Decimal(f"{integer}.{''.join(str(_ZH_DIGITS[ch]) for ch in fraction)}") if fraction else Decimal(integer)


def _digits(value: Decimal) -> str:
    """``Decimal`` as plain digits without exponent or trailing zeros (``364.6``, ``120000``)."""
    text = f"{value:f}"
    return text.rstrip("0").rstrip(".") if "." in text else text


def _in_context(run: str, ordinal: bool, after: str, alone: bool) -> bool:
    """Rules 1-4 of the module docstring (the run is known to be well-formed)."""
    compound = len(run) >= 2 and any(ch in "十百千万亿点" for ch in run)
    plain = all(ch in _ZH_DIGITS for ch in run)
    if plain and len(run) == 2:
        return False  # 三五天, 一两个, 七八: two touching digits are a range, never 35 / 12 / 78
    plain_long = plain and len(run) >= 3
    measured = after.startswith(_MEASURE_WORDS) or (after[:1].isascii() and after[:1].isalpha())
    return compound or plain_long or measured or ordinal or alone


def zh_numerals_to_digits(text: str) -> str:
    """``text`` with Chinese numerals that are numbers in context written in Arabic digits (module docstring).

    ``text`` is expected NFKC-folded and lowercased (the Latin-letter rule looks at ASCII letters).
    """
    text = _PERCENT.sub(lambda m: _percent(m.group(1)), text)
    text = _ARABIC_TIMES.sub(lambda m: _digits(Decimal(m.group(1)) * _ZH_BIG_UNITS[m.group(2)]), text)

    def convert(match: re.Match[str]) -> str:
        ordinal, run = match.group(1) or "", match.group(2)
        value = zh_value(run)
        after = text[match.end() :]  # a measure word must touch the run: folding turns marks into spaces
        alone = _stands_alone(text[: match.start()], text[match.end() :])
        if value is None or not _in_context(run, bool(ordinal), after, alone):
            return match.group(0)
        return f"{ordinal}{_digits(value)}"

    return _RUN.sub(convert, text)


def _stands_alone(before: str, after: str) -> bool:
    """No letter or digit but ASCII letters on either side (spaces, marks and Latin words are passed over)."""
    return not any(ch.isalnum() and not (ch.isascii() and ch.isalpha()) for ch in (*before, *after))


def _percent(run: str) -> str:
    value = Decimal(100) if run == "百" else zh_value(run)
    return f"百分之{run}" if value is None else f"{_digits(value)}%"
