"""The CI gate: the workflow is valid YAML and its run steps execute locally; run-over-run says when nothing matches."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from typing import ClassVar

import pytest
import yaml

from evalkit.distribution import DISTRIBUTION, installed_version
from evalkit.project.init import init_project
from evalkit.project.install import PLACEHOLDER, source_from_direct_url
from evalkit.report.__main__ import compare_lines
from evalkit.review.compare import compare_runs
from evalkit.run.folder import load_run
from tests.gate_page import assert_the_page_leads_with_the_gate
from tests.wheel_env import WheelEnv, make_env

EXPRESSION = re.compile(r"\$\{\{[^}]*\}\}")


def workflow(project: Path) -> dict:
    return yaml.safe_load((project / ".github" / "workflows" / "evalkit-gate.yml").read_text(encoding="utf-8"))


def run_steps(project: Path, env: dict[str, str], overrides: dict[str, str]) -> list[tuple[str, int, str]]:
    """Every `run:` step in order as bash (GitHub's `${{ }}` expressions empty, `uses:` steps skipped)."""
    flow = workflow(project)
    job = flow["jobs"]["gate"]
    outcomes, failed = [], False
    for step in job["steps"]:
        if "run" not in step or (failed and "always()" not in str(step.get("if", ""))):
            continue
        values = {**flow.get("env", {}), **job.get("env", {}), **step.get("env", {})}
        step_env = env | {k: EXPRESSION.sub("", str(v)) for k, v in values.items()} | overrides
        done = subprocess.run(["bash", "-euo", "pipefail", "-c", step["run"]], cwd=project, env=step_env,
                              capture_output=True, text=True)  # fmt: skip
        outcomes.append((step["name"], done.returncode, done.stdout + done.stderr))
        failed = failed or done.returncode != 0
    return outcomes


class Comments(BaseHTTPRequestHandler):
    """GitHub's issue-comment endpoints as the recipe uses them: list, create, update (and a read-only token)."""

    stored: ClassVar[dict[int, str]] = {}
    writes: ClassVar[list[tuple[str, str, str]]] = []
    read_only: ClassVar[bool] = False

    def _reply(self, status: int, payload: object) -> None:
        raw = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)

    def do_GET(self) -> None:
        found = re.search(r"[?&]page=(\d+)", self.path)
        page = int(found.group(1)) if found else 1
        listed = [{"id": i, "body": b} for i, b in sorted(Comments.stored.items())]
        # Someone else's comments first, so finding evalkit's means reading past the first page.
        others = [{"id": 10_000 + i, "body": "lgtm"} for i in range(150)]
        every = others + listed
        self._reply(200, every[(page - 1) * 100 : page * 100])

    def _write(self) -> dict:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        Comments.writes.append((self.command, self.path, self.headers.get("Authorization", "")))
        return body

    def do_POST(self) -> None:
        body = self._write()
        if Comments.read_only:
            self._reply(403, {"message": "Resource not accessible by integration"})
            return
        new_id = len(Comments.stored) + 1
        Comments.stored[new_id] = body["body"]
        self._reply(201, {"id": new_id})

    def do_PATCH(self) -> None:
        body = self._write()
        comment_id = int(self.path.rsplit("/", 1)[1])
        Comments.stored[comment_id] = body["body"]
        self._reply(200, {"id": comment_id})

    def log_message(self, *args: object) -> None:
        return


@pytest.fixture()
def github() -> Iterator[str]:
    server = HTTPServer(("127.0.0.1", 0), Comments)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    Comments.stored, Comments.writes, Comments.read_only = {}, [], False
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> WheelEnv:
    return make_env(tmp_path_factory.mktemp("ci-wheel"))


def test_the_workflow_is_valid_and_names_the_recipe(tmp_path: Path) -> None:
    init_project(tmp_path / "team")
    flow = workflow(tmp_path / "team")
    assert flow["name"] == "evalkit gate" and "pull_request" in flow[True if True in flow else "on"]
    steps = flow["jobs"]["gate"]["steps"]
    assert any(s.get("uses", "").startswith("actions/cache@") for s in steps), "the evalkit cache is restored"
    uses = [s["uses"] for s in steps if "uses" in s]
    assert uses and all(re.fullmatch(r"actions/[a-z-]+@[0-9a-f]{40}", u) for u in uses), "actions pinned by commit"
    cached = [s["with"]["path"] for s in steps if s.get("uses", "").startswith("actions/cache@")]
    assert "~/.cache/pip" in cached, "pip's cache (evalkit's ~510 MB of model wheels) is kept between runs"
    assert flow["concurrency"]["cancel-in-progress"] is True and "pull_request.number" in flow["concurrency"]["group"]
    assert [s["run"] for s in steps if "run" in s][1:] == [
        "bash ci/evalkit-gate.sh sweep-and-gate", "bash ci/evalkit-gate.sh post"
    ]  # fmt: skip
    assert subprocess.run(["bash", "-n", str(tmp_path / "team" / "ci" / "evalkit-gate.sh")]).returncode == 0


BARE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*(\[[^\]]*\])?\s*([=<>!~]=?\s*\S+)?")
"""A requirement that pip resolves from the package index by name (``evalkit``, ``evalkit==0.1.0``)."""


def test_the_init_workflow_never_installs_a_bare_name(tmp_path: Path) -> None:
    """``evalkit`` on the index is another project: the workflow installs this one pinned, or refuses to run
    until the team says where theirs is (the placeholder), with one line and exit 2."""
    init_project(tmp_path / "team")
    flow = workflow(tmp_path / "team")
    value = flow["env"]["EVALKIT_INSTALL"]
    assert not BARE_NAME.fullmatch(value.strip()), value
    assert value == PLACEHOLDER or re.fullmatch(r"git\+\S+@[0-9a-f]{40}|https://\S+", value), value
    (step,) = [s for s in flow["jobs"]["gate"]["steps"] if s.get("name") == "Install evalkit"]
    refused = subprocess.run(["bash", "-euo", "pipefail", "-c", step["run"]], env={"EVALKIT_INSTALL": PLACEHOLDER,
                             "PATH": os.environ["PATH"]}, capture_output=True, text=True)  # fmt: skip
    assert refused.returncode == 2 and refused.stderr.strip().startswith("evalkit gate: set EVALKIT_INSTALL")


def test_the_pinned_source_follows_how_this_copy_was_installed() -> None:
    commit = "0123456789abcdef0123456789abcdef01234567"
    vcs = {"url": "https://github.com/team/evalkit", "vcs_info": {"vcs": "git", "commit_id": commit}}
    assert source_from_direct_url(vcs) == f"git+https://github.com/team/evalkit@{commit}"
    wheel = {"url": "https://files.example/evalkit_sweep-0.1.0-py3-none-any.whl", "archive_info": {"hash": "sha256=ab"}}
    assert source_from_direct_url(wheel) == wheel["url"]
    local = {"url": "file:///home/me/evalkit", "dir_info": {"editable": True}}
    assert source_from_direct_url(local, ("https://github.com/team/evalkit", commit)).endswith(f"@{commit}")
    assert source_from_direct_url(local) == PLACEHOLDER, "a folder nobody else can reach is no source for CI"
    assert source_from_direct_url({"url": "file:///home/me/dist/x.whl", "archive_info": {}}) == PLACEHOLDER
    assert DISTRIBUTION == "evalkit-sweep" and installed_version() != "unknown"


def test_the_workflow_steps_run_locally(tmp_path: Path, installed: WheelEnv, github: str) -> None:
    project = tmp_path / "team"
    init_project(project)
    (project / "conf" / "labelset" / "team.yaml").write_text("path: labelsets/team\nlimit: 60\n", encoding="utf-8")
    env = installed.env()
    install = {"EVALKIT_INSTALL": f"--no-deps --no-index -q {installed.wheel}"}
    # Without a token the post step prints gate.md and skips.
    outcomes = run_steps(project, env, install)
    assert [(name, code) for name, code, _ in outcomes] == [
        ("Install evalkit", 0), ("Sweep the candidate and gate it", 0), ("Post gate.md to the pull request", 0)
    ], outcomes  # fmt: skip
    assert "not posting" in outcomes[2][2] and "## evalkit gate" in outcomes[2][2]
    gate = json.loads((project / "reports" / "ci" / "gate.json").read_text(encoding="utf-8"))
    assert gate["verdict"] == "pass" and gate["n_questions"] == 60
    assert (project / ".evalkit-cache" / "evalkit.sqlite").is_file(), "the cache lives where CI saves it"
    # A worse candidate fails the gate (exit 1), and the post step still runs and posts.
    (project / "ci" / "candidate.txt").write_text("recursive-s256-o0|bm25|none|k3|t0\n", encoding="utf-8")
    token = {"GITHUB_TOKEN": "t0ken", "GITHUB_REPOSITORY": "team/rag", "GITHUB_API_URL": github, "PR_NUMBER": "7"}
    outcomes = run_steps(project, env, install | token)
    codes = {name: code for name, code, _ in outcomes}
    assert codes["Sweep the candidate and gate it"] == 1, outcomes
    assert codes["Post gate.md to the pull request"] == 0, outcomes
    ((method, path, auth),) = Comments.writes
    assert (method, path, auth) == ("POST", "/repos/team/rag/issues/7/comments", "Bearer t0ken")
    (body,) = Comments.stored.values()
    assert "## evalkit gate: ❌ FAIL" in body and "recursive-s256-o0|bm25|none|k3|t0" in body
    # The next push: the same comment is updated in place (found past a page of other comments), not a new one.
    (project / "ci" / "candidate.txt").unlink()
    outcomes = run_steps(project, env, install | token)
    assert {name: code for name, code, _ in outcomes}["Sweep the candidate and gate it"] == 0, outcomes
    assert [w[0] for w in Comments.writes] == ["POST", "PATCH"] and len(Comments.stored) == 1
    assert "## evalkit gate: ✅ PASS" in next(iter(Comments.stored.values()))
    assert "updated the gate comment on pull request #7" in outcomes[-1][2]
    # A pull request from a fork: the token may not write; the post step says so and does not fail the job.
    Comments.stored, Comments.writes, Comments.read_only = {}, [], True
    post = run_steps(project, env, install | token)[-1]
    assert post[1] == 0 and "a pull request from a fork gets a read-only token" in post[2], post
    assert "## evalkit gate" in post[2], "gate.md is printed to the log instead"


def _git(project: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=project, check=True, capture_output=True)


def _set_production(project: Path, chunk_size: int, overlap: int, top_k: int, message: str) -> None:
    production = project / "conf" / "baseline" / "production.yaml"
    text = production.read_text(encoding="utf-8")
    for key, value in (("chunk_size", chunk_size), ("chunk_overlap", overlap), ("top_k", top_k)):
        text = re.sub(rf"(?m)^{key}: \d+", f"{key}: {value}", text)
    production.write_text(text, encoding="utf-8")
    _git(project, "commit", "-qam", message)


def test_a_pull_request_that_changes_production_gates_the_new_production_against_the_base(
    tmp_path: Path, installed: WheelEnv, github: str, browser
) -> None:
    """The baseline is the base branch's production, read with git from origin: a pull request that makes
    production worse fails with the failing checks in the comment, one that makes it better passes. The sweep
    prints progress lines into the job's log."""
    project = tmp_path / "team"
    init_project(project)
    (project / "conf" / "labelset" / "team.yaml").write_text("path: labelsets/team\nlimit: 60\n", encoding="utf-8")
    (project / ".gitignore").write_text("reports/\n.evalkit-cache/\n", encoding="utf-8")
    _git(tmp_path, "init", "-q", "--bare", "origin.git")
    _git(project, "init", "-q", "-b", "main")
    _git(project, "config", "user.email", "ci@example.com")
    _git(project, "config", "user.name", "ci")
    _git(project, "add", "-A")
    _git(project, "commit", "-qm", "evalkit init")
    _git(project, "remote", "add", "origin", str(tmp_path / "origin.git"))
    _git(project, "push", "-q", "origin", "main")
    env = installed.env()
    pull_request = {
        "EVALKIT_INSTALL": f"--no-deps --no-index -q {installed.wheel}",
        "EVALKIT_BASE_REF": "main",  # what ${{ github.base_ref }} gives on a pull request
        "EVALKIT_PROGRESS_EVERY_S": "1",
        "GITHUB_TOKEN": "t0ken", "GITHUB_REPOSITORY": "team/rag", "GITHUB_API_URL": github, "PR_NUMBER": "8",
    }  # fmt: skip

    # Worse: 512/64/k5 -> 256/0/k3 (recall about -13 points). A shallow checkout has no origin/main: fetched.
    _git(project, "checkout", "-q", "-b", "worse")
    _set_production(project, 256, 0, 3, "smaller chunks, fewer of them")
    _git(project, "update-ref", "-d", "refs/remotes/origin/main")
    outcomes = run_steps(project, env, pull_request)
    codes = {name: code for name, code, _ in outcomes}
    assert codes["Sweep the candidate and gate it"] == 1, outcomes
    log = outcomes[1][2]
    assert re.search(r"(?m)^chunkings: \d+/\d+ \[", log), "progress lines reach the job's log"
    assert "route: this pull request changes production" in log, log
    body = Comments.stored[max(Comments.stored)]
    assert "## evalkit gate: ❌ FAIL" in body, body
    assert "Candidate `recursive-s256-o0|bm25|none|k3|t0`" in body and "production `recursive-s512-o64|" in body
    assert re.search(r"\| recall@k \|.*\*\*FAIL\*\* \|", body), body
    assert "Route: this pull request changes production" in body
    # The report the job uploads opens with the same FAIL and gate.md's numbers, not "Keep production".
    shown = assert_the_page_leads_with_the_gate(browser, project / "reports" / "ci")
    assert shown["verdict"] == "fail" and shown["candidate"]["config_id"] == "recursive-s256-o0|bm25|none|k3|t0"

    # Better: main's production is 256/64/k3; the pull request moves it to 256/64/k5 (recall about +19 points).
    _git(project, "checkout", "-q", "main")
    _set_production(project, 256, 64, 3, "production as it runs today")
    _git(project, "push", "-q", "origin", "main")
    _git(project, "checkout", "-q", "-b", "better")
    _set_production(project, 256, 64, 5, "five chunks instead of three")
    outcomes = run_steps(project, env, pull_request)
    assert {name: code for name, code, _ in outcomes}["Sweep the candidate and gate it"] == 0, outcomes
    body = Comments.stored[max(Comments.stored)]
    assert "## evalkit gate: ✅ PASS" in body and "Candidate `recursive-s256-o64|bm25|none|k5|t0`" in body, body
    assert "production `recursive-s256-o64|bm25|none|k3|t0`" in body, body

    # The same branch with production unchanged from its base: the recommendation is gated, and the route says so.
    _git(project, "push", "-q", "origin", "better:main")
    outcomes = run_steps(project, env, pull_request)
    assert {name: code for name, code, _ in outcomes}["Sweep the candidate and gate it"] == 0, outcomes
    assert "route: production is unchanged from the base branch main" in outcomes[1][2]


def _sweep(reports: Path, labelset: Path, run_id: str, *overrides: str) -> Path:
    from evalkit.api import run_sweep

    args = [
        f"labelset.path={labelset}",
        f"reports_dir={reports}",
        "position=off",
        "answer_check=off",
        "progress=false",
        "report=false",
    ]
    return run_sweep(*args, f"run_id={run_id}", *overrides, quiet=True).path


def test_run_over_run_pairs_matching_questions_and_says_when_nothing_matches(tmp_path: Path, small_demo: Path) -> None:
    reports = tmp_path / "reports"
    a = load_run(_sweep(reports, small_demo, "a", "sweep=quick", "top_k=[3,5]"))
    b = load_run(_sweep(reports, small_demo, "b", "sweep=quick", "top_k=[3,5]", "chunk_overlap=0"))
    c = load_run(_sweep(reports, small_demo, "c", "sweep=quick", "top_k=[3,5]", "labelset.limit=10"))
    baseline = "recursive-s512-o64|bm25|none|k5|t0"
    same = compare_runs(c, a, [baseline])
    assert same.note is None and same.shared_questions == 10 and same.n_matching == len(c.summary)
    row = same.deltas[(same.deltas["config_id"] == baseline) & (same.deltas["metric"] == "recall")].iloc[0]
    assert row.n_paired == 9 and row.delta_low <= row.delta_paired <= row.delta_high  # 9 of 10 answerable
    assert row.delta_paired == 0.0, "the same questions, the same config: no change"
    disjoint = compare_runs(b, a, [baseline])
    assert disjoint.n_matching == 0 and disjoint.flips == ()
    assert disjoint.note is not None and disjoint.note.startswith("The runs share no config")
    assert "Questions that flipped" not in disjoint.summary_line()
    renamed = c.results.assign(question_id=lambda f: "other-" + f["question_id"])
    other = type(c)(**{**c.__dict__, "results": renamed})
    no_questions = compare_runs(other, a, [baseline])
    assert no_questions.note is not None and no_questions.note.startswith("The runs share no question")
    assert os.fspath(a.root) != os.fspath(b.root)


def test_report_compare_on_external_runs_counts_the_flips_the_report_shows(
    tmp_path: Path, small_demo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Reindex against reindex: two ``retriever=external`` runs (no manifest grid point is production there).
    The terminal's flipped-question count is the page's, and it is not zero when production changed."""
    from evalkit.report.__main__ import main as report_main
    from tests.external import gold_retriever

    monkeypatch.setenv("EVALKIT_GOLD_LABELSET", str(small_demo))
    gold_retriever._labelset.cache_clear()
    external = ["retriever=external", "top_k=[1,5]", "pool_size=5"]
    target = "retriever.target=tests.external.gold_retriever"
    reports = tmp_path / "reports"
    before = _sweep(reports, small_demo, "before", *external, f"{target}:offsets")
    after = _sweep(reports, small_demo, "after", *external, f"{target}:gold_for_some")
    assert report_main([str(after), "--compare", str(before), "--resamples", "200"]) == 0
    lines = compare_lines(str(after), str(before))  # the terminal reads compare/<before>.json, as the page does
    counted = re.search(r"(\d+) flipped questions", lines[0])
    assert counted is not None and int(counted.group(1)) > 0, lines
    page = (after / "index.html").read_text(encoding="utf-8")
    shown = re.search(r"Questions that flipped \(hit@k changed\): (\d+)", page)
    assert shown is not None and shown.group(1) == counted.group(1), (lines[0], shown)


def test_a_base_production_that_cannot_be_read_is_one_line_and_never_a_pass(tmp_path: Path, small_demo: Path) -> None:
    from evalkit.gate import main as gate_main
    from evalkit.project.ci_route import main as route_main

    run = _sweep(tmp_path / "reports", small_demo, "r", "sweep=quick", "top_k=[3,5]")
    cases = {
        "not-yaml.yaml": "chunk_size: [1,\n",
        "missing.yaml": "chunk_size: 512\nchunk_overlap: 64\n",
        "typo.yaml": "chunk_size: 512\nchunk_overlap: 64\ntop_k: 5\nthreshhold: 0\n",
        "off-grid.yaml": "chunk_size: 333\nchunk_overlap: 64\ntop_k: 5\n",
    }
    for name, text in cases.items():
        path = tmp_path / name
        path.write_text(text, encoding="utf-8")
        args = ["--run", str(run), "--baseline-point", str(path), "--candidate-config", "x", "--out", str(tmp_path)]
        done = subprocess.run(
            [sys.executable, "-m", "evalkit.gate", *args], capture_output=True, text=True, cwd=tmp_path
        )
        assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1, (name, done.stderr)
        assert done.stderr.startswith("evalkit.gate: error: ") and name in done.stderr, done.stderr
        routed = route_main(["--run", str(run), "--base-production", str(path)]) if name != "off-grid.yaml" else 2
        assert routed == 2, name
    assert gate_main(["--baseline-point", str(path), "--candidate-config", "x"]) == 2, "needs --run"
