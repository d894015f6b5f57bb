"""``python -m evalkit init DIR``: a team's own project folder, layered over evalkit's bundled configs.

Writes ``DIR/conf/`` (``project.yaml`` and the team's ``baseline``, ``labelset``, ``sweep`` and
``objective`` options), ``DIR/labelsets/``, a README stub and the CI gate (a GitHub Actions
workflow and the shell recipe it runs). Without ``--labelset`` the bundled demo set is copied
to ``DIR/labelsets/team`` so the first sweep runs at once; replace it with the team's own.
``DIR/examples/`` gets evalkit's worked examples (a LanceDB retriever, a plugin package), shipped
in the wheel: their READMEs' steps run from ``DIR`` on the team's set. Never overwrites a file
that exists (``--force`` does).
"""

from __future__ import annotations

import argparse
import shutil
import string
import sys
from collections.abc import Sequence
from importlib.resources import files
from pathlib import Path

from evalkit.confdir import bundled
from evalkit.project.install import pinned_source

# template (under evalkit/project/templates/) -> where it goes in the project
LAYOUT = {
    "conf/project.yaml": "conf/project.yaml",
    "conf/baseline/production.yaml": "conf/baseline/production.yaml",
    "conf/labelset/team.yaml": "conf/labelset/team.yaml",
    "conf/sweep/team.yaml": "conf/sweep/team.yaml",
    "conf/objective/team.yaml": "conf/objective/team.yaml",
    "README.md": "README.md",
    "labelsets_README.md": "labelsets/README.md",
    "ci/evalkit-gate.yml": ".github/workflows/evalkit-gate.yml",
    "ci/evalkit-gate.sh": "ci/evalkit-gate.sh",
}
GITIGNORE = "reports/\n.evalkit-cache/\n"
EXAMPLES = "examples"
"""Where the worked examples go in the project, as they sit in the checkout (their READMEs name these paths)."""
NOT_EXAMPLE_FILES = ("__pycache__", "build", "dist")
"""Folders an install of a checkout's example leaves behind: never copied into a project."""


class InitError(ValueError):
    """A project folder that cannot be written (one line)."""


def template_text(name: str) -> str:
    return (files("evalkit.project") / "templates" / name).read_text(encoding="utf-8")


def render(name: str, values: dict[str, str]) -> str:
    """A template with ``$name`` and ``$labelset_path`` filled in (``$$`` is a literal dollar)."""
    return string.Template(template_text(name)).safe_substitute(values)


def init_project(root: Path, labelset: str | None = None, force: bool = False, empty: bool = False) -> list[Path]:
    """Write the project folder; returns the files written.

    Without ``labelset``, the team's set is a copy of the bundled demo set (a sweep runs at once), or with
    ``empty`` an empty one to fill (docs.jsonl and questions.jsonl with no lines)."""
    root = root.expanduser()
    if root.exists() and not root.is_dir():
        raise InitError(f"{root}: exists and is not a folder")
    existing = [rel for rel in LAYOUT.values() if (root / rel).exists()]
    if existing and not force:
        raise InitError(f"{root}: already has {', '.join(existing)} (--force overwrites)")
    values = {"name": root.resolve().name, "labelset_path": labelset or "labelsets/team", "install": pinned_source()}
    written = []
    for template, rel in LAYOUT.items():
        target = root / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(render(template, values), encoding="utf-8")
        written.append(target)
    (root / "ci" / "evalkit-gate.sh").chmod(0o755)
    gitignore = root / ".gitignore"
    if not gitignore.exists():
        gitignore.write_text(GITIGNORE, encoding="utf-8")
        written.append(gitignore)
    if labelset is None:
        team = root / "labelsets" / "team"
        written.append(_empty_set(team) if empty else _copy_demo(team))
    written.extend(_copy_examples(root / EXAMPLES, force))
    return written


def _copy_examples(target: Path, force: bool) -> list[Path]:
    """evalkit's worked examples (the wheel's copy, or the checkout's), file by file; existing files kept."""
    source = bundled(EXAMPLES)
    written = []
    for path in sorted(source.rglob("*")):
        rel = path.relative_to(source)
        skipped = any(part in NOT_EXAMPLE_FILES or part.endswith(".egg-info") for part in rel.parts)
        if not path.is_file() or skipped or path.suffix == ".pyc" or ((target / rel).exists() and not force):
            continue
        (target / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, target / rel)
        written.append(target / rel)
    return written


def _empty_set(target: Path) -> Path:
    """A labelled set folder with its two files and no lines: the team's own documents and questions go there."""
    target.mkdir(parents=True, exist_ok=True)
    for name in ("docs.jsonl", "questions.jsonl"):
        (target / name).write_text("", encoding="utf-8")
    return target


def copied_note(root: Path) -> str:
    """What init put in the team's labelled set, in one line."""
    team = root / "labelsets" / "team"
    lines = [sum(1 for line in (team / n).read_text(encoding="utf-8").splitlines() if line.strip())
             for n in ("docs.jsonl", "questions.jsonl")]  # fmt: skip
    if not any(lines):
        return f"{team}: an empty labelled set; add your documents to docs.jsonl and questions to questions.jsonl"
    return (
        f"{team}: a copy of the bundled demo set ({lines[0]} documents, {lines[1]} questions) so the first sweep "
        "runs; replace it with your own (or start from an empty one: --empty)"
    )


def _copy_demo(target: Path) -> Path:
    """The bundled demo set as a starting point (its data files only)."""
    source = bundled("labelsets/demo")
    if target.exists():
        shutil.rmtree(target)
    shutil.copytree(source, target, ignore=shutil.ignore_patterns("*.py", "__pycache__"))
    return target


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m evalkit init", description=__doc__.splitlines()[0])
    parser.add_argument("dir", help="the project folder to write (created if missing)")
    parser.add_argument(
        "--labelset", metavar="PATH", help="the team's labelled set, relative to DIR (default: a copy of the demo set)"
    )
    parser.add_argument("--force", action="store_true", help="overwrite the files init writes")
    parser.add_argument("--empty", action="store_true", help="an empty labelled set instead of the demo set's copy")
    args = parser.parse_args(argv)
    try:
        written = init_project(Path(args.dir), args.labelset, args.force, args.empty)
    except (InitError, OSError) as exc:
        print(f"evalkit init: error: {exc}", file=sys.stderr)
        return 2
    root = Path(args.dir)
    print(f"evalkit init: wrote {len(written)} files under {root}", file=sys.stderr)
    if args.labelset is None:
        print(f"evalkit init: {copied_note(root)}", file=sys.stderr)
    print(f"evalkit init: next: cd {root} && python -m evalkit.sweep", file=sys.stderr)
    return 0
