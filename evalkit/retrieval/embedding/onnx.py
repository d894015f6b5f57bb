"""``embedder=onnx``: a local ONNX embedding model in a folder the user points to (offline, no torch).

Two layouts, told apart by what the folder holds:

- ``model.onnx`` and ``tokenizer.json`` (a Hugging Face export, e.g. optimum's): texts are
  tokenized with ``tokenizers`` (truncated to ``max_length``, padded per batch), the graph gets the
  inputs it declares among ``input_ids``, ``attention_mask`` and ``token_type_ids``, and a token-level
  output is pooled (``mean`` over the attention mask, or the first token's vector for ``cls``);
  a sentence-level output (``sentence_embedding``, or any 2-D output) is taken as it is.
- ``model.onnx`` alone, whose graph takes strings (its tokenizer inside, as onnxruntime-extensions
  builds them): texts go in as they are.

Both are checked when the session opens, before a text is embedded: a ``tokenizer.json`` that does not
load as a tokenizer, a graph whose inputs are not these (a reranker's float features, say), whose
output is not a float matrix (batch x dim) or token-level tensor, or whose vectors are under
:data:`MIN_DIM` wide or change width between batches is one line naming the file and what was expected.

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
MIN_DIM = 2
"""Narrower output is a score, not an embedding (a reranker's graph ends in one number per pair)."""
FLOAT_TYPES = ("tensor(float)", "tensor(float16)", "tensor(double)")
INT_TYPES = ("tensor(int64)", "tensor(int32)")


class OnnxEmbedder(Embedder):
    """An ONNX model folder; the session is opened when first used (constructing it reads only digests)."""

    @classmethod
    def from_settings(cls, settings: EmbedderSettings, pricing_dir: Path | None = None) -> OnnxEmbedder:
        return cls(settings)

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
            width = int(self._forward(["dimension probe"]).shape[1])
            if width < MIN_DIM:
                raise EmbeddingError(
                    f"embedder=onnx: {self._model_path} gives {width}-wide vectors; an embedder gives at least "
                    f"{MIN_DIM} (is it a reranker or a classifier?)"
                )
            self._dim = width
        return self._dim

    def embed_batch(self, texts: Sequence[str], kind: EmbedKind) -> np.ndarray:
        prefix = self.settings.query_prefix if kind == "query" else self.settings.passage_prefix
        vectors = self._forward([prefix + text for text in texts])
        if vectors.shape[1] != self.dim:
            raise EmbeddingError(
                f"embedder=onnx: {self._model_path} gave {vectors.shape[1]}-wide vectors for a batch, "
                f"{self.dim}-wide for the first text: expected one width"
            )
        return vectors

    def _forward(self, texts: list[str]) -> np.ndarray:
        session = self._open()
        if self._tokenizer is None:
            name = session.get_inputs()[0].name
            return _sentence_vectors(self._run(session, {name: np.asarray(texts, dtype=object)}), session, None)
        encodings = self._tokenizer.encode_batch(texts)
        ids = np.asarray([e.ids for e in encodings], dtype=np.int64)
        mask = np.asarray([e.attention_mask for e in encodings], dtype=np.int64)
        given = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
        declared = [i.name for i in session.get_inputs()]
        missing = [name for name in declared if name not in given]
        if missing:
            offered = ", ".join(TOKEN_INPUTS)
            raise EmbeddingError(f"embedder=onnx: {self._model_path} needs inputs {missing}; evalkit gives {offered}")
        outputs = self._run(session, {name: given[name] for name in declared})
        return _sentence_vectors(outputs, session, mask, self.settings.pooling)

    def _run(self, session: Any, feed: dict[str, np.ndarray]) -> list[Any]:
        try:
            return list(session.run(None, feed))
        except Exception as exc:  # onnxruntime's own classes: a graph that fails on real input
            raise EmbeddingError(f"embedder=onnx: {self._model_path} fails on a batch: {_short(exc)}") from None

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
            self._tokenizer = _load_tokenizer(self._tokenizer_path, self.settings.max_length)
        try:
            session = ort.InferenceSession(str(self._model_path), options, providers=["CPUExecutionProvider"])
        except Exception as exc:  # onnxruntime raises its own classes for a file it cannot read
            raise EmbeddingError(f"embedder=onnx: {self._model_path} does not load: {_short(exc)}") from None
        _check_graph(session, self._model_path, self._tokenizer is not None)
        self._session = session
        return self._session


def _load_tokenizer(path: Path, max_length: int) -> Any:
    """The folder's tokenizer.json as a ``tokenizers`` tokenizer, or one line saying it is not one."""
    from tokenizers import Tokenizer

    try:
        tokenizer = Tokenizer.from_file(str(path))
    except Exception as exc:  # tokenizers raises a bare Exception for JSON it cannot read as a tokenizer
        raise EmbeddingError(
            f"embedder=onnx: {path} is not a Hugging Face tokenizer.json (expected the tokenizer a "
            f"transformers or optimum export writes): {_short(exc)}"
        ) from None
    tokenizer.enable_truncation(max_length)
    tokenizer.enable_padding()
    return tokenizer


def _check_graph(session: Any, model: Path, tokenized: bool) -> None:
    """One line unless the graph takes what evalkit gives and gives back vectors (see the module's docstring)."""
    inputs = [(i.name, i.type) for i in session.get_inputs()]
    shown = ", ".join(f"{name} ({kind})" for name, kind in inputs) or "nothing"
    if tokenized:
        fits = any(n == "input_ids" for n, _ in inputs) and all(n in TOKEN_INPUTS and k in INT_TYPES for n, k in inputs)
        wanted = f"integer inputs among {', '.join(TOKEN_INPUTS)} (input_ids among them), as {TOKENIZER_FILE} gives"
    else:
        fits = len(inputs) == 1 and inputs[0][1] == "tensor(string)"
        wanted = f"one string input (a graph that tokenizes itself), or put its {TOKENIZER_FILE} beside it"
    if not fits:
        raise EmbeddingError(f"embedder=onnx: {model} takes {shown}; an embedder takes {wanted}")
    outputs = session.get_outputs()
    names = [o.name for o in outputs]
    first = outputs[names.index("sentence_embedding")] if "sentence_embedding" in names else outputs[0]
    ranks = (2, 3) if tokenized else (2,)
    width = first.shape[-1] if first.shape else None
    if first.type not in FLOAT_TYPES or len(first.shape) not in ranks or (isinstance(width, int) and width < MIN_DIM):
        expected = "(batch, dim) or token-level (batch, tokens, dim)" if tokenized else "(batch, dim)"
        raise EmbeddingError(
            f"embedder=onnx: {model} gives {first.name} {first.type} of shape {list(first.shape)}; an embedder "
            f"gives float vectors {expected}, dim at least {MIN_DIM}"
        )


def _short(exc: BaseException) -> str:
    return " ".join(str(exc).split())[:300] or type(exc).__name__


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
