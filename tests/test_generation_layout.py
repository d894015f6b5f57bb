"""The generation package's imports run one way: the shared modules never import the contract at run time,
and the contract re-exports nothing (each name is imported from its own module)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

GENERATION = Path(__file__).resolve().parents[1] / "evalkit" / "answers" / "generation"
SHARED = ("request", "cached", "batches", "tally")  # the retry policy is evalkit/retry.py, below every stage
BASE = "evalkit.answers.generation.base"


def _runtime_imports(path: Path) -> set[str]:
    """Modules imported outside ``if TYPE_CHECKING:`` blocks (absolute imports only)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    typing_only = {
        id(inner)
        for node in ast.walk(tree)
        if isinstance(node, ast.If) and getattr(node.test, "id", getattr(node.test, "attr", "")) == "TYPE_CHECKING"
        for inner in ast.walk(node)
    }
    found: set[str] = set()
    for node in ast.walk(tree):
        if id(node) in typing_only:
            continue
        if isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return found


@pytest.mark.parametrize("name", SHARED)
def test_shared_modules_do_not_import_the_contract_at_run_time(name: str) -> None:
    assert BASE not in _runtime_imports(GENERATION / f"{name}.py")


def test_the_contract_defines_only_the_generator() -> None:
    tree = ast.parse((GENERATION / "base.py").read_text(encoding="utf-8"))
    defined = [node.name for node in tree.body if isinstance(node, ast.ClassDef | ast.FunctionDef)]
    imported = {
        alias.asname or alias.name
        for node in tree.body
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("evalkit.")
        for alias in node.names
    }
    assert defined == ["Generator"]
    assert not any(isinstance(node, ast.Assign) and "__all__" in ast.unparse(node) for node in tree.body)
    assert imported <= {"GenerationRequest", "Answer"}  # only what the contract's signatures name


def test_no_caller_imports_a_neighbour_through_the_contract() -> None:
    root = GENERATION.parents[2]
    offenders = []
    for folder in ("evalkit", "tests", "benchmarks"):
        for path in (root / folder).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.ImportFrom) and node.module == BASE:
                    extra = [alias.name for alias in node.names if alias.name != "Generator"]
                    if extra:
                        offenders.append(f"{path.relative_to(root)}: {extra}")
    assert not offenders
