"""The layout's rules (DESIGN §7), enforced on the source: who may import whom, what does I/O, how big things get.

The import table is :data:`ALLOWED`: for every top-level module and folder of evalkit (and every
entry point), the evalkit modules and folders it may import. Every ``import`` in every module counts,
function-level and ``TYPE_CHECKING`` ones included. The README's table ("How evalkit is built") must
list the same units with the same allowances (:func:`test_the_readme_table_is_the_allow_list`).
Today's breaches that another change removes are :data:`EXCEPTIONS`, one module at a time.
"""

from __future__ import annotations

import ast
import itertools
import re
from collections.abc import Callable
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "evalkit"
STAGES = ("retrieval", "answers", "scoring")
IO_CALLS = {"open", "read_text", "write_text", "read_bytes", "write_bytes", "read_parquet", "to_parquet", "read_csv",
            "to_csv", "read_json", "write_json", "mkdir", "unlink", "savez", "load"}  # fmt: skip
MAX_MODULE_LINES = 400
MAX_FUNCTION_LINES = 80

NOTHING: tuple[str, ...] = ()
ALLOWED: dict[str, tuple[str, ...]] = {
    # the floor: records, the cache, the strict settings reader, where the bundled data lives
    "records.py": NOTHING,
    "console.py": NOTHING,
    "cache.py": ("cache_file.py", "console.py"),
    "cache_file.py": ("console.py",),
    "retry.py": NOTHING,
    "http_call.py": NOTHING,
    "http_sdk.py": ("http_call.py",),  # the rule as httpx transports, for the SDKs
    "openai_api.py": ("http_call.py", "http_sdk.py", "retry.py"),  # the transport both OpenAI-compatible backends share
    "settings.py": NOTHING,
    "confdir.py": NOTHING,
    "distribution.py": NOTHING,
    "signals.py": NOTHING,
    "usercode.py": ("signals.py",),  # the one boundary around a target's or a plugin's code
    "plugins.py": ("usercode.py",),  # the one registry shape, read by every kind's own registry
    # the labelled-set format sits below every stage; curation grows sets above it
    "labels/": ("records.py",),
    "curate/": (
        "records.py",
        "labels/",
        "cache.py",
        "confdir.py",
        "plugins.py",
        "usercode.py",
        "retrieval/",
        "answers/",
        "scoring/",
        "run/",
    ),
    # the stages
    "chunking/": ("records.py", "plugins.py"),
    "cost/": ("records.py",),
    "run/": ("records.py", "console.py"),
    "retrieval/": (
        "records.py",
        "labels/",
        "cache.py",
        "cache_file.py",
        "console.py",
        "settings.py",
        "plugins.py",
        "usercode.py",
        "retry.py",
        "http_call.py",
        "http_sdk.py",
        "openai_api.py",
        "cost/",
        "run/",
    ),
    # context -> scored answers: above scoring/, cost/ and chunking/, below the pipeline (never calls up into it)
    "answers/": (
        "records.py",
        "cache.py",
        "settings.py",
        "confdir.py",
        "plugins.py",
        "usercode.py",
        "retry.py",
        "http_call.py",
        "http_sdk.py",
        "openai_api.py",
        "labels/",
        "chunking/",
        "cost/",
        "scoring/",
        "run/",
    ),
    "scoring/": ("records.py", "cost/"),
    "tracking/": ("records.py", "plugins.py", "http_call.py", "run/"),
    # the only orchestrator
    "pipeline/": (
        "distribution.py",
        "records.py",
        "cache.py",
        "settings.py",
        "confdir.py",
        "plugins.py",
        "usercode.py",
        "labels/",
        "chunking/",
        "retrieval/",
        "answers/",
        "scoring/",
        "cost/",
        "run/",
        "tracking/",
        "review/",  # review.json, computed once when a run finishes
        "console.py",  # the console's shared shapes (a duration prints alike on the console and the page)
        "curate/",  # production_log=: production's logs read as labels sample reads them
    ),
    # the report's numbers, computed once from a finished run folder and written to it (review.json, compare/);
    # it reads recommendation.json and phrases findings with report/'s readers and formatting, then hands over
    "review/": ("scoring/", "run/", "report/"),
    # rendering: the run folder through run/, the labelled set through labels/; computes nothing
    "report/": ("records.py", "console.py", "labels/", "run/"),
    # the project front door: configs layered over the bundled ones, evalkit from Python
    "overrides.py": ("settings.py", "confdir.py", "project/"),
    "project/": (
        "settings.py",
        "confdir.py",
        "plugins.py",
        "distribution.py",
        "http_call.py",
        "records.py",
        "labels/",
        "chunking/",  # evalkit.chunk_labelset: a set's chunks for a team's own store
        "retrieval/",  # evalkit.embed_texts: the vectors a sweep scores with
        "cache.py",  # ... read from and written to the sweep's own cache, so a team's store embeds nothing twice
        "run/",
        # the CI route reads a production file with the sweep's own settings and speaks the gate's errors
        "pipeline/",
        "scoring/",
    ),
    # evalkit from Python: sweeps and run folders, above the sweep's entry point and the stages it fronts
    "api.py": ("settings.py", "overrides.py", "sweep.py", "labels/", "project/", "run/"),
    "__init__.py": ("project/", "api.py"),
    # thin entry points: the stage they front
    "__main__.py": NOTHING,  # runs the others by module name (importlib), imports none of them
    "sweep.py": (
        "confdir.py",
        "console.py",
        "signals.py",
        "usercode.py",
        "overrides.py",
        "labels/",
        "pipeline/",
        "tracking/",
        "review/",
        "project/",
    ),
    # gate.md is rendered with the report's number formatting (the same words as the page), nothing computed there;
    # --answer composes the sweep's config (as replay does) for the generator that answers what the gate compares
    "gate.py": ("settings.py", "overrides.py", "sweep.py", "project/", "pipeline/", "scoring/", "run/", "report/"),
    # python -m evalkit.latency probe: the composed config's generator, timed (answers/generation's loop)
    "latency.py": ("settings.py", "overrides.py", "sweep.py", "project/", "pipeline/", "answers/"),
    "labels/__main__.py": ("labels/", "curate/"),
    "replay.py": (
        "settings.py",
        "overrides.py",
        "sweep.py",
        "project/",
        "curate/",
        "labels/",
        "pipeline/",
        "scoring/",
        "run/",
    ),
    "report/__main__.py": ("review/", "run/"),
    "tracking/__main__.py": ("settings.py", "tracking/", "run/"),
}

# Today's imports that break the table, one module at a time, each to be removed by a later change.
# A listed import that is gone fails the test below, so the list only shrinks.
EXCEPTIONS: dict[str, tuple[str, ...]] = {}
# A private name (``_x``) imported from another module: a helper that should be public in one place.
PRIVATE_IMPORTS: dict[str, tuple[str, ...]] = {
    "answers/position/sizing.py": ("evalkit.answers.position.items._stable_int",),
}


def modules() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


def name_of(path: Path) -> str:
    return path.relative_to(PACKAGE).as_posix()


def unit_of(path: Path) -> str:
    """The row of :data:`ALLOWED` a module answers to: its entry point, its folder or itself."""
    relative = name_of(path)
    if relative in ALLOWED:
        return relative
    head, _, rest = relative.partition("/")
    return f"{head}/" if rest else head


def target_unit(module: str) -> str:
    """The unit an imported ``evalkit.x.y`` belongs to: ``x/`` for a folder, ``x.py`` for a module."""
    parts = module.split(".")
    if len(parts) == 1:
        return "__init__.py"
    return f"{parts[1]}/" if (PACKAGE / parts[1]).is_dir() else f"{parts[1]}.py"


@cache
def imported_modules(path: Path) -> frozenset[str]:
    """Every evalkit module (or ``module.name``) ``path`` imports, anywhere in the file."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module:
            assert node.level == 0, f"{name_of(path)}:{node.lineno}: relative import (this check reads absolute ones)"
            if node.module != "evalkit":  # `from evalkit import x` imports `evalkit.x`, not `evalkit/__init__`
                found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return frozenset(m for m in found if m == "evalkit" or m.startswith("evalkit."))


def imported_units(path: Path) -> set[str]:
    """The units of :data:`ALLOWED` that ``path`` imports from, its own excepted (an entry point's folder is not)."""
    units = set()
    for module in imported_modules(path):
        head = module.split(".")[1] if "." in module else ""
        is_module = (PACKAGE / head).is_dir() or (PACKAGE / f"{head}.py").is_file()
        units.add(target_unit(module) if head and is_module else "__init__.py")  # `from evalkit import load_run`
    return units - {unit_of(path)}


def imported_stages(path: Path) -> set[str]:
    return {m.split(".")[1] for m in imported_modules(path) if len(m.split(".")) > 2}


def test_every_unit_of_evalkit_has_a_row() -> None:
    units = {unit_of(p) for p in modules()}
    assert units - set(ALLOWED) == set(), "add a row to ALLOWED (and to the README's table)"
    assert set(ALLOWED) - units == set(), "a row names nothing that exists"
    assert set(EXCEPTIONS) | set(PRIVATE_IMPORTS) <= {name_of(p) for p in modules()}
    assert all(t in ALLOWED for allowed in ALLOWED.values() for t in allowed)


@pytest.mark.parametrize("path", modules(), ids=name_of)
def test_every_import_is_allowed(path: Path) -> None:
    unit = unit_of(path)
    allowed = set(ALLOWED[unit]) | set(EXCEPTIONS.get(name_of(path), ()))
    forbidden = imported_units(path) - allowed
    assert not forbidden, f"{name_of(path)} imports {sorted(forbidden)}; {unit} may import {sorted(ALLOWED[unit])}"


def test_the_report_computes_nothing() -> None:
    """No module of report/ imports a stage (scoring/ above all) nor review/, and none is excepted from that."""
    report = [p for p in modules() if unit_of(p) == "report/"]
    assert report, "report/ has modules"
    assert not [name for name in EXCEPTIONS if name.startswith("report/")]
    computing = {"scoring/", "review/", *(f"{stage}/" for stage in STAGES)}
    offenders = {name_of(p): sorted(imported_units(p) & computing) for p in report if imported_units(p) & computing}
    assert not offenders, offenders


def test_a_report_module_importing_scoring_is_refused(tmp_path: Path) -> None:
    """The rule bites: a report/ module that imports scoring/ is outside report/'s allowance."""
    planted = tmp_path / "planted.py"
    planted.write_text("from evalkit.scoring.stats import bootstrap_ci\n", encoding="utf-8")
    units = {target_unit(m) for m in imported_modules(planted)}
    assert units - set(ALLOWED["report/"]) == {"scoring/"}


def test_every_exception_is_still_needed() -> None:
    """An exception whose import is gone is removed (the list only shrinks; today it is empty)."""
    for name, units in EXCEPTIONS.items():
        path = PACKAGE / name
        unneeded = set(units) - (imported_units(path) - set(ALLOWED[unit_of(path)]))
        assert not unneeded, f"{name} no longer imports {sorted(unneeded)}: remove it from EXCEPTIONS"


@pytest.mark.parametrize("path", modules(), ids=name_of)
def test_no_private_name_crosses_a_module(path: Path) -> None:
    own = "evalkit." + name_of(path).removesuffix(".py").replace("/", ".")
    private = {
        m
        for m in imported_modules(path)
        if m.rpartition(".")[2].startswith("_") and not m.rpartition(".")[2].startswith("__")
        and m.rpartition(".")[0] != own
    }  # fmt: skip
    assert private == set(PRIVATE_IMPORTS.get(name_of(path), ())), f"{name_of(path)} imports private {sorted(private)}"


@pytest.mark.parametrize("path", modules(), ids=name_of)
def test_only_the_pipeline_joins_retrieval_answers_and_scoring(path: Path) -> None:
    """Per module too: curate/ may use each stage, but no one module of it two of them."""
    if unit_of(path) == "pipeline/":
        return
    joined = (imported_stages(path) | {unit_of(path).rstrip("/")}) & set(STAGES)
    layered = {"answers", "scoring"}  # answers/ scores its answers itself: it sits above scoring/
    assert len(joined) <= 1 or joined == layered, f"{path.name} imports from {sorted(joined)}: only pipeline/ joins"


@pytest.mark.parametrize("path", sorted((PACKAGE / "scoring").rglob("*.py")), ids=name_of)
def test_scoring_does_no_io_and_calls_no_model(path: Path) -> None:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    calls = {
        node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
    }
    assert not calls & IO_CALLS, f"scoring/{path.name} calls {sorted(calls & IO_CALLS)}"
    assert not any(m.startswith(("evalkit.cache", "anthropic", "cohere")) for m in _all_imports(tree))


def _all_imports(tree: ast.AST) -> set[str]:
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return found


README_ROW = re.compile(r"^\| (?P<units>`[^|]+`) \| (?P<owns>[^|]+) \| (?P<imports>[^|]+) \|$")


def readme_table() -> dict[str, set[str]]:
    """The README's "may import" table: each unit of the first column -> the units of the last."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text[text.index("## How evalkit is built") :]
    section = section[: section.index("\n## ", 3)]
    table: dict[str, set[str]] = {}
    for line in section.splitlines():
        row = README_ROW.match(line)
        if row is None:
            continue
        imports = set(re.findall(r"`([^`]+)`", row["imports"]))
        for unit in re.findall(r"`([^`]+)`", row["units"]):
            assert unit not in table, f"README: {unit} has two rows"
            table[unit] = imports
    return table


def test_the_readme_table_is_the_allow_list() -> None:
    table = readme_table()
    expected = {unit: set(allowed) for unit, allowed in ALLOWED.items()}
    wrong = {
        unit: f"README says {sorted(table.get(unit, ()))}, ALLOWED says {sorted(expected.get(unit, ()))}"
        for unit in table.keys() | expected.keys()
        if table.get(unit) != expected.get(unit)
    }
    assert not wrong, wrong


@pytest.mark.parametrize("path", modules(), ids=name_of)
def test_modules_and_functions_stay_small(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    assert text.count("\n") <= MAX_MODULE_LINES, f"{path.name}: {text.count(chr(10))} lines"
    long = [
        f"{node.name} ({node.end_lineno - node.lineno + 1} lines)"  # type: ignore[operator]
        for node in ast.walk(ast.parse(text))
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        and node.end_lineno - node.lineno + 1 > MAX_FUNCTION_LINES  # type: ignore[operator]
    ]
    assert not long, f"{path.name}: {', '.join(long)}"


def test_no_raw_config_dict_below_the_entry_points() -> None:
    """Below the entry points the config travels as typed settings: nothing calls OmegaConf.to_container."""
    entry_points = {"sweep.py", "overrides.py"}
    offenders = [
        str(p.relative_to(PACKAGE))
        for p in modules()
        if p.name not in entry_points and "to_container(" in p.read_text(encoding="utf-8")
    ]
    assert not offenders, offenders


BACKEND_FOLDERS = ("pipeline/", "retrieval/", "chunking/", "tracking/", "answers/generation/")
"""Where a bare ``name`` or ``x.name`` holds a backend's name (and in every settings module): there a test of it
against names is a name test too. Elsewhere only an expression that says which kind it holds counts."""
BACKEND_KINDS = ("retriever", "reranker", "generator", "embedder", "chunker", "executor", "tracker")


def _holds_a_kind(node: ast.expr) -> bool:
    """``spec.chunker``, ``config.embedder.name``, ``tracker.name``, ``settings.name``, ``generator_name``,
    ``spec.backend`` and ``backend`` (a request's or an answer's generator), ``cfg["retriever"].get("name")``."""
    kinds = (*BACKEND_KINDS, "settings")
    if isinstance(node, ast.Attribute):
        owner = node.value
        owner_name = owner.attr if isinstance(owner, ast.Attribute) else getattr(owner, "id", "")
        return node.attr in (*BACKEND_KINDS, "backend") or (node.attr == "name" and owner_name in kinds)
    if isinstance(node, ast.Name):
        return node.id in (*BACKEND_KINDS, "backend") or node.id in {f"{kind}_name" for kind in BACKEND_KINDS}
    return _gets_the_name(node)


def _gets_the_name(node: ast.expr) -> bool:
    """``section.get("name")``: a raw config section's (or a manifest's) backend name."""
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "get"
        and bool(node.args)
        and isinstance(node.args[0], ast.Constant)
        and node.args[0].value == "name"
    )


def _names_a_backend(node: ast.expr) -> bool:
    """``x.name``, ``retriever.name``, ``generator_name``, ``name``: an expression that may hold a backend's name."""
    if _holds_a_kind(node):
        return True
    if isinstance(node, ast.Attribute):
        return node.attr == "name"
    if isinstance(node, ast.Name):
        return node.id == "name" or node.id.endswith("_name")
    if isinstance(node, ast.Subscript):  # cfg["name"], raw.get is a call (not a test by itself)
        key = node.slice
        return isinstance(key, ast.Constant) and key.value == "name"
    return False


def _literal_names(node: ast.expr) -> bool:
    """A string literal, or a tuple / list / set / dict (its keys) of them, or ``frozenset(...)`` of one."""
    if isinstance(node, ast.Constant):
        return isinstance(node.value, str)
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return bool(node.elts) and all(isinstance(e, ast.Constant) and isinstance(e.value, str) for e in node.elts)
    if isinstance(node, ast.Dict):
        return bool(node.keys) and all(isinstance(k, ast.Constant) and isinstance(k.value, str) for k in node.keys)
    if isinstance(node, ast.Call) and getattr(node.func, "id", "") in ("frozenset", "set", "tuple"):
        return len(node.args) == 1 and _literal_names(node.args[0])
    return False


def name_sets(tree: ast.Module) -> set[str]:
    """Module-level names bound to a collection of names (``_PRICED = frozenset({"cohere"})``): a second table.

    A single string (``NO_RERANKER = "none"``) is a sentinel written once, not a set of backends.
    """
    found = set()
    for node in tree.body:
        targets, value = (node.targets, node.value) if isinstance(node, ast.Assign) else ([], None)
        if isinstance(node, ast.AnnAssign) and node.value is not None:
            targets, value = [node.target], node.value
        if value is not None and not isinstance(value, ast.Constant) and _literal_names(value):
            found.update(t.id for t in targets if isinstance(t, ast.Name))
    return found


def _is_lookup(node: ast.AST, tables: set[str], holds: Callable[[ast.expr], bool]) -> bool:
    """``_KEYS[settings.name]`` or ``_CHECKS.get(self.name)``: a backend's trait read from a table of names."""
    if isinstance(node, ast.Subscript):
        return isinstance(node.value, ast.Name) and node.value.id in tables and holds(node.slice)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get":
        table = node.func.value
        return isinstance(table, ast.Name) and table.id in tables and bool(node.args) and holds(node.args[0])
    return False


def name_tests(tree: ast.Module, backend_folder: bool = True) -> list[int]:
    """Lines testing a backend's name against names: ==, !=, in, not in a literal or a module's set of names,
    a lookup in a module's table of names, or a match on it."""
    tables = name_sets(tree)
    holds = _names_a_backend if backend_folder else _holds_a_kind

    def names(node: ast.expr) -> bool:
        return _literal_names(node) or (isinstance(node, ast.Name) and node.id in tables)

    def looked_up(node: ast.expr) -> bool:  # a lookup's key: a bare ``name`` is too common to count
        return _holds_a_kind(node) or (isinstance(node, ast.Attribute) and node.attr == "name")

    lines = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            pairs = itertools.pairwise([node.left, *node.comparators])
            if any((holds(a) and names(b)) or (names(a) and holds(b)) for a, b in pairs):
                lines.append(node.lineno)
        elif _is_lookup(node, tables, looked_up if backend_folder else _holds_a_kind) or (
            isinstance(node, ast.Match) and holds(node.subject)
        ):
            lines.append(node.lineno)
    return sorted(set(lines))


def _in_a_backend_folder(path: Path) -> bool:
    name = name_of(path)
    return name.startswith(BACKEND_FOLDERS) or name.endswith("settings.py")


@pytest.mark.parametrize("path", modules(), ids=name_of)
def test_no_backend_name_is_tested_anywhere(path: Path) -> None:
    """A backend declares what it is (its registration table's entry); only that table writes its name."""
    found = name_tests(ast.parse(path.read_text(encoding="utf-8")), _in_a_backend_folder(path))
    assert not found, f"{name_of(path)}: a backend's name is tested at line(s) {found}; ask its backend instead"


def test_the_name_test_check_can_fail() -> None:
    """The check sees each form a name test takes (so the test above can fail)."""
    source = (
        'if retriever.name == "bm25": pass\n'
        'if settings.name in ("dense", "hybrid"): pass\n'
        'if "cohere" != plan.embedder.name: pass\n'
        'ok = generator_name in ("local", "fake")\n'
        "match reranker.name:\n    case 'local': pass\n"
        'if backend.embeds and index == "hnsw": pass\n'
        '_PRICED = frozenset({"cohere"})\n'
        "priced = self.name in _PRICED\n"
        '_KEYS = {"onnx": {"path"}, "e5": set()}\n'
        "keys = _KEYS.get(self.name, set()) | _KEYS[settings.name]\n"
        'NO_RERANKER = "none"\n'
        "enabled = self.name != NO_RERANKER\n"
    )
    assert name_tests(ast.parse(source)) == [1, 2, 3, 4, 5, 9, 11]
    # Outside the backend folders only what says its kind counts: ``name`` alone is any name.
    assert name_tests(ast.parse(source), backend_folder=False) == [1, 2, 3, 4, 5, 11]
    assert name_tests(ast.parse('if name in ("a", "b"): pass\nif tracker.name != "mlflow": pass\n'), False) == [2]
    # A request's generator and a raw section's name, in any folder (turnaround.py once held TIMED_LOCALLY).
    held = (
        '_TIMED = frozenset({"local", "fake"})\n'
        "hosted = backend not in _TIMED\n"
        'if spec.backend == "local": pass\n'
        'if (config.get("retriever") or {}).get("name") == "external": pass\n'
        "if backend.embeds: pass\n"
    )
    assert name_tests(ast.parse(held), backend_folder=False) == [2, 3, 4]
