"""Context assembly: budget arithmetic, dropping, placement, position buckets and the stuff/files arms."""

from __future__ import annotations

from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evalkit.answers.context import (
    BLOCK_SEPARATOR,
    DOES_NOT_FIT,
    PROMPT_TOO_LONG,
    Budget,
    ContextItem,
    Placement,
    assemble,
    bucket_of,
    file_items,
    parse_placement,
    render_block,
    render_context,
    stuff_context,
    stuff_items,
)
from evalkit.records import Document


def words(text: str) -> int:
    """Deterministic token counter: whitespace-separated words (additive over blocks)."""
    return len(text.split())


def quarter(text: str) -> int:
    """Deterministic token counter: characters // 4 (not additive over blocks)."""
    return len(text) // 4


def item(name: str, n_words: int, score: float, *, gold: bool = False, doc: str | None = None) -> ContextItem:
    """An item whose rendered block is ``[doc]`` plus ``n_words`` words: ``1 + n_words`` tokens by :func:`words`."""
    text = " ".join(f"{name}{i}" for i in range(n_words))
    return ContextItem(name, doc or name, 0, len(text), text, score, gold)


BIG = Budget(window_tokens=10_000, max_output_tokens=0, headroom_tokens=0, context_share=1.0)
SCORE = Placement("score")


def run(items, budget=BIG, placement=SCORE, seed=0, system="sys", question="q?", counter=words):
    return assemble(system, question, items, budget, counter, placement, seed)


# Budget -------------------------------------------------------------------------


def test_budget_arithmetic():
    budget = Budget(window_tokens=1000, max_output_tokens=100, headroom_tokens=50, context_share=0.5)
    assert budget.input_tokens == 850  # 1000 - 100 - 50
    assert budget.share_tokens == 500  # floor(1000 * 0.5)
    assert budget.context_cap(400) == 450  # the input budget binds: 850 - 400
    assert budget.context_cap(100) == 500  # the share binds: min(750, 500)
    assert budget.context_cap(100, use_share=False) == 750
    assert Budget(1001, 0, 0, 0.5).share_tokens == 500  # floor, not round


@pytest.mark.parametrize(
    "kwargs",
    [
        {"window_tokens": 0, "max_output_tokens": 0, "headroom_tokens": 0},
        {"window_tokens": 10, "max_output_tokens": -1, "headroom_tokens": 0},
        {"window_tokens": 10, "max_output_tokens": 0, "headroom_tokens": 0, "context_share": 0.0},
        {"window_tokens": 10, "max_output_tokens": 0, "headroom_tokens": 0, "context_share": 1.5},
    ],
)
def test_budget_rejects_nonsense(kwargs):
    with pytest.raises(ValueError):
        Budget(**kwargs)


def test_token_counts_add_up():
    result = run([item("a", 3, 1.0), item("b", 2, 0.5)], system="be brief please", question="how many?")
    assert (result.system_tokens, result.question_tokens) == (3, 2)
    assert result.context_tokens == (1 + 3) + (1 + 2)  # "[a]" + 3 words, "[b]" + 2 words
    assert result.total_tokens == 3 + 7 + 2
    assert result.fits and result.reason == "" and result.dropped == ()


# Dropping -----------------------------------------------------------------------


def test_lowest_scored_dropped_first_whole_items_only():
    items = [item("a", 5, 0.9), item("b", 5, 0.5), item("c", 5, 0.7)]
    # input budget 19 - 2 (system "sys", question "q?") leaves 17 context tokens: two 6-token blocks fit, three do not
    budget = Budget(window_tokens=19, max_output_tokens=0, headroom_tokens=0, context_share=1.0)
    result = run(items, budget)
    assert [i.unit_id for i in result.items] == ["a", "c"]
    assert [i.unit_id for i in result.dropped] == ["b"]
    assert items[1].text not in result.context_text  # dropped whole ...
    assert all(i.text in result.context_text for i in result.items)  # ... and kept whole
    assert result.context_tokens == 12 <= result.context_cap == 17
    assert result.fits


def test_dropped_in_order_lowest_first_and_share_caps_context():
    items = [item("a", 3, 0.9), item("b", 3, 0.1), item("c", 3, 0.5), item("d", 3, 0.3)]
    budget = Budget(window_tokens=20, max_output_tokens=0, headroom_tokens=0, context_share=0.5)
    result = run(items, budget)  # share: floor(20 * 0.5) = 10 tokens -> two 4-token blocks
    assert result.context_cap == 10
    assert [i.unit_id for i in result.items] == ["a", "c"]
    assert [i.unit_id for i in result.dropped] == ["b", "d"]


def test_output_and_headroom_are_reserved():
    items = [item("a", 3, 0.9), item("b", 3, 0.5)]
    budget = Budget(window_tokens=20, max_output_tokens=8, headroom_tokens=2, context_share=1.0)
    result = run(items, budget)  # 20 - 8 - 2 - 2 = 8 context tokens: both 4-token blocks just fit
    assert result.context_tokens == 8 and result.fits and len(result.items) == 2
    tighter = run(items, Budget(20, 9, 2, 1.0))
    assert [i.unit_id for i in tighter.items] == ["a"]


def test_system_prompt_and_question_never_dropped():
    items = [item("a", 2, 0.9, gold=True)]
    system = "word " * 30
    result = run(items, Budget(20, 0, 0, 1.0), system=system)
    assert not result.fits
    assert result.reason == PROMPT_TOO_LONG == "system prompt and question exceed the budget"
    assert result.system == system and result.question == "q?"
    assert result.items == () and result.dropped == tuple(items) and result.context_text == ""
    assert result.gold_bucket == "none" and result.gold_offset is None


def test_item_larger_than_the_cap_is_dropped_not_cut():
    result = run([item("big", 50, 0.9), item("small", 2, 0.1)], Budget(20, 0, 0, 1.0))
    assert [i.unit_id for i in result.items] == []  # the best item does not fit, so the prefix is empty
    assert [i.unit_id for i in result.dropped] == ["small", "big"]
    assert result.fits and result.context_text == ""


def test_inputs_not_mutated():
    items = [item("a", 3, 0.1), item("b", 3, 0.9, gold=True)]
    before = list(items)
    run(items, placement=Placement("gold_at", "tail"))
    assert items == before


# Rendering ------------------------------------------------------------------------


def test_rendering_format():
    titled = ContextItem("doc#0-5", "guide/rate-limits.md", 0, 5, "Hello", 1.0, False, "Rate limits")
    plain = ContextItem("x#0-3", "x", 0, 3, "abc", 0.5, False)
    assert render_block(titled) == "[guide/rate-limits.md] Rate limits\nHello"
    assert render_block(plain) == "[x]\nabc"
    assert render_context([titled, plain]) == "[guide/rate-limits.md] Rate limits\nHello\n\n[x]\nabc"
    assert BLOCK_SEPARATOR == "\n\n"


# Buckets and placement -------------------------------------------------------------


def test_bucket_boundaries():
    assert [bucket_of(o, 9) for o in range(9)] == ["head"] * 3 + ["mid"] * 3 + ["tail"] * 3
    assert [bucket_of(o, 10) for o in range(10)] == ["head"] * 4 + ["mid"] * 3 + ["tail"] * 3  # 3*3 < 10, 3*6 < 20
    assert bucket_of(0, 1) == "head"
    for offset, length in [(-1, 9), (9, 9), (0, 0)]:
        with pytest.raises(ValueError):
            bucket_of(offset, length)


def five_with_gold(gold_rank: int) -> list[ContextItem]:
    return [item(f"i{r}", 4, 1.0 - r / 10, gold=r == gold_rank) for r in range(5)]


@pytest.mark.parametrize("gold_rank", [0, 2, 4])
@pytest.mark.parametrize("position", ["head", "mid", "tail"])
def test_gold_at_lands_in_its_bucket(position, gold_rank):
    items = five_with_gold(gold_rank)
    result = run(items, placement=Placement("gold_at", position))
    assert result.gold_bucket == position
    gold = items[gold_rank]
    assert result.context_text[result.gold_offset : result.gold_end] == render_block(gold)
    assert [i.is_gold for i in result.items].index(True) == {"head": 0, "mid": 2, "tail": 4}[position]
    others = [i.unit_id for i in result.items if not i.is_gold]
    assert others == [i.unit_id for i in items if not i.is_gold]  # the others keep score order


def test_gold_offsets_at_head_and_tail():
    items = five_with_gold(2)
    head = run(items, placement=Placement("gold_at", "head"))
    tail = run(items, placement=Placement("gold_at", "tail"))
    assert head.gold_offset == 0
    assert tail.gold_end == len(tail.context_text)


def test_two_items_gold_last_is_tail_by_midpoint():
    result = run([item("a", 4, 0.9), item("g", 4, 0.5, gold=True)], placement=Placement("gold_at", "tail"))
    # blocks of 15 chars at [0, 15) and [17, 32): midpoint 17 + 7 = 24, 3 * 24 = 72 >= 2 * 32 = 64 -> tail
    # (by its start, 3 * 17 = 51 < 64 would have said mid)
    assert (result.gold_offset, result.gold_end, len(result.context_text)) == (17, 32, 32)
    assert result.gold_bucket == "tail"


def test_mid_slot_uses_characters_not_counts():
    # others in score order: three 16-char blocks, then a long 73-char one; the gold block is 12 chars
    items = [
        item("s1", 3, 0.9),
        item("s2", 3, 0.8),
        item("s3", 3, 0.7),
        item("L", 20, 0.6),
        item("g", 3, 0.1, gold=True),
    ]
    result = run(items, placement=Placement("gold_at", "mid"))
    # total 3 * 16 + 73 + 12 + 4 * 2 = 141, centre 70.5. Slot 3 puts the gold block at [54, 66), midpoint 60
    # (3 * 60 = 180: mid); slot 2 (the middle by count) would put it at [36, 48), midpoint 42 (3 * 42 < 141: head)
    assert [i.unit_id for i in result.items] == ["s1", "s2", "s3", "g", "L"]
    assert (result.gold_offset, result.gold_end, len(result.context_text)) == (54, 66, 141)
    assert result.gold_bucket == "mid"


def test_score_placement_and_no_gold():
    items = [item("a", 2, 0.1), item("b", 2, 0.9), item("c", 2, 0.5)]
    result = run(items)
    assert [i.unit_id for i in result.items] == ["b", "c", "a"]
    assert result.gold_bucket == "none" and result.gold_offset is None and result.gold_end is None
    assert run(items, placement=Placement("gold_at", "head")).items == result.items  # nothing to move


def test_first_gold_in_rank_order_is_the_gold_item():
    items = [item("a", 2, 0.9), item("g1", 2, 0.8, gold=True), item("g2", 2, 0.7, gold=True)]
    result = run(items, placement=Placement("gold_at", "tail"))
    assert [i.unit_id for i in result.items] == ["a", "g2", "g1"]
    assert result.context_text[result.gold_offset :].startswith("[g1]")


def test_gold_dropped_means_bucket_none():
    items = [item("a", 3, 0.9), item("g", 3, 0.1, gold=True)]
    result = run(items, Budget(7, 0, 0, 1.0), placement=Placement("gold_at", "head"))  # 5 tokens: one 4-token block
    assert [i.unit_id for i in result.items] == ["a"]
    assert result.gold_bucket == "none"


def test_shuffle_deterministic_per_seed_and_varies_across_seeds():
    items = [item(f"i{k}", 2, k / 10) for k in range(8)]
    shuffle = Placement("shuffle")
    order = [i.unit_id for i in run(items, placement=shuffle, seed=7).items]
    assert order == [i.unit_id for i in run(items, placement=shuffle, seed=7).items]
    assert sorted(order) == sorted(i.unit_id for i in items)
    orders = {tuple(i.unit_id for i in run(items, placement=shuffle, seed=s).items) for s in range(10)}
    assert len(orders) >= 8  # 8! orders: ten seeds all but never collide


def test_parse_placement():
    assert parse_placement("score") == Placement("score")
    assert parse_placement("shuffle") == Placement("shuffle")
    assert parse_placement("gold_at:mid") == Placement("gold_at", "mid")
    assert Placement("gold_at", "tail").name == "gold_at:tail"
    for bad in ["gold_at", "gold_at:middle", "score:head", "random"]:
        with pytest.raises(ValueError):
            parse_placement(bad)


def test_nan_score_rejected():
    with pytest.raises(ValueError):
        ContextItem("a", "a", 0, 1, "x", float("nan"), False)


# Arms -----------------------------------------------------------------------------------

DOCS = [
    Document("a", "alpha " * 5, title="A"),
    Document("b", "beta " * 5, title="B"),
    Document("c", "gamma " * 5),
]


def test_stuff_fits_and_ignores_share():
    budget = Budget(window_tokens=30, max_output_tokens=5, headroom_tokens=0, context_share=0.1)
    result = stuff_context("sys", "q?", DOCS, budget, words, SCORE, 0, gold_doc_ids={"b"})
    # blocks: "[a] A" + 5 words = 7, "[b] B" + 5 = 7, "[c]" + 5 = 6 -> 20 <= 30 - 5 - 2 = 23 (share 3 ignored)
    assert result.fits and result.context_tokens == 20
    assert [i.doc_id for i in result.items] == ["a", "b", "c"]
    assert result.gold_bucket == "mid"


def test_stuff_does_not_fit_instead_of_truncating():
    budget = Budget(window_tokens=20, max_output_tokens=0, headroom_tokens=0)
    result = stuff_context("sys", "q?", DOCS, budget, words, SCORE, 0)
    assert not result.fits and result.reason == DOES_NOT_FIT == "does not fit"
    assert result.dropped == ()
    assert all(doc.text in result.context_text for doc in DOCS)  # nothing cut
    assert result.context_tokens == 20 > result.context_cap == 18


def test_stuff_items_whole_documents():
    items = stuff_items(DOCS, gold_doc_ids={"c"})
    assert [(i.unit_id, i.start, i.end, i.text, i.is_gold) for i in items] == [
        (d.doc_id, 0, len(d.text), d.text, d.doc_id == "c") for d in DOCS
    ]


def test_files_arm_dedupes_by_doc_in_rank_order():
    docs = {d.doc_id: d for d in DOCS}
    ranked = [
        ContextItem("b#0-4", "b", 0, 4, "beta", 0.9, False),
        ContextItem("a#0-5", "a", 0, 5, "alpha", 0.8, True),
        ContextItem("b#5-9", "b", 5, 9, "beta", 0.7, True),
        ContextItem("c#0-5", "c", 0, 5, "gamma", 0.2, False),
    ]
    files = file_items(ranked, docs)
    assert [(f.doc_id, f.score, f.is_gold, f.text, f.title) for f in files] == [
        ("b", 0.9, True, docs["b"].text, "B"),  # gold because one of its chunks is
        ("a", 0.8, True, docs["a"].text, "A"),
        ("c", 0.2, False, docs["c"].text, ""),
    ]
    assert [f.is_gold for f in file_items(ranked, docs, gold_doc_ids={"c"})] == [False, False, True]
    # up to the budget: the lowest-ranked file goes first
    result = run(files, Budget(window_tokens=16, max_output_tokens=0, headroom_tokens=0, context_share=1.0))
    assert [i.doc_id for i in result.items] == ["b", "a"] and [i.doc_id for i in result.dropped] == ["c"]
    with pytest.raises(KeyError):
        file_items([ContextItem("z#0-1", "z", 0, 1, "z", 1.0, False)], docs)


# Properties ---------------------------------------------------------------------------------

word = st.text(alphabet="abcxyz", min_size=1, max_size=6)
items_strategy = st.lists(
    st.tuples(
        st.lists(word, min_size=0, max_size=12).map(" ".join),
        st.floats(min_value=-5, max_value=5, allow_nan=False),
        st.booleans(),
        st.sampled_from(["", "T", "two words"]),
    ),
    max_size=10,
).map(
    lambda rows: [
        ContextItem(f"u{k}", f"d{k % 3}/x-{k}.md", 0, len(text), text, score, gold, title)
        for k, (text, score, gold, title) in enumerate(rows)
    ]
)
placements = st.sampled_from(
    [Placement("score"), Placement("shuffle"), *(Placement("gold_at", p) for p in ("head", "mid", "tail"))]
)


@settings(max_examples=100, deadline=None)
@given(
    items=items_strategy,
    window=st.integers(min_value=1, max_value=120),
    output=st.integers(min_value=0, max_value=20),
    share=st.sampled_from([0.25, 0.5, 1.0]),
    placement=placements,
    seed=st.integers(min_value=0, max_value=2**32),
    counter=st.sampled_from([words, quarter]),
)
def test_context_never_exceeds_budget_and_keeps_items_whole(items, window, output, share, placement, seed, counter):
    budget = Budget(window_tokens=window, max_output_tokens=output, headroom_tokens=3, context_share=share)
    result = assemble("you answer", "what now?", items, budget, counter, placement, seed)
    if result.fits:
        assert result.context_tokens <= result.context_cap
        assert result.total_tokens <= budget.input_tokens
        assert result.context_tokens <= budget.share_tokens
    else:
        assert result.reason == PROMPT_TOO_LONG and result.items == ()
    assert result.context_text == render_context(result.items)
    assert all(i.text in result.context_text for i in result.items)
    # placed + dropped is a permutation of the input; the kept ones are the best-scored
    assert Counter(i.unit_id for i in result.items + result.dropped) == Counter(i.unit_id for i in items)
    if result.items and result.dropped:
        assert min(i.score for i in result.items) >= max(i.score for i in result.dropped)
    if result.gold_offset is not None:
        assert result.context_text[result.gold_offset : result.gold_end].startswith("[")
        assert any(i.is_gold for i in result.items)
    else:
        assert result.gold_bucket == "none" and not any(i.is_gold for i in result.items)


def test_token_counter_called_logarithmically():
    calls: list[str] = []

    def counting(text: str) -> int:
        calls.append(text)
        return words(text)

    items = [item(f"i{k}", 3, 1.0 - k / 100) for k in range(64)]
    result = assemble("sys", "q?", items, Budget(100, 0, 0, 1.0), counting, SCORE, 0)
    assert len(result.items) == 24  # 98 context tokens // 4 per block
    assert len(calls) <= 2 + 2 + 7  # system, question, the full and empty contexts, then bisection over 64
