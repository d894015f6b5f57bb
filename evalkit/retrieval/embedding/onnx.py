"""``embedder=onnx``: a local ONNX embedding model in a folder the user points to (offline, no torch).

Two layouts, told apart by what the folder holds:

- ``model.onnx`` and ``tokenizer.json`` (a Hugging Face export, e.g. optimum's): texts are
  tokenized with ``tokenizers`` (truncated to ``max_length``, padded per batch), the graph gets the
  inputs it declares among ``input_ids``, ``attention_mask`` and ``token_type_ids``, and a token-level
  output is pooled (``mean`` over the attention mask, or the first token's vector for ``cls``);
  a sentence-level output (``sentence_embedding``, or any 2-D output) is taken as it is.
- ``model.onnx`` alone, whose graph takes strings (its tokenizer inside, as onnxruntime-extensions
  builds them): texts go in as they are.

The identity (``model_id@version``) carries a digest of the model and tokenizer files and of every
setting that changes a vector (pooling, max_length, prefixes), so a new export never reuses old vectors.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from evalkit.retrieval.embedding.base import Embedder, EmbeddingError, EmbedKind
from evalkit.retrieval.embedding.settings import EmbedderSettings

MODEL_FILE = "model.onnx"
TOKENIZER_FILE = "tokenizer.json"
TOKEN_INPUTS = ("input_ids", "attention_mask", "token_type_ids")
DEFAULT_BATCH = 32


class OnnxEmbedder(Embedder):
    """An ONNX model folder; the session is opened when first used (constructing it reads only digests)."""

    def __init__(self, settings: EmbedderSettings) -> None:
        folder = Path(str(settings.path)).expanduser()
        model = folder / MODEL_FILE
        if not model.is_file():
            raise EmbeddingError(f"embedder.path: {settings.path!r} has no {MODEL_FILE} (an ONNX model folder)")
        tokenizer = folder / TOKENIZER_FILE
        self._model_path = model
        self._tokenizer_path = tokenizer if tokenizer.is_file() else None
        self.settings = settings
        self.model_id = settings.model_id or folder.resolve().name
        self.version = _digest(model, self._tokenizer_path, settings)
        self.asymmetric = bool(settings.query_prefix or settings.passage_prefix)
        self.batch_size = settings.batch_size or DEFAULT_BATCH
        self._session: Any = None
        self._tokenizer: Any = None
        self._dim = 0

    @property  # type: ignore[override]
    def dim(self) -> int:
        """The vector size, read from one probe text the first time it is asked (the graph may not declare it)."""
        if not self._dim:
            self._dim = int(self._forward(["dimension probe"]).shape[1])
        return self._dim

    def embed_batch(self, texts: Sequence[str], kind: EmbedKind) -> np.ndarray:
        prefix = self.settings.query_prefix if kind == "query" else self.settings.passage_prefix
        return self._forward([prefix + text for text in texts])

    def _forward(self, texts: list[str]) -> np.ndarray:
        session = self._open()
        if self._tokenizer is None:
            name = session.get_inputs()[0].name
            return _sentence_vectors(session.run(None, {name: np.asarray(texts, dtype=object)}), session, None)
        encodings = self._tokenizer.encode_batch(texts)
        ids = np.asarray([e.ids for e in encodings], dtype=np.int64)
        mask = np.asarray([e.attention_mask for e in encodings], dtype=np.int64)
        given = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
        declared = [i.name for i in session.get_inputs()]
        missing = [name for name in declared if name not in given]
        if missing:
            offered = ", ".join(TOKEN_INPUTS)
            raise EmbeddingError(f"embedder=onnx: {self._model_path} needs inputs {missing}; evalkit gives {offered}")
        outputs = session.run(None, {name: given[name] for name in declared})
        return _sentence_vectors(outputs, session, mask, self.settings.pooling)

    def _open(self) -> Any:
        if self._session is not None:
            return self._session
        try:
            import onnxruntime as ort
        except ImportError:
            raise EmbeddingError("embedder=onnx needs onnxruntime (pip install onnxruntime)") from None
        options = ort.SessionOptions()
        if self._tokenizer_path is None:  # a graph that tokenizes itself uses onnxruntime-extensions' operators
            try:
                from onnxruntime_extensions import get_library_path
            except ImportError:
                raise EmbeddingError(
                    f"embedder=onnx: {self._model_path} takes strings and needs onnxruntime-extensions "
                    f"(pip install onnxruntime-extensions), or put its {TOKENIZER_FILE} beside it"
                ) from None
            options.register_custom_ops_library(get_library_path())
        else:
            from tokenizers import Tokenizer

            self._tokenizer = Tokenizer.from_file(str(self._tokenizer_path))
            self._tokenizer.enable_truncation(self.settings.max_length)
            self._tokenizer.enable_padding()
        try:
            self._session = ort.InferenceSession(str(self._model_path), options, providers=["CPUExecutionProvider"])
        except Exception as exc:  # onnxruntime raises its own classes for a file it cannot read
            raise EmbeddingError(f"embedder=onnx: {self._model_path} does not load: {exc}") from None
        return self._session


def _sentence_vectors(outputs: list[Any], session: Any, mask: np.ndarray | None, pooling: str = "mean") -> np.ndarray:
    """One vector per text: a sentence-level output as it is, or a token-level one pooled over the mask."""
    names = [o.name for o in session.get_outputs()]
    if "sentence_embedding" in names:
        return np.asarray(outputs[names.index("sentence_embedding")], dtype=np.float32)
    first = np.asarray(outputs[0], dtype=np.float32)
    if first.ndim == 2:
        return first
    if first.ndim != 3 or mask is None:
        raise EmbeddingError(f"embedder=onnx: the model's first output has shape {first.shape}; expected 2-D or 3-D")
    if pooling == "cls":
        return first[:, 0, :]
    weights = mask[:, :, None].astype(np.float32)
    return (first * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1.0)


def _digest(model: Path, tokenizer: Path | None, settings: EmbedderSettings) -> str:
    """A short digest of the files and the settings that change a vector."""
    digest = hashlib.sha256()
    for path in (model, tokenizer):
        if path is not None:
            with path.open("rb") as handle:
                for block in iter(lambda: handle.read(1 << 20), b""):
                    digest.update(block)
    for value in (settings.pooling, settings.max_length, settings.query_prefix, settings.passage_prefix):
        digest.update(repr(value).encode())
    return digest.hexdigest()[:16]
