"""The gate's one pull-request comment: created on the first run, updated in place on every later one.

``python -m evalkit.project.pr_comment reports/ci/gate.md`` (the CI recipe's ``post`` step) finds the
comment evalkit wrote before by a hidden marker and edits it, so a pull request pushed ten times has
one gate comment showing the latest verdict, not ten. A pull request from a fork runs with a read-only
token: GitHub refuses the write (403), and that is one log line and exit 0 (the gate's own verdict is
the job's exit code, not the comment's). Any other failure is one line, exit 2.

Environment: ``GITHUB_TOKEN``, ``GITHUB_REPOSITORY`` (owner/name), ``PR_NUMBER``, ``GITHUB_API_URL``
(GitHub Enterprise; default https://api.github.com). Standard library only: it runs wherever evalkit does.
Every request goes through :mod:`evalkit.http_call`: 30 s from connect to last byte, replies capped.
"""

from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evalkit.http_call import HttpError, loads_json, request

MARKER = "<!-- evalkit-gate -->"
"""Hidden in the comment's body: how the next run finds the comment to update."""
PER_PAGE = 100
TIMEOUT_S = 30.0
"""One GitHub request, from connect to the reply's last byte."""
MAX_REPLY_BYTES = 32 * 1024 * 1024
"""A page of 100 comments is well under this; a larger reply is refused, never held whole."""
MAX_PAGES = 30
"""Pull requests with more than 3,000 comments get a new gate comment rather than an endless scan."""


class CommentError(RuntimeError):
    """The comment could not be written for a reason other than a read-only token."""


class _ReadOnly(Exception):
    """GitHub refused the write (403): the read-only token of a fork's pull request."""


@dataclass(frozen=True)
class Target:
    api: str
    repository: str
    pr_number: str
    token: str

    @property
    def comments(self) -> str:
        return f"{self.api}/repos/{self.repository}/issues/{self.pr_number}/comments"


def with_marker(markdown: str) -> str:
    return f"{MARKER}\n{markdown}" if MARKER not in markdown else markdown


def _request(target: Target, method: str, url: str, body: dict[str, Any] | None = None) -> Any:
    data = None if body is None else json.dumps(body).encode("utf-8")
    headers = {
        "Authorization": f"Bearer {target.token}",
        "Accept": "application/vnd.github+json",
        "X-GitHub-Api-Version": "2022-11-28",
    }
    if data is not None:
        headers["Content-Type"] = "application/json"
    reply = request(method, url, data, timeout_s=TIMEOUT_S, max_bytes=MAX_REPLY_BYTES, headers=headers)
    if reply.status == 403:
        raise _ReadOnly
    if not 200 <= reply.status < 300:
        detail = " ".join(reply.body[:300].decode("utf-8", "replace").split())
        raise CommentError(f"{reply.status} from {url}: {detail}".rstrip())
    return loads_json(reply.body) if reply.body.strip() else None


def find_comment(target: Target) -> int | None:
    """The id of the comment carrying :data:`MARKER`, or None (pages through the pull request's comments)."""
    for page in range(1, MAX_PAGES + 1):
        listed = _request(target, "GET", f"{target.comments}?per_page={PER_PAGE}&page={page}")
        if not isinstance(listed, list):
            raise CommentError(f"GET {target.comments}: expected a list of comments, got {type(listed).__name__}")
        for comment in listed:
            if isinstance(comment, dict) and MARKER in str(comment.get("body", "")):
                return int(comment["id"])
        if len(listed) < PER_PAGE:
            return None
    return None


def post_or_update(target: Target, markdown: str) -> str:
    """``created``, ``updated`` or ``read-only`` (the token may not write: a fork's pull request)."""
    body = {"body": with_marker(markdown)}
    try:
        existing = find_comment(target)
        if existing is None:
            _request(target, "POST", target.comments, body)
            return "created"
        _request(target, "PATCH", f"{target.api}/repos/{target.repository}/issues/comments/{existing}", body)
        return "updated"
    except _ReadOnly:  # "Resource not accessible by integration": the read-only token of a fork's PR
        return "read-only"
    except HttpError as exc:  # no reply in time, over the cap, a lost connection, not JSON, not http(s)
        raise CommentError(f"{target.api}: {exc.reason}") from None


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python -m evalkit.project.pr_comment GATE_MD", file=sys.stderr)
        return 2
    path = Path(args[0])
    try:
        markdown = path.read_text(encoding="utf-8")
    except OSError as exc:
        print(f"evalkit-gate: {path}: {exc.strerror or exc}", file=sys.stderr)
        return 2
    env = os.environ
    target = Target(
        api=env.get("GITHUB_API_URL") or "https://api.github.com",
        repository=env.get("GITHUB_REPOSITORY", ""),
        pr_number=env.get("PR_NUMBER", ""),
        token=env.get("GITHUB_TOKEN", ""),
    )
    if not (target.token and target.repository and target.pr_number):
        missing = "no GITHUB_TOKEN/PR_NUMBER/GITHUB_REPOSITORY"
        print(f"evalkit-gate: {missing}: not posting; gate.md follows", file=sys.stderr)
        print(markdown)
        return 0
    try:
        outcome = post_or_update(target, markdown)
    except CommentError as exc:
        print(f"evalkit-gate: could not post gate.md: {exc}", file=sys.stderr)
        return 2
    if outcome == "read-only":
        print(
            f"evalkit-gate: the token may not comment on pull request #{target.pr_number} (a pull request from "
            "a fork gets a read-only token): not posting; gate.md is in the job's artefact and follows",
            file=sys.stderr,
        )
        print(markdown)
        return 0
    print(f"evalkit-gate: {outcome} the gate comment on pull request #{target.pr_number}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
