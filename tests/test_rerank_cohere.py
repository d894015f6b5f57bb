"""CohereReranker: the real ``cohere`` SDK against a loopback server speaking the v2 wire format."""

from __future__ import annotations

import math
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from evalkit.cache import Cache
from evalkit.cost.budget import BudgetExceeded, SpendGuard
from evalkit.cost.prices import load_price_table
from evalkit.retrieval.rerank.base import RerankCounter, RerankError, rerank_scores
from evalkit.retrieval.rerank.cohere import CohereReranker
from evalkit.retrieval.settings import RerankerSettings
from evalkit.retry import retry_after_seconds
from tests.loopback.cohere_server import CohereServer, ScriptedReply, word_overlap
from tests.loopback.faults import FAULT_KINDS, FaultPlan

API_KEY = "test-key"
PRICING = Path(__file__).resolve().parents[1] / "conf" / "pricing" / "cohere.yaml"
QUERY = "capital city of france"
DOCUMENTS = [
    "Berlin is the capital of Germany.",  # capital, of: 2/4
    "Paris is the capital city of France.",  # all four words
    "Bananas are yellow.",  # none
    "The city of Lyon lies in France.",  # city, of, france: 3/4
]
EXPECTED = np.array([0.5, 1.0, 0.0, 0.75])


@pytest.fixture
def server() -> Iterator[CohereServer]:
    with CohereServer(api_key=API_KEY) as running:
        yield running  # type: ignore[misc]


@pytest.fixture
def waits() -> list[float]:
    return []


def cohere_settings(base_url: str, **fields: object) -> RerankerSettings:
    """``reranker=cohere`` settings pointed at ``base_url`` (the frozen record the sweep passes whole)."""
    return RerankerSettings(name="cohere", base_url=base_url, **fields)  # type: ignore[arg-type]


def make(server: CohereServer, waits: list[float], **options: object) -> CohereReranker:
    """A reranker on ``server``; ``options`` are settings fields, or ``price``/``api_key`` (the constructor's own)."""
    own = {k: options.pop(k) for k in ("price", "api_key") if k in options}
    fields: dict[str, object] = {"timeout_s": 5.0, "retry_base_delay_s": 0.001, **options}
    return CohereReranker(
        cohere_settings(server.url, **fields),
        own.get("price"),  # type: ignore[arg-type]
        api_key=own.get("api_key", API_KEY),  # type: ignore[arg-type]
        sleep=waits.append,  # record waits instead of sleeping: fast, and the delays are visible
    )


def test_scores_come_back_in_input_order(server: CohereServer, waits: list[float]) -> None:
    counter = RerankCounter()
    scores = make(server, waits).score_pairs(QUERY, DOCUMENTS, counter)
    np.testing.assert_allclose(scores, EXPECTED)
    (request,) = server.rerank_requests
    assert request.body == {
        "model": "rerank-v3.5",
        "query": QUERY,
        "documents": DOCUMENTS,
        "top_n": 4,
        "max_tokens_per_doc": 4096,
    }
    assert request.headers["authorization"] == f"Bearer {API_KEY}"
    assert counter.pairs_scored == {"rerank-v3.5": 4}
    assert counter.requests == {"rerank-v3.5": 1}


def test_inputs_are_not_mutated(server: CohereServer, waits: list[float]) -> None:
    documents = list(DOCUMENTS)
    make(server, waits).score_pairs(QUERY, documents)
    assert documents == DOCUMENTS


def test_server_top_n_shorter_than_pool_is_an_error(waits: list[float]) -> None:
    # A server that drops documents must not yield silent gaps (they would rank as missing, not as low).
    class Truncating(CohereServer):
        def _rerank(self, body: dict) -> tuple[int, dict]:
            status, reply = super()._rerank(body)
            reply["results"] = reply["results"][:2]
            return status, reply

    with Truncating(api_key=API_KEY) as server, pytest.raises(RerankError, match="2 results for 4 documents"):
        make(server, waits, max_retries=1).score_pairs(QUERY, DOCUMENTS)
    assert len(server.rerank_requests) == 2  # retried like any bad reply, then one clear error


def test_search_units_recorded(server: CohereServer, waits: list[float]) -> None:
    counter = RerankCounter()
    documents = [f"document number {i} about the capital" for i in range(250)]
    make(server, waits).score_pairs(QUERY, documents, counter)
    assert counter.search_units == {"rerank-v3.5": 3}  # ceil(250 / 100), as the server billed


def test_search_units_estimated_when_not_billed(waits: list[float]) -> None:
    class NoMeta(CohereServer):
        def _rerank(self, body: dict) -> tuple[int, dict]:
            status, reply = super()._rerank(body)
            reply.pop("meta", None)
            return status, reply

    with NoMeta(api_key=API_KEY) as server:
        counter = RerankCounter()
        make(server, waits).score_pairs(QUERY, [f"doc {i}" for i in range(101)], counter)
    assert counter.search_units == {"rerank-v3.5": 2}


@pytest.mark.parametrize("status", [429, 500, 503])
def test_transient_error_then_success_is_retried(server: CohereServer, waits: list[float], status: int) -> None:
    server.fail_next(status, retry_after="0" if status == 429 else None)
    counter = RerankCounter()
    scores = make(server, waits).score_pairs(QUERY, DOCUMENTS, counter)
    np.testing.assert_allclose(scores, EXPECTED)
    assert [r.status for r in server.rerank_requests] == [status, 200]
    assert counter.requests == {"rerank-v3.5": 2}
    assert counter.pairs_scored == {"rerank-v3.5": 4}
    assert len(waits) == 1
    if status == 429:
        assert waits == [0.0]  # Retry-After: 0 honoured exactly
    else:
        assert 0.0 <= waits[0] <= 0.001  # first backoff: full jitter under the base delay


def test_retry_after_is_honoured_and_capped(server: CohereServer, waits: list[float]) -> None:
    server.fail_next(429, retry_after="7")
    make(server, waits, retry_max_delay_s=5.0).score_pairs(QUERY, DOCUMENTS)
    assert waits == [5.0]


def test_backoff_grows_exponentially(server: CohereServer, waits: list[float]) -> None:
    server.fail_next(503, times=3)
    make(server, waits, retry_base_delay_s=1.0, retry_max_delay_s=100.0).score_pairs(QUERY, DOCUMENTS)
    assert len(waits) == 3
    for attempt, wait in enumerate(waits):
        assert 0.0 <= wait <= 2.0**attempt


def test_retries_exhausted_is_a_clear_error(server: CohereServer, waits: list[float]) -> None:
    server.fail_next(503, times=10, message="overloaded")
    counter = RerankCounter()
    with pytest.raises(RerankError, match=r"HTTP 503: overloaded \(gave up after 3 attempts\)"):
        make(server, waits, max_retries=2).score_pairs(QUERY, DOCUMENTS, counter)
    assert len(server.rerank_requests) == 3
    assert counter.requests == {"rerank-v3.5": 3}
    assert counter.pairs_scored == {"rerank-v3.5": 0}


def test_bad_request_is_not_retried(server: CohereServer, waits: list[float]) -> None:
    server.fail_next(400, message="invalid request: max_tokens_per_doc too large")
    with pytest.raises(RerankError, match="HTTP 400: invalid request: max_tokens_per_doc too large") as info:
        make(server, waits).score_pairs(QUERY, DOCUMENTS)
    assert "\n" not in str(info.value)
    assert len(server.rerank_requests) == 1
    assert waits == []


def test_real_validation_error_from_server(server: CohereServer, waits: list[float]) -> None:
    reranker = make(server, waits)
    reranker.max_tokens_per_doc = 0  # the constructor refuses 0; set it afterwards to reach the server's check
    with pytest.raises(RerankError, match="HTTP 400: invalid request: max_tokens_per_doc must be a positive"):
        reranker.score_pairs(QUERY, DOCUMENTS)
    assert len(server.rerank_requests) == 1


def test_wrong_key_is_not_retried(server: CohereServer, waits: list[float]) -> None:
    with pytest.raises(RerankError, match=r"HTTP 401: invalid api token \(check COHERE_API_KEY\)"):
        make(server, waits, api_key="wrong").score_pairs(QUERY, DOCUMENTS)
    assert len(server.rerank_requests) == 1


def test_connection_refused_is_retried_then_reported(waits: list[float]) -> None:
    server = CohereServer(api_key=API_KEY).start()
    url = server.url
    server.stop()  # nothing listens on the port now
    reranker = CohereReranker(cohere_settings(url, max_retries=1, timeout_s=2.0), api_key=API_KEY, sleep=waits.append)
    with pytest.raises(RerankError, match=r"failed after 2 attempts: Connection(Refused)?Error"):
        reranker.score_pairs(QUERY, DOCUMENTS)
    assert len(waits) == 1


def test_missing_api_key_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("COHERE_API_KEY", raising=False)
    monkeypatch.delenv("CO_API_KEY", raising=False)
    with pytest.raises(RerankError, match="COHERE_API_KEY") as info:
        CohereReranker(cohere_settings("http://127.0.0.1:9"))
    message = str(info.value)
    assert "reranker=local" in message
    assert "\n" not in message


def test_api_key_read_from_environment(
    server: CohereServer, waits: list[float], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COHERE_API_KEY", API_KEY)
    reranker = CohereReranker(cohere_settings(server.url), sleep=waits.append)
    np.testing.assert_allclose(reranker.score_pairs(QUERY, DOCUMENTS), EXPECTED)


def test_large_pool_split_and_merged_by_score(server: CohereServer, waits: list[float], tmp_path: Path) -> None:
    query = "alpha beta gamma delta epsilon zeta eta theta"
    words = query.split()
    # Document i holds the first (i + 1) query words, so relevance rises with i; shuffle to test the merge.
    order = [5, 0, 7, 2, 6, 1, 3, 4]
    documents = [" ".join(words[: i + 1]) + f" filler {i}" for i in order]
    expected = np.array([word_overlap(query, document) for document in documents])

    counter = RerankCounter()
    small = make(server, waits, max_documents_per_request=3)
    with Cache(tmp_path / "split.sqlite") as cache:
        merged = rerank_scores(small, query, documents, cache, counter)
    assert server.documents_per_request == [3, 3, 2]
    assert counter.requests == {"rerank-v3.5": 3}
    assert counter.pairs_scored == {"rerank-v3.5": 8}

    server.reset()
    with Cache(tmp_path / "single.sqlite") as cache:
        single = rerank_scores(make(server, waits), query, documents, cache)
    assert server.documents_per_request == [8]
    np.testing.assert_allclose(merged, single)
    np.testing.assert_allclose(merged, expected)
    ranking = [order[i] for i in np.argsort(-merged, kind="stable")]
    assert ranking == [7, 6, 5, 4, 3, 2, 1, 0]


def test_cache_hit_sends_no_request(server: CohereServer, waits: list[float], tmp_path: Path) -> None:
    reranker = make(server, waits)
    counter = RerankCounter()
    with Cache(tmp_path / "cache.sqlite") as cache:
        first = rerank_scores(reranker, QUERY, DOCUMENTS, cache, counter)
        assert len(server.rerank_requests) == 1
        second = rerank_scores(reranker, QUERY, DOCUMENTS, cache, counter)
    assert len(server.rerank_requests) == 1
    np.testing.assert_array_equal(first, second)
    assert counter.requests == {"rerank-v3.5": 1}
    # A reopened cache file serves too: a re-run a quarter later pays nothing.
    with Cache(tmp_path / "cache.sqlite") as cache:
        rerank_scores(make(server, waits), QUERY, DOCUMENTS, cache)
    assert len(server.rerank_requests) == 1


def test_cache_key_depends_on_truncation(server: CohereServer, waits: list[float]) -> None:
    a = make(server, waits, max_tokens_per_doc=512)
    b = make(server, waits, max_tokens_per_doc=4096)
    assert a.key(QUERY, DOCUMENTS[0]) != b.key(QUERY, DOCUMENTS[0])
    assert a.identity == "rerank-v3.5@rerank-v3.5"


def test_too_many_documents_for_one_call(server: CohereServer, waits: list[float]) -> None:
    with pytest.raises(RerankError, match="max_documents_per_request=3"):
        make(server, waits, max_documents_per_request=3).score_pairs(QUERY, DOCUMENTS)
    assert server.rerank_requests == []


def test_empty_pool_sends_nothing(server: CohereServer, waits: list[float]) -> None:
    assert make(server, waits).score_pairs(QUERY, []).shape == (0,)
    assert server.rerank_requests == []


@pytest.mark.parametrize(
    ("headers", "expected"),
    [
        (None, None),
        ({}, None),
        ({"retry-after": "3"}, 3.0),
        ({"Retry-After": " 1.5 "}, 1.5),
        ({"retry-after": "-4"}, 0.0),
        ({"retry-after": "Wed, 21 Oct 2015 07:28:00 GMT"}, 0.0),  # a date in the past: no wait
        ({"retry-after": "soon"}, None),
        ({"retry-after-ms": "250", "retry-after": "3"}, 0.25),  # the SDKs' millisecond header wins
    ],
)
def test_retry_after_parsing(headers: dict[str, str] | None, expected: float | None) -> None:
    assert retry_after_seconds(headers) == expected


def test_api_key_from_configured_variable(
    server: CohereServer, waits: list[float], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("COHERE_API_KEY", raising=False)
    monkeypatch.delenv("CO_API_KEY", raising=False)
    with pytest.raises(RerankError, match="set TEAM_COHERE_KEY"):
        CohereReranker(cohere_settings(server.url, api_key_env="TEAM_COHERE_KEY"))
    monkeypatch.setenv("TEAM_COHERE_KEY", API_KEY)
    reranker = CohereReranker(cohere_settings(server.url, api_key_env="TEAM_COHERE_KEY"), sleep=waits.append)
    np.testing.assert_allclose(reranker.score_pairs(QUERY, DOCUMENTS), EXPECTED)


def test_request_cost_from_price_table(server: CohereServer, waits: list[float]) -> None:
    price = load_price_table(PRICING).reranker("rerank-v3.5")
    reranker = make(server, waits, price=price)
    units = 3  # 250 documents, 100 per search unit
    assert reranker.request_cost_usd(250) == pytest.approx(units * price.per_1000_searches / 1000)
    with pytest.raises(RerankError, match=r"no price for rerank-v3\.5"):
        make(server, waits).request_cost_usd(10)  # never a silent 0 that would bypass a budget cap


def test_budget_guard_stops_before_the_request(server: CohereServer, waits: list[float], tmp_path: Path) -> None:
    price = load_price_table(PRICING).reranker("rerank-v3.5")
    guard = SpendGuard(limit_usd=price.per_1000_searches / 1000 * 1.5)  # one search unit fits, two do not
    reranker = make(server, waits, price=price, max_documents_per_request=100)
    documents = [f"document {i} on the capital" for i in range(150)]
    with Cache(tmp_path / "cache.sqlite") as cache, pytest.raises(BudgetExceeded):
        rerank_scores(reranker, QUERY, documents, cache, None, guard)
    assert server.documents_per_request == [100]  # the second request was never sent


def test_non_json_error_body_is_one_line(server: CohereServer, waits: list[float]) -> None:
    server.script(ScriptedReply(502, b"<html>\n<body>Bad gateway</body>\n</html>"))
    with pytest.raises(RerankError, match=r"HTTP 502: <html> <body>Bad gateway</body> </html> \(gave up after 1"):
        make(server, waits, max_retries=0).score_pairs(QUERY, DOCUMENTS)
    assert [r.status for r in server.rerank_requests] == [502]


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"id": "x"}, "no results list"),
        ({"results": []}, "0 results for 4 documents"),
        ({"results": "nope"}, "no results list"),
        ({"results": [{"index": "x", "relevance_score": 0.5}] * 4}, "malformed result"),
        ({"results": [{"index": i, "relevance_score": 0.5} for i in (0, 1, 2, 9)]}, "index 9 for 4 documents"),
        ({"results": [{"index": i, "relevance_score": 0.5} for i in (0, 1, 2, 2)]}, "index 2 twice"),
        ({"results": [{"index": i, "relevance_score": 0.5} for i in range(5)]}, "5 results for 4 documents"),
        ({"results": [{"index": i, "relevance_score": 0.5 if i else math.nan} for i in range(4)]}, "score nan"),
        (b"not json", "HTTP 200: not json"),
        (b"", r"HTTP 200: \(no message\)"),
    ],
)
def test_impossible_or_unreadable_success_reply_is_retried_then_a_clear_error(
    server: CohereServer, waits: list[float], body: object, message: str
) -> None:
    server.script(*[ScriptedReply(200, body)] * 2)
    with pytest.raises(RerankError, match=message) as info:
        make(server, waits, max_retries=1).score_pairs(QUERY, DOCUMENTS)
    assert "\n" not in str(info.value) and "after 2 attempts" in str(info.value)
    assert len(server.rerank_requests) == 2 and len(waits) == 1


def test_impossible_reply_then_a_good_one_scores_normally(server: CohereServer, waits: list[float]) -> None:
    server.script(ScriptedReply(200, {"results": [{"index": 0, "relevance_score": math.nan}]}))
    counter = RerankCounter()
    np.testing.assert_allclose(make(server, waits).score_pairs(QUERY, DOCUMENTS, counter), EXPECTED)
    assert counter.requests == {"rerank-v3.5": 2} and counter.pairs_scored == {"rerank-v3.5": 4}


@pytest.mark.parametrize("kind", FAULT_KINDS)
def test_every_fault_kind_is_retried(waits: list[float], kind: str) -> None:
    plan = FaultPlan(rate=1.0, kinds=(kind,), max_consecutive=2)
    with CohereServer(api_key=API_KEY, faults=plan) as server:
        scores = make(server, waits).score_pairs(QUERY, DOCUMENTS)
    np.testing.assert_allclose(scores, EXPECTED)
    assert [r.fault for r in server.rerank_requests] == [kind, kind, None]
    if kind == "429":
        assert waits == [0.002, 0.002]  # retry-after-ms honoured (before the 0 s Retry-After)


def test_529_exhausted_names_the_status(waits: list[float]) -> None:
    plan = FaultPlan(rate=1.0, kinds=("529",), max_consecutive=9)
    gave_up = r"HTTP 529: injected fault 529 \(gave up after 3 attempts\)"
    with CohereServer(api_key=API_KEY, faults=plan) as server, pytest.raises(RerankError, match=gave_up):
        make(server, waits, max_retries=2).score_pairs(QUERY, DOCUMENTS)


def test_a_request_whose_reply_was_lost_still_counts_as_spent(
    server: CohereServer, waits: list[float], tmp_path: Path
) -> None:
    """An unreadable 200 may have been billed: its resend is charged too, while a 429 (never billed) is not."""
    price = load_price_table(PRICING).reranker("rerank-v3.5")
    per_request = price.per_1000_searches / 1000
    server.script(ScriptedReply(200, b'{"results": [{"index": 0, "relevance'), ScriptedReply(429, b"{}"))
    guard = SpendGuard()
    with Cache(tmp_path / "cache.sqlite") as cache:
        rerank_scores(make(server, waits, price=price), QUERY, DOCUMENTS, cache, None, guard)
    assert len(server.rerank_requests) == 3
    assert guard.spent_usd == pytest.approx(2 * per_request)  # the first send and the resend after the lost reply
