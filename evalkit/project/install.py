"""Where this evalkit was installed from, pinned, for a team's CI to install the same code.

The package index holds an unrelated project under the bare name ``evalkit``
(:mod:`evalkit.distribution`), so a CI recipe never installs a bare name from the index:
:func:`pinned_source` reads how this copy was installed (PEP 610's ``direct_url.json``) and gives
the same source pinned to its commit or hash, or a placeholder the workflow refuses to install.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Mapping
from importlib import metadata
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

from evalkit.distribution import DISTRIBUTION

PLACEHOLDER = "git+https://github.com/YOUR-ORG/YOUR-EVALKIT-REPO@COMMIT"
"""What init writes when it cannot tell a reachable pinned source; the workflow refuses to install it."""


def source_from_direct_url(record: Mapping[str, Any], checkout: tuple[str, str] | None = None) -> str:
    """A pinned ``pip install`` argument from a ``direct_url.json`` record (PEP 610), else :data:`PLACEHOLDER`.

    ``checkout``: (remote URL, commit) of the local folder the record names, when it is a git checkout.
    """
    url = str(record.get("url") or "")
    vcs = record.get("vcs_info")
    if isinstance(vcs, Mapping) and vcs.get("vcs") == "git" and vcs.get("commit_id"):
        return f"git+{url}@{vcs['commit_id']}"
    archive = record.get("archive_info")
    if isinstance(archive, Mapping) and url.startswith("https://") and (archive.get("hashes") or archive.get("hash")):
        return url  # a published wheel or sdist, fixed by its hash
    if isinstance(record.get("dir_info"), Mapping) and checkout is not None:
        remote, commit = checkout
        if remote and commit:
            return f"git+{remote}@{commit}"
    return PLACEHOLDER


def _git(folder: Path, *args: str) -> str:
    try:
        done = subprocess.run(["git", "-C", str(folder), *args], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return ""
    return done.stdout.strip() if done.returncode == 0 else ""


def pinned_source() -> str:
    """How CI should install this evalkit: its own install source pinned to a commit or hash."""
    try:
        text = metadata.distribution(DISTRIBUTION).read_text("direct_url.json")
    except metadata.PackageNotFoundError:
        return PLACEHOLDER
    if not text:
        return PLACEHOLDER  # installed from an index: which project it was cannot be told from here
    record = json.loads(text)
    checkout = None
    if isinstance(record.get("dir_info"), Mapping):
        folder = Path(unquote(urlparse(str(record.get("url", ""))).path))
        remote = _git(folder, "remote", "get-url", "origin")
        if remote.startswith(("https://", "ssh://", "git@")):
            checkout = (remote if not remote.startswith("git@") else "ssh://" + remote.replace(":", "/", 1),
                        _git(folder, "rev-parse", "HEAD"))  # fmt: skip
    return source_from_direct_url(record, checkout)
