"""The layout's rules (DESIGN §7), enforced on the source: who may import whom, what does I/O, how big things get."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "evalkit"
STAGES = ("retrieval", "answering", "scoring")
IO_CALLS = {"open", "read_text", "write_text", "read_bytes", "write_bytes", "read_parquet", "to_parquet", "read_csv",
            "to_csv", "read_json", "write_json", "mkdir", "unlink", "savez", "load"}  # fmt: skip
MAX_MODULE_LINES = 400
MAX_FUNCTION_LINES = 80


def modules() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


def stage_of(path: Path) -> str:
    parts = path.relative_to(PACKAGE).parts
    return parts[0] if len(parts) > 1 else path.stem


def imported_modules(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return {m for m in found if m.startswith("evalkit.")}


def imported_stages(path: Path) -> set[str]:
    return {m.split(".")[1] for m in imported_modules(path) if len(m.split(".")) > 2}


@pytest.mark.parametrize("path", modules(), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_only_the_pipeline_joins_retrieval_answering_and_scoring(path: Path) -> None:
    if stage_of(path) == "pipeline":
        return
    joined = (imported_stages(path) | {stage_of(path)}) & set(STAGES)
    assert len(joined) <= 1, f"{path.name} imports from {sorted(joined)}: only pipeline/ may join stages"


@pytest.mark.parametrize("path", sorted((PACKAGE / "report").rglob("*.py")), ids=lambda p: p.name)
def test_the_report_renders_files_and_imports_no_stage(path: Path) -> None:
    forbidden = imported_stages(path) & {"pipeline", "retrieval", "answering"}
    assert not forbidden, f"report/{path.name} imports {sorted(forbidden)}"


@pytest.mark.parametrize("path", sorted((PACKAGE / "scoring").rglob("*.py")), ids=lambda p: p.name)
def test_scoring_does_no_io_and_calls_no_model(path: Path) -> None:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    calls = {
        node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
    }
    assert not calls & IO_CALLS, f"scoring/{path.name} calls {sorted(calls & IO_CALLS)}"
    stages = imported_stages(path) - {"scoring", "cost"}
    assert not stages & {"pipeline", "retrieval", "answering", "run", "labels", "report"}, sorted(stages)
    assert not any(m.startswith(("evalkit.cache", "anthropic", "cohere")) for m in imported_modules(path))


@pytest.mark.parametrize("path", modules(), ids=lambda p: str(p.relative_to(PACKAGE)))
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
