"""The tokenizer inside a GGUF file, rebuilt with HF ``tokenizers``: the canonical token ids of an answer.

xllamacpp exposes no tokenize call, yet scoring a given answer needs the tokens
the model's own tokenizer gives it (a grammar that only spells the text lets the
model pick odd splits, e.g. ``b`` + ``urst`` or a lone UTF-8 byte, which
changes the score and may differ between two prompts for the same answer). A
GGUF stores the tokenizer as metadata: ``tokenizer.ggml.model`` (``gpt2``: a
byte-level BPE), ``tokenizer.ggml.pre`` (which split regex), the tokens (index
= id) and the merges in rank order. Byte-level BPE with the same regex and
merges is the same function wherever it runs; the tests check the token counts
against llama.cpp's own on the demo set's answers, English and Chinese.

Only the pre-tokenizers named in :data:`SPLIT_PATTERNS` are known; any other
GGUF raises :class:`UnknownTokenizer` (the caller then cannot score).
"""

from __future__ import annotations

import mmap
import struct
from collections.abc import Callable, Collection, Sequence
from pathlib import Path
from typing import Any

__all__ = ["SPLIT_PATTERNS", "GgufTokenizer", "UnknownTokenizer", "read_metadata"]

SPLIT_PATTERNS = {
    "qwen2": (
        r"(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}"
        r"| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"
    ),
}
"""llama.cpp's split regex per ``tokenizer.ggml.pre`` (``llama-vocab.cpp``; the same as the HF tokenizer.json)."""


def _byte_of_char() -> dict[str, int]:
    """GPT-2's byte-level alphabet inverted: the printable character each of the 256 bytes is written as."""
    printable = [*range(ord("!"), ord("~") + 1), *range(ord("\u00a1"), ord("\u00ac") + 1)]
    printable += range(ord("\u00ae"), ord("\u00ff") + 1)
    chars = {byte: chr(byte) for byte in printable}
    extra = 0
    for byte in range(256):
        if byte not in chars:
            chars[byte] = chr(256 + extra)
            extra += 1
    return {char: byte for byte, char in chars.items()}


_BYTE_OF_CHAR = _byte_of_char()
_SCALARS = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q", 11: "<q", 12: "<d"}
_STRING, _ARRAY = 8, 9


class UnknownTokenizer(ValueError):
    """A GGUF whose tokenizer this module cannot rebuild exactly."""


def _reader(buffer: Any) -> tuple[Callable[[str], Any], Callable[[int], Any]]:
    """(take a struct format, read a typed GGUF value) over a buffer, sharing one position."""
    position = [0]

    def take(fmt: str) -> Any:
        (value,) = struct.unpack_from(fmt, buffer, position[0])
        position[0] += struct.calcsize(fmt)
        return value

    def value(kind: int) -> Any:
        if kind == _STRING:
            size = take("<Q")
            start = position[0]
            position[0] += size
            return bytes(buffer[start : start + size]).decode("utf-8")
        if kind == _ARRAY:
            item_kind, count = take("<I"), take("<Q")
            return [value(item_kind) for _ in range(count)]
        return take(_SCALARS[kind])

    return take, value


def read_metadata(path: Path, keys: Collection[str]) -> dict[str, Any]:
    """The named metadata values of a GGUF file (the tensors are never read)."""
    with path.open("rb") as handle, mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as buffer:
        if buffer[:4] != b"GGUF":
            raise UnknownTokenizer(f"{path} is not a GGUF file")
        take, value = _reader(buffer)
        take("<4s")
        take("<I")  # format version
        take("<Q")  # tensor count
        found: dict[str, Any] = {}
        for _ in range(take("<Q")):
            key = value(_STRING)
            found_value = value(take("<I"))
            if key in keys:
                found[key] = found_value
        return found


class GgufTokenizer:
    """Byte-level BPE as the GGUF defines it; ``encode`` gives the ids llama.cpp would (special tokens aside)."""

    KEYS = ("tokenizer.ggml.model", "tokenizer.ggml.pre", "tokenizer.ggml.tokens", "tokenizer.ggml.merges")

    def __init__(self, tokens: Sequence[str], merges: Sequence[str], pre: str) -> None:
        from tokenizers import Regex, Tokenizer, models, pre_tokenizers

        if pre not in SPLIT_PATTERNS:
            raise UnknownTokenizer(f"GGUF pre-tokenizer {pre!r} is not one of {sorted(SPLIT_PATTERNS)}")
        vocab = {token: index for index, token in enumerate(tokens)}
        pairs = [tuple(merge.split(" ", 1)) for merge in merges]
        tokenizer = Tokenizer(models.BPE(vocab=vocab, merges=pairs, ignore_merges=False))
        tokenizer.pre_tokenizer = pre_tokenizers.Sequence(
            [
                pre_tokenizers.Split(Regex(SPLIT_PATTERNS[pre]), behavior="isolated"),
                pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
            ]
        )
        self._tokenizer = tokenizer
        self._tokens = tuple(tokens)

    @classmethod
    def from_gguf(cls, path: Path) -> GgufTokenizer:
        meta = read_metadata(path, cls.KEYS)
        if meta.get("tokenizer.ggml.model") != "gpt2" or "tokenizer.ggml.merges" not in meta:
            raise UnknownTokenizer(f"{path.name}: tokenizer {meta.get('tokenizer.ggml.model')!r} is not byte-level BPE")
        return cls(meta["tokenizer.ggml.tokens"], meta["tokenizer.ggml.merges"], str(meta.get("tokenizer.ggml.pre")))

    def encode(self, text: str) -> list[int]:
        """Token ids of ``text`` as plain text (no special tokens parsed, no BOS)."""
        return list(self._tokenizer.encode(text, add_special_tokens=False).ids)

    def token_bytes(self, token_id: int) -> bytes:
        """The bytes a (non-special) token stands for; may be part of a UTF-8 character."""
        return bytes(_BYTE_OF_CHAR[char] for char in self._tokens[token_id])
