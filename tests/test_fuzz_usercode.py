"""Fuzz: user code (a retriever target, an installed plugin of every kind) that raises, exits or returns garbage,
on import or on call, and malformed requests to the annotation server.

Every sweep case must end with exit 2, exactly one ``evalkit: error:`` line naming the target or the entry
point, no traceback and no "internal error"; no run folder is left locked, a failure found before any
work leaves no run folder at all, and one found mid-run leaves the run incomplete (never "complete") with
its cached replies kept: the same command with the target fixed asks only for what is missing.

The sweep cases run the real ``python -m evalkit.sweep`` entry point (``main``) in one subprocess, one
case after another (``run_cases``), on a five-question set with BM25 or the target itself: a subprocess
per case would spend its time importing. The acceptance cases also run as their own processes, where
the exit status is the operating system's. Plugins are installed as a distribution's ``.dist-info``
folder on ``sys.path``, which is what ``importlib.metadata`` reads for any installed package.
"""

from __future__ import annotations

import contextlib
import fcntl
import http.client
import io
import json
import socket
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path

import pytest

from evalkit.curate.annotate.api import AnnotationApi
from evalkit.curate.annotate.server import MAX_BODY, AnnotationServer
from evalkit.curate.annotate.store import AnnotationStore
from evalkit.plugins import GROUPS
from evalkit.run.lock import LOCK_FILE
from tests.conftest import TINY_DOCS, evidence, write_set
from tests.test_annotate import annotation_set
from tests.test_plugins import fake_distribution

HIT = '{"doc_id": "en", "start": 0, "end": 13, "score": 1.0}'
GOOD_SEARCH = f"def search(queries, k):\n    return [[{HIT}] for _ in queries]\n"
BASE = (
    "position=off",
    "answer_check=off",
    "report=false",
    "progress=false",
    "top_k=[1]",
    "pool_size=1",
    "threshold=[0.0]",
)


@dataclass(frozen=True)
class Case:
    """One sweep that user code must not be able to end as anything but one line and exit 2."""

    name: str
    overrides: tuple[str, ...]
    names: str
    """What the error line must name (the target, or the entry point's ``kind=name``)."""
    before_work: bool
    """Found before any run folder is made (an import, a factory): nothing may be written."""


# ----- retriever targets ---------------------------------------------------------------------------------------

CALLS: dict[str, str] = {
    "exit 0": "import sys\n    sys.exit(0)",
    "exit 1": "raise SystemExit(1)",
    "exit 2": "raise SystemExit(2)",
    "exit 3 (the budget code)": "raise SystemExit(3)",
    "exit 130 (the interrupt code)": "raise SystemExit(130)",
    "exit with a message": "raise SystemExit('production is down')",
    "exit None": "raise SystemExit(None)",
    "KeyboardInterrupt": "raise KeyboardInterrupt",
    "RuntimeError": "raise RuntimeError('index offline')",
    "ValueError with a page of text": "raise ValueError('x\\n' * 5000)",
    "RecursionError": "def down(n):\n        return down(n + 1)\n    return down(0)",
    "ZeroDivisionError": "return 1 / 0",
    "MemoryError": "raise MemoryError",
    "GeneratorExit": "raise GeneratorExit",
    "a generator that raises half way": f"yield [{HIT}]\n    raise OSError('socket closed')",
    "a generator that exits half way": f"yield [{HIT}]\n    raise SystemExit(0)",
    "None": "return None",
    "a number": "return 42",
    "a string": "return 'hits'",
    "a dict": "return {'results': []}",
    "too few lists": "return [[]]",
    "hits that are not objects": "return [[1, 2]] * len(queries)",
    "a hit past the document's end": 'return [[{"doc_id": "en", "start": 0, "end": 10**9, "score": 1}]] * len(queries)',
    "a hit with NaN score": 'return [[{"doc_id": "en", "start": 0, "end": 3, "score": float("nan")}]] * len(queries)',
}

IMPORTS: dict[str, str] = {
    "SyntaxError": "def search(queries, k)\n    return []\n",
    "IndentationError": "def search(queries, k):\nreturn []\n",
    "RuntimeError": "raise RuntimeError('needs the VPN')\n",
    "ImportError of a dependency": "import evalkit_fuzz_no_such_dependency\n",
    "NameError": "undefined_name_here\n",
    "exit 0": "import sys\nsys.exit(0)\n",
    "exit 3 (the budget code)": "raise SystemExit(3)\n",
    "exit 143 (the SIGTERM code)": "raise SystemExit(143)\n",
    "KeyboardInterrupt": "raise KeyboardInterrupt\n",
    "a module __getattr__ that raises": "def __getattr__(name):\n    raise RuntimeError(f'lazy {name} broke')\n",
    "no such function": "def other(queries, k):\n    return []\n",
    "not callable": "search = 42\n",
}


def _module(name: str) -> str:
    return "t_" + "".join(c if c.isalnum() else "_" for c in name.lower())


def target_cases(work: Path) -> list[Case]:
    cases = []
    for name, body in CALLS.items():
        module = "call_" + _module(name)
        (work / f"{module}.py").write_text(f"def search(queries, k):\n    {body}\n", encoding="utf-8")
        where = f"{module}:search"
        cases.append(Case(f"target call: {name}", ("retriever=external", f"retriever.target={where}"), where, False))
    for name, source in IMPORTS.items():
        module = "import_" + _module(name)
        (work / f"{module}.py").write_text(source, encoding="utf-8")
        where = f"{module}:search"
        cases.append(Case(f"target import: {name}", ("retriever=external", f"retriever.target={where}"), where, True))
    cases.append(
        Case("target import: no such module", ("retriever=external", "retriever.target=t_nowhere:search"), "", True)
    )
    return cases


# ----- plugins of every kind -----------------------------------------------------------------------------------

IMPORT_FAILURES: dict[str, str] = {
    "exit3": "raise SystemExit(3)\n",
    "exit0": "import sys\nsys.exit(0)\n",
    "syntax": "def broken(:\n",
    "runtime": "raise RuntimeError('plugin boom')\n",
    "interrupt": "raise KeyboardInterrupt\n",
    "notcallable": "entry = 42\n",
}
SELECT: dict[str, tuple[str, ...]] = {
    "chunker": ("chunker={name}",),
    "embedder": ("retriever=dense", "embedder={name}"),
    "retriever": ("retriever={name}",),
    "reranker": ("reranker={name}",),
    "generator": ("generator={name}",),
    "executor": ("executor={name}",),
    "tracker": ("+tracker={name}",),
}
"""How a sweep names a plugin of each kind."""

FAILING_CALLS: dict[str, tuple[str, str]] = {
    # name: (kind, the entry point's module; its attribute is ``entry``)
    "retriever_exit0": ("retriever", "def entry(queries, k):\n    raise SystemExit(0)\n"),
    "retriever_exit3": ("retriever", "def entry(queries, k):\n    raise SystemExit(3)\n"),
    "retriever_interrupt": ("retriever", "def entry(queries, k):\n    raise KeyboardInterrupt\n"),
    "chunker_raises": ("chunker", "def entry(doc, spec):\n    raise ValueError('bad split')\n"),
    "chunker_exit0": ("chunker", "def entry(doc, spec):\n    raise SystemExit(0)\n"),
    "chunker_none": ("chunker", "def entry(doc, spec):\n    return None\n"),
    "chunker_strings": ("chunker", "def entry(doc, spec):\n    return ['a chunk']\n"),
    "embedder_factory_exit0": ("embedder", "def entry(settings, pricing_dir):\n    raise SystemExit(0)\n"),
    "embedder_factory_garbage": ("embedder", "def entry(settings, pricing_dir):\n    return 'an embedder'\n"),
    "embedder_batch_raises": (
        "embedder",
        "from evalkit.retrieval.fake import HashingEmbedder\n"
        "class Broken(HashingEmbedder):\n    model_id = 'fuzz-broken'\n"
        "    def embed_batch(self, texts, kind):\n        raise RuntimeError('GPU fell off')\n"
        "def entry(settings, pricing_dir):\n    return Broken()\n",
    ),
    "embedder_batch_exit3": (
        "embedder",
        "from evalkit.retrieval.fake import HashingEmbedder\n"
        "class Broken(HashingEmbedder):\n    model_id = 'fuzz-exit3'\n"
        "    def embed_batch(self, texts, kind):\n        raise SystemExit(3)\n"
        "def entry(settings, pricing_dir):\n    return Broken()\n",
    ),
    "reranker_factory_raises": ("reranker", "def entry(settings, cache, pricing_dir):\n    raise OSError('no GPU')\n"),
    "reranker_scores_exit0": (
        "reranker",
        "from evalkit.retrieval.fake import OverlapReranker\n"
        "class Broken(OverlapReranker):\n    model_id = 'fuzz-rerank-exit'\n"
        "    def score_pairs(self, query, documents, counter=None):\n        raise SystemExit(0)\n"
        "def entry(settings, cache, pricing_dir):\n    return Broken()\n",
    ),
    "reranker_scores_interrupt": (
        "reranker",
        "from evalkit.retrieval.fake import OverlapReranker\n"
        "class Broken(OverlapReranker):\n    model_id = 'fuzz-rerank-int'\n"
        "    def score_pairs(self, query, documents, counter=None):\n        raise KeyboardInterrupt\n"
        "def entry(settings, cache, pricing_dir):\n    return Broken()\n",
    ),
    "executor_factory_exit130": ("executor", "def entry(settings):\n    raise SystemExit(130)\n"),
    "executor_run_raises": (
        "executor",
        "class Ex:\n    name = 'fuzz'\n    def ready(self):\n        pass\n"
        "    def run(self, units, ctx):\n        raise RuntimeError('scheduler gone')\n        yield\n"
        "def entry(settings):\n    return Ex()\n",
    ),
    "executor_ready_exit0": (
        "executor",
        "class Ex:\n    name = 'fuzz'\n    def ready(self):\n        raise SystemExit(0)\n"
        "def entry(settings):\n    return Ex()\n",
    ),
    "tracker_raises": ("tracker", "def entry(run_dir, settings, reports_dir):\n    raise RuntimeError('no server')\n"),
    "tracker_exit0": ("tracker", "def entry(run_dir, settings, reports_dir):\n    raise SystemExit(0)\n"),
    "tracker_exit3": ("tracker", "def entry(run_dir, settings, reports_dir):\n    raise SystemExit(3)\n"),
}
BEFORE_WORK_CALLS = {
    "embedder_factory_exit0", "embedder_factory_garbage", "reranker_factory_raises", "executor_factory_exit130",
    "executor_ready_exit0",
}  # fmt: skip
AFTER_THE_RUN = {"tracker_raises", "tracker_exit0", "tracker_exit3"}
"""A tracker logs the finished run: the run folder is complete, only the logging failed."""


def _select(kind: str, name: str) -> tuple[str, ...]:
    return tuple(part.format(name=name) for part in SELECT[kind])


def plugin_cases(site: Path) -> list[Case]:
    points: dict[str, list[str]] = {kind: [] for kind in GROUPS}
    modules: dict[str, str] = {}
    cases = []
    for kind in GROUPS:
        for mode, source in IMPORT_FAILURES.items():
            name = f"fz_{kind}_{mode}"
            modules[name] = source
            points[kind].append(f"{name} = {name}:entry")
            cases.append(
                Case(f"{kind} plugin import: {mode}", _select(kind, name), f"{kind}={name} (entry point", True)
            )
        name = f"fz_{kind}_missing"
        points[kind].append(f"{name} = fz_no_such_module:entry")
        cases.append(Case(f"{kind} plugin import: missing", _select(kind, name), f"{kind}={name} (entry point", True))
    for name, (kind, source) in FAILING_CALLS.items():
        modules[name] = source
        points[kind].append(f"{name} = {name}:entry")
        overrides = _select(kind, name) if kind != "chunker" else (*_select(kind, name), "chunk_size=[200]")
        cases.append(Case(f"{kind} plugin call: {name}", overrides, f"{kind}={name}", name in BEFORE_WORK_CALLS))
    entry_points = "".join(f"[{GROUPS[kind]}]\n" + "\n".join(lines) + "\n" for kind, lines in points.items())
    fake_distribution(site, "fuzz-plugins", entry_points, modules)
    return cases


# ----- running them --------------------------------------------------------------------------------------------


def five_questions(root: Path) -> Path:
    questions = [
        {"id": f"q{i}", "question": f"What burst does RateLimiter allow, take {i}?", "answers": ["20"],
         "answerable": True, "evidence": [evidence("en", TINY_DOCS["en"], "20")], "evidence_mode": "any",
         "tags": {"lang": "en"}}
        for i in range(5)
    ]  # fmt: skip
    return write_set(root, TINY_DOCS, questions)


def argv_of(case: Case, root: Path, index: int) -> list[str]:
    return [*BASE, f"labelset.path={root / 'set'}", f"reports_dir={root / f'r{index}'}",
            f"cache_path={root / f'c{index}.sqlite'}", *case.overrides]  # fmt: skip


def run_cases(cases_file: str) -> None:
    """In the subprocess: each case through ``evalkit.sweep.main``, its exit code and stderr written back."""
    from evalkit.sweep import main

    todo = json.loads(Path(cases_file).read_text(encoding="utf-8"))
    done = []
    for argv in todo:
        err = io.StringIO()
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            try:
                main(argv)
                code: object = 0
            except SystemExit as exc:
                code = exc.code if isinstance(exc.code, int) else 1
            except BaseException as exc:
                code = f"escaped: {type(exc).__name__}: {exc}"
        reports = Path(next(a for a in argv if a.startswith("reports_dir=")).partition("=")[2])
        done.append({"code": code, "stderr": err.getvalue(), "locked": locked(reports)})
    Path(cases_file).write_text(json.dumps(done), encoding="utf-8")


def locked(reports: Path) -> list[str]:
    """Run folders whose lock cannot be taken at once: in the process that ran the case, a lock it still holds
    (a lock is per open file, so a handle the run left open refuses this one too)."""
    held = []
    for lock in reports.rglob(LOCK_FILE) if reports.exists() else ():
        with lock.open("a") as handle:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                held.append(str(lock.parent))
    return held


@pytest.fixture(scope="module")
def fuzzed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[Case], list[dict]]:
    root = tmp_path_factory.mktemp("fuzz-usercode")
    work, site = root / "work", root / "site"
    work.mkdir()
    five_questions(root / "set")
    cases = target_cases(work) + plugin_cases(site)
    todo = root / "cases.json"
    todo.write_text(json.dumps([argv_of(c, root, i) for i, c in enumerate(cases)]), encoding="utf-8")
    code = f"import sys; sys.path.insert(0, {str(site)!r})\nfrom tests.test_fuzz_usercode import run_cases\n"
    done = subprocess.run(
        [sys.executable, "-c", f"{code}run_cases({str(todo)!r})"], cwd=work, capture_output=True, text=True,
        timeout=1800, env=_env(),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    return root, cases, json.loads(todo.read_text(encoding="utf-8"))


def _env() -> dict[str, str]:
    import os

    repo = str(Path(__file__).resolve().parents[1])  # tests.* and this checkout's evalkit, from any folder
    return os.environ | {"PYTHONPATH": os.pathsep.join([repo, os.environ.get("PYTHONPATH", "")])}


def assert_unlocked(reports: Path) -> None:
    """No run folder is held once the process is gone (a helper it left running would hold it)."""
    assert locked(reports) == []


def run_folders(reports: Path) -> list[Path]:
    return [p for p in reports.iterdir() if p.is_dir() and not p.name.startswith(".")] if reports.exists() else []


def assert_one_line(code: object, stderr: str, names: str) -> str:
    assert code == 2, f"exit {code}: {stderr}"
    assert "Traceback" not in stderr and "internal error" not in stderr, stderr
    errors = [line for line in stderr.splitlines() if line.startswith("evalkit: error:")]
    assert len(errors) == 1 and stderr.strip().splitlines()[-1] == errors[0], stderr
    assert names in errors[0], (names, errors[0])
    return errors[0]


def manifest_state(run_dir: Path) -> str | None:
    path = run_dir / "manifest.json"
    return json.loads(path.read_text(encoding="utf-8")).get("state") if path.is_file() else None


N_CASES = len(CALLS) + len(IMPORTS) + 1 + len(GROUPS) * (len(IMPORT_FAILURES) + 1) + len(FAILING_CALLS)


@pytest.mark.parametrize("index", range(N_CASES))
def test_user_code_ends_in_one_line_and_exit_2(fuzzed: tuple[Path, list[Case], list[dict]], index: int) -> None:
    root, cases, done = fuzzed
    assert len(cases) == N_CASES
    case, result = cases[index], done[index]
    line = assert_one_line(result["code"], result["stderr"], case.names or "t_nowhere")
    reports = root / f"r{index}"
    assert result["locked"] == [], "the run left its folder locked in the process that ran it"
    assert_unlocked(reports)
    folders = run_folders(reports)
    if case.before_work:
        # Found before any work: one line in all (no warning, no announced run) and no run folder.
        assert result["stderr"].strip().splitlines() == [line], result["stderr"]
        assert folders == [] and "resume" not in line, (folders, line)
    elif case.name.split(": ")[-1] in AFTER_THE_RUN:
        (run_dir,) = folders
        assert manifest_state(run_dir) == "complete" and "the run folder is complete" in line
    else:
        assert all(manifest_state(f) != "complete" for f in folders), "a failed run must not read as complete"


# ----- the acceptance cases, each its own process ---------------------------------------------------------------

ACCEPTANCE = {
    "a target that calls sys.exit(0)": ("target", "import sys\ndef search(queries, k):\n    sys.exit(0)\n"),
    "a target that raises on import": ("target", "raise RuntimeError('cannot reach the index')\n"),
    "a plugin that exits 3 on import": ("plugin", "import sys\nsys.exit(3)\n"),
}


@pytest.mark.parametrize("case", sorted(ACCEPTANCE))
def test_acceptance_each_its_own_process(tmp_path: Path, case: str) -> None:
    kind, source = ACCEPTANCE[case]
    five_questions(tmp_path / "set")
    site = tmp_path / "site"
    if kind == "target":
        (tmp_path / "team_search.py").write_text(source, encoding="utf-8")
        chosen, names = ("retriever=external", "retriever.target=team_search:search"), "team_search:search"
    else:
        fake_distribution(site, "team-plugins", "[evalkit.retrievers]\nmine = team_exit:entry\n", {"team_exit": source})
        chosen, names = ("retriever=mine",), "retriever=mine (entry point 'team_exit:entry' of the package"
    args = [*BASE, f"labelset.path={tmp_path / 'set'}", f"reports_dir={tmp_path / 'r'}", *chosen]
    code = f"import sys; sys.path.insert(0, {str(site)!r}); sys.argv = ['evalkit.sweep', *{args!r}]\n"
    done = subprocess.run(
        [sys.executable, "-c", code + "from evalkit.sweep import main; main()"], cwd=tmp_path, capture_output=True,
        text=True, timeout=300, env=_env(),
    )  # fmt: skip
    assert_one_line(done.returncode, done.stderr, names)
    assert_unlocked(tmp_path / "r")
    assert all(manifest_state(f) != "complete" for f in run_folders(tmp_path / "r"))


def test_a_target_that_dies_mid_run_loses_nothing_and_the_same_command_resumes(tmp_path: Path) -> None:
    """Batches of one: the target answers two queries, then exits 0; fixed, it is asked only the other three."""
    five_questions(tmp_path / "set")
    asked = tmp_path / "asked.txt"
    source = textwrap.dedent(f"""
        import os, sys
        def search(queries, k):
            with open({str(asked)!r}, "a") as f:
                f.write(queries[0]["id"] + "\\n")
            if os.environ.get("FUZZ_DIE") and sum(1 for _ in open({str(asked)!r})) > 2:
                sys.exit(0)
            return [[{HIT}] for _ in queries]
    """)
    (tmp_path / "team_search.py").write_text(source, encoding="utf-8")
    args = [*BASE, f"labelset.path={tmp_path / 'set'}", f"reports_dir={tmp_path / 'r'}", "retriever=external",
            "retriever.target=team_search:search", "retriever.batch_size=1",
            f"cache_path={tmp_path / 'c.sqlite'}"]  # fmt: skip
    command = [sys.executable, "-m", "evalkit.sweep", *args]
    dying = subprocess.run(
        command, cwd=tmp_path, capture_output=True, text=True, timeout=300, env=_env() | {"FUZZ_DIE": "1"}
    )
    line = assert_one_line(dying.returncode, dying.stderr, "team_search:search")
    assert "sys.exit(0)" in line and "run the same command again to resume" in line
    assert_unlocked(tmp_path / "r")
    first = asked.read_text(encoding="utf-8").split()
    assert len(first) == 3  # two answered, the third exited
    asked.unlink()
    resumed = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=300, env=_env())
    assert resumed.returncode == 0, resumed.stderr
    assert sorted(asked.read_text(encoding="utf-8").split()) == sorted({f"q{i}" for i in range(5)} - set(first[:2]))
    (run_dir,) = run_folders(tmp_path / "r")
    assert manifest_state(run_dir) == "complete"


def test_a_backend_that_fails_before_work_gives_no_resume_hint(tmp_path: Path) -> None:
    five_questions(tmp_path / "set")
    base = [*BASE, f"labelset.path={tmp_path / 'set'}", f"reports_dir={tmp_path / 'r'}", "retriever=dense"]
    env = {k: v for k, v in _env().items() if k not in ("COHERE_API_KEY", "CO_API_KEY")}
    for chosen, names in (("embedder=onnx", "embedder.path"), ("embedder=cohere", "COHERE_API_KEY")):
        done = subprocess.run(
            [sys.executable, "-m", "evalkit.sweep", *base, chosen], cwd=tmp_path, capture_output=True, text=True,
            timeout=300, env=env,
        )  # fmt: skip
        line = assert_one_line(done.returncode, done.stderr, names)
        assert done.stderr.strip().splitlines() == [line] and "resume" not in line
        assert run_folders(tmp_path / "r") == []


def test_executor_address_auto_without_a_cluster_is_one_line(tmp_path: Path) -> None:
    services = pytest.importorskip("ray._private.services", reason="the ray extra is not installed")
    if services.find_gcs_addresses():
        pytest.skip("a Ray cluster runs on this machine: auto would find it")
    five_questions(tmp_path / "set")
    args = [*BASE, f"labelset.path={tmp_path / 'set'}", f"reports_dir={tmp_path / 'r'}", "executor=ray",
            "executor.address=auto"]  # fmt: skip
    env = {k: v for k, v in _env().items() if k != "RAY_ADDRESS"}
    done = subprocess.run(
        [sys.executable, "-m", "evalkit.sweep", *args], cwd=tmp_path, capture_output=True, text=True, timeout=300,
        env=env,
    )  # fmt: skip
    line = assert_one_line(done.returncode, done.stderr, "executor.address=auto")
    assert done.stderr.strip().splitlines() == [line] and run_folders(tmp_path / "r") == []


# ----- the annotation server -----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def annotation_server(tmp_path_factory: pytest.TempPathFactory):
    root = annotation_set(tmp_path_factory.mktemp("annotate") / "set")
    server = AnnotationServer(AnnotationApi(AnnotationStore(root)), read_timeout_s=1.0)
    server.start()
    yield server
    server.shutdown()
    server.server_close()


def raw_post(server: AnnotationServer, headers: dict[str, str], body: bytes, half_close: bool = False) -> int:
    """One POST to /api/edit written byte for byte (urllib would fix what these requests break); its status."""
    head = {"Host": f"127.0.0.1:{server.port}", "X-Evalkit-Token": server.token, **headers}
    request = "POST /api/edit HTTP/1.1\r\n" + "".join(f"{k}: {v}\r\n" for k, v in head.items()) + "\r\n"
    with socket.create_connection(("127.0.0.1", server.port), timeout=30) as sock:
        sock.sendall(request.encode("utf-8") + body)
        if half_close:
            sock.shutdown(socket.SHUT_WR)
        reply = http.client.HTTPResponse(sock)
        reply.begin()
        payload = json.loads(reply.read() or b"{}")
        assert set(payload) == {"error"} and "\n" not in payload["error"], payload
        return reply.status


GOOD_EDIT = json.dumps({"id": "q0", "op": "skip"}).encode()
JSON_TYPE = {"Content-Type": "application/json"}
MALFORMED: dict[str, tuple[dict[str, str], bytes, bool, int]] = {
    "Content-Length abc": ({**JSON_TYPE, "Content-Length": "abc"}, GOOD_EDIT, False, 400),
    "Content-Length negative": ({**JSON_TYPE, "Content-Length": "-5"}, GOOD_EDIT, False, 400),
    "Content-Length with a sign": ({**JSON_TYPE, "Content-Length": "+5"}, GOOD_EDIT, False, 400),
    "Content-Length in exponent form": ({**JSON_TYPE, "Content-Length": "1e3"}, GOOD_EDIT, False, 400),
    "Content-Length empty": ({**JSON_TYPE, "Content-Length": ""}, GOOD_EDIT, False, 400),
    "Content-Length not ASCII": ({**JSON_TYPE, "Content-Length": "١٢"}, GOOD_EDIT, False, 400),
    "Content-Length missing": (JSON_TYPE, GOOD_EDIT, False, 411),
    "Content-Length zero": ({**JSON_TYPE, "Content-Length": "0"}, b"", False, 413),
    "Content-Length over the cap": ({**JSON_TYPE, "Content-Length": str(MAX_BODY + 1)}, b"{}", False, 413),
    "Content-Length of a terabyte": ({**JSON_TYPE, "Content-Length": str(10**12)}, b"{}", False, 413),
    "Content-Length larger than the body, then closed": ({**JSON_TYPE, "Content-Length": "500"}, GOOD_EDIT, True, 400),
    "Content-Length larger than the body, then silence": (
        {**JSON_TYPE, "Content-Length": "500"},
        GOOD_EDIT,
        False,
        408,
    ),
    "not JSON": ({**JSON_TYPE, "Content-Length": "9"}, b"not json!", False, 400),
    "not UTF-8": ({**JSON_TYPE, "Content-Length": "4"}, b"\xff\xfe{}", False, 400),
    "JSON nested 100k deep": ({**JSON_TYPE, "Content-Length": "200000"}, b"[" * 100_000 + b"]" * 100_000, False, 400),
    "a JSON array": ({**JSON_TYPE, "Content-Length": "2"}, b"[]", False, 400),
    "an edit without id": ({**JSON_TYPE, "Content-Length": "14"}, b'{"op": "skip"}', False, 422),
    "not JSON content type": ({"Content-Type": "text/plain", "Content-Length": "2"}, b"{}", False, 415),
}


@pytest.mark.parametrize("case", sorted(MALFORMED))
def test_a_malformed_request_is_a_4xx_and_the_server_keeps_serving(
    annotation_server: AnnotationServer, case: str, capfd: pytest.CaptureFixture[str]
) -> None:
    headers, body, half_close, status = MALFORMED[case]
    assert raw_post(annotation_server, headers, body, half_close) == status
    assert "Traceback" not in capfd.readouterr().err
    # Still serving: a good request right after is answered.
    connection = http.client.HTTPConnection("127.0.0.1", annotation_server.port, timeout=30)
    connection.request("GET", "/api/state", headers={"X-Evalkit-Token": annotation_server.token})
    assert connection.getresponse().status == 200
    connection.close()
