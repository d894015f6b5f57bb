"""The search behind ``labels reanchor``: the bit-parallel edit distance, matching keys, guards, bounds, context.

Differential where there is a reference (Sellers' dynamic programme for the
bit-parallel scores), and on the real demo set with every document edited,
offsets checked against the true ones.
"""

from __future__ import annotations

import json
import random
import unicodedata
from pathlib import Path

from evalkit.curate.reanchor.find import Searchable, StaleSpan, _find, find_again
from evalkit.curate.reanchor.fuzzy import FUZZY_FLOOR, MAX_WINDOWS, _windows
from evalkit.curate.reanchor.textkey import Keyed, align, edit_scores, key_of
from tests.test_reanchor import DUPLICATED, SECURITY, SECURITY_EDITED


def reference_scores(pattern: str, text: str, anchored: bool) -> list[int]:
    """Sellers' dynamic programme, column by column: the textbook form of what edit_scores computes."""
    previous = list(range(len(pattern) + 1))
    scores = []
    for j, char in enumerate(text):
        column = [j + 1 if anchored else 0]
        for i in range(1, len(pattern) + 1):
            column.append(min(previous[i] + 1, column[i - 1] + 1, previous[i - 1] + (pattern[i - 1] != char)))
        scores.append(column[-1])
        previous = column
    return scores


def test_bit_parallel_scores_equal_the_dynamic_programme() -> None:
    rng = random.Random(7)
    for _ in range(1500):
        pattern = "".join(rng.choice("ab六百") for _ in range(rng.randint(1, 70)))  # past one machine word too
        text = "".join(rng.choice("ab六百c") for _ in range(rng.randint(0, 90)))
        for anchored in (False, True):
            assert edit_scores(pattern, text, anchored) == reference_scores(pattern, text, anchored)
    assert align("burst of 20", "a burts of 20 requests", 13) == (2, 2)


def test_the_key_maps_back_to_the_original_text() -> None:
    text = "Cafe\u0301  au\nlait: ＡＰＩ 六百\n元\u200b。"
    keyed = Keyed.of(text)
    assert keyed.key == "Caféaulait:API六百元。"
    start = keyed.key.index("é")
    assert text[slice(*keyed.original(start, start + 1))] == "e\u0301"  # a whole cluster, never half an accent
    start = keyed.key.index("六百元")
    assert text[slice(*keyed.original(start, start + 3))] == "六百\n元"
    assert key_of("ＡＰＩ  ") == "API"


def span(text: str, start: int = 0, answers: tuple[str, ...] = ()) -> StaleSpan:
    return StaleSpan("q", 1, "evidence", 0, "d", start, start + len(text), text, answers)


def test_guards_short_spans_numbers_answers_and_whitespace_twins() -> None:
    doc = Searchable("Intro.\n\nThe free tier includes 800 API calls per month.\n\nburst of 20 and burst of\n20.\n")
    assert _find(doc, span("The free tier includes 500 API calls per month.")).status == "lost"
    short = _find(doc, span("tier ncludes"))  # 11 key characters: one edit is allowed ...
    assert (short.status, short.method) == ("moved", "fuzzy")
    assert _find(doc, span("Intrx.")).reason.startswith("not found; too short")  # ... under ten, none
    answer = _find(doc, span("The free tier includes 800 API calls per mnth.", answers=("per month",)))
    assert answer.status == "moved"
    refused = _find(doc, span("The free tier includes 800 API calls per week.", answers=("per week",)))
    assert refused.status == "lost"
    twins = _find(doc, span("burst of 20"))  # once exactly, once more across a line break
    assert twins.status == "ambiguous" and len(twins.places) == 2


def test_the_fuzzy_search_is_bounded_on_a_large_document() -> None:
    rng = random.Random(3)
    words = ["policy", "travel", "burst", "limit", "request", "client", "retry", "the", "of", "a", "and"]
    filler = " ".join(rng.choice(words) for _ in range(200_000))  # ~1.3 MB of repetitive text
    target = "The RateLimiter allows a burst of 20 requests per second by default."
    doc = Searchable(filler[: len(filler) // 2] + " " + target.replace("burst", "brust") + " " + filler)
    needle = key_of(target)
    edits = int((1 - FUZZY_FLOOR) * len(needle))
    windows = _windows(doc.keyed, needle, 10, edits)
    assert len(windows) <= MAX_WINDOWS
    assert sum(hi - lo for lo, hi in windows) <= MAX_WINDOWS * (len(needle) + 2 * edits)
    found = _find(doc, span(target, 10, answers=("20",)))
    assert (found.status, found.method) == ("moved", "fuzzy") and "brust" in found.text


def test_the_demo_set_edited_every_span_lands_at_its_true_offset(tmp_path: Path) -> None:
    """The README's figures: the bundled set, every document edited three ways, offsets checked against the truth."""
    import shutil

    from evalkit.curate.reanchor import plan_reanchor
    from tests.conftest import DEMO

    root = Path(shutil.copytree(DEMO, tmp_path / "demo", ignore=shutil.ignore_patterns(".history")))
    records = [json.loads(line) for line in (root / "docs.jsonl").read_text(encoding="utf-8").splitlines()]
    edits = [
        lambda t: "Inserted note paragraph.\n\n" + t,
        lambda t: unicodedata.normalize("NFD", "新增段落。\n\n" + t.replace("\n\n", "\n\n\n")),
        lambda t: t.replace(". ", ".\n"),  # the same length: offsets stay, the text at them changes
    ]
    edit_of, old = {}, {}
    for i, record in enumerate(records):
        path = root / record["path"]
        old[record["doc_id"]] = path.read_text(encoding="utf-8")
        edit_of[record["doc_id"]] = edits[i % 3]
        path.write_text(edits[i % 3](old[record["doc_id"]]), encoding="utf-8", newline="")

    # Without the documents as labelled nothing is taken (a place found once is proposed, not moved);
    # with them every label is placed by its surroundings, the 67 that still read right checked too.
    for before, settled, ambiguous in ((None, 0, 212), (DEMO, 212 + 67, 0)):
        plan = plan_reanchor(root, before)
        counts = plan.counts()
        assert (counts["stale"], counts["moved"] + counts["unchanged"], counts["ambiguous"]) == (
            212,
            settled,
            ambiguous,
        )
        assert counts["unchecked"] == (67 if before is None else 0) and counts["lost"] == 0
        for found in plan.found:
            if found.status in ("moved", "unchanged"):
                edit, text = edit_of[found.span.doc_id], old[found.span.doc_id]
                truth = (len(edit(text[: found.span.start])), len(edit(text[: found.span.end])))
                assert (found.start, found.end) == truth, found


def test_a_before_that_is_not_the_labelled_version_decides_nothing() -> None:
    at = SECURITY.index(DUPLICATED)
    found = find_again(Searchable(SECURITY_EDITED), span(DUPLICATED, at), Searchable(SECURITY_EDITED))
    assert found.status == "ambiguous"
    found = find_again(Searchable(SECURITY_EDITED), span(DUPLICATED, at), Searchable(SECURITY))
    assert (found.status, found.method, found.start) == ("moved", "context", SECURITY_EDITED.rindex(DUPLICATED))
