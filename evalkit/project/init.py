"""``python -m evalkit init DIR``: a team's own project folder, layered over evalkit's bundled configs.

Writes ``DIR/conf/`` (``project.yaml`` and the team's ``baseline``, ``labelset``, ``sweep`` and
``objective`` options), ``DIR/labelsets/``, a README stub and the CI gate (a GitHub Actions
workflow and the shell recipe it runs). Without ``--labelset`` the bundled demo set is copied
to ``DIR/labelsets/team`` so the first sweep runs at once; replace it with the team's own.
``DIR/examples/`` gets evalkit's worked examples (a LanceDB retriever, a plugin package), shipped
in the wheel: their READMEs' steps run from ``DIR`` on the team's set.

Into an existing repository it merges and never overwrites: a file that exists is kept (``--force``
rewrites evalkit's own files, never the team's README.md or .gitignore); ``.gitignore`` gains the lines it
lacks (``reports/``, the CI cache); an existing README.md is left byte for byte, or gets an evalkit section
appended with ``--readme-section``; a folder inside a git repository puts the workflow in the repository's
``.github/workflows/`` (the only one GitHub reads), running in that folder. Every file is said: written,
merged or kept.
"""

from __future__ import annotations

import argparse
import os
import shutil
import string
import sys
from collections.abc import Sequence
from dataclasses import dataclass
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
GITIGNORE = ("reports/", ".evalkit-cache/")
"""Lines a project's .gitignore holds: run folders (and the sweep's default cache under them), the CI cache."""
WORKFLOW = ".github/workflows/evalkit-gate.yml"
TEAM_FILES = ("README.md",)
"""The team's own files: written only when absent, never overwritten (not even with ``--force``)."""
README_MARKER = "<!-- evalkit init -->"
"""Heads the section ``--readme-section`` appends, so a second run does not append it again."""
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


@dataclass(frozen=True)
class Step:
    """One file init wrote, merged or kept, for the line it prints."""

    path: Path
    action: str
    """``wrote``, ``kept`` (it exists), ``added <lines> to`` or ``appended the evalkit section to``."""


def workflow_home(root: Path) -> tuple[Path, str]:
    """Where the workflow goes and the project's folder relative to it: the git repository's root when ``root``
    is inside one (GitHub reads ``.github/workflows/`` there only), else ``root`` itself."""
    resolved = root.resolve()
    for folder in (resolved, *resolved.parents):
        if (folder / ".git").exists():
            relative = resolved.relative_to(folder).as_posix()
            return folder, "" if relative == "." else f"{relative}/"
    return resolved, ""


def init_project(
    root: Path,
    labelset: str | None = None,
    force: bool = False,
    empty: bool = False,
    readme_section: bool = False,
) -> list[Step]:
    """Write the project folder, merging into what exists; returns what was done to each file.

    Without ``labelset``, the team's set is a copy of the bundled demo set (a sweep runs at once), or with
    ``empty`` an empty one to fill (docs.jsonl and questions.jsonl with no lines).

    Raises:
        InitError: ``root`` is a file, or ``labelset`` names no folder (relative to ``root``).
    """
    root = root.expanduser()
    if root.exists() and not root.is_dir():
        raise InitError(f"{root}: exists and is not a folder")
    if labelset is not None and not (root / labelset).is_dir():
        raise InitError(f"--labelset {labelset}: no such folder ({root / labelset}; the path is relative to {root})")
    home, prefix = workflow_home(root)
    values = {
        "name": root.resolve().name,
        "labelset_path": labelset or "labelsets/team",
        "install": pinned_source(),
        "project_dir": prefix.rstrip("/") or ".",
        "project_prefix": prefix,
    }
    steps = []
    for template, rel in LAYOUT.items():
        target = home / WORKFLOW if rel == WORKFLOW else root / rel
        if rel == "README.md" and target.exists():
            steps.append(_readme(target, values) if readme_section else Step(target, "kept"))
            continue
        if target.exists() and (not force or rel in TEAM_FILES):
            steps.append(Step(target, "kept"))
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(render(template, values), encoding="utf-8")
        steps.append(Step(target, "wrote"))
    (root / "ci" / "evalkit-gate.sh").chmod(0o755)
    steps.append(_gitignore(root / ".gitignore"))
    if labelset is None:
        team = root / "labelsets" / "team"
        if (team / "questions.jsonl").exists() and not force:
            steps.append(Step(team, "kept"))
        else:
            steps.append(Step(_empty_set(team) if empty else _copy_demo(team), "wrote"))
    steps.extend(_copy_examples(root / EXAMPLES, force))
    return steps


def _gitignore(path: Path) -> Step:
    """.gitignore with the lines it lacks appended (the team's lines and their order kept)."""
    text = path.read_text(encoding="utf-8") if path.exists() else ""
    present = {line.strip().strip("/") for line in text.splitlines()}  # /reports/, reports and reports/ alike
    missing = [line for line in GITIGNORE if line.strip("/") not in present]
    if not missing:
        return Step(path, "kept")
    separator = "" if not text or text.endswith("\n") else "\n"
    path.write_text(text + separator + "".join(f"{line}\n" for line in missing), encoding="utf-8")
    return Step(path, f"added {' '.join(missing)} to" if text else "wrote")


def _readme(path: Path, values: dict[str, str]) -> Step:
    """The team's README with evalkit's section appended once (``--readme-section``); its own text untouched."""
    raw = path.read_bytes()
    if README_MARKER.encode() in raw:
        return Step(path, "kept")
    section = render("README.md", values).replace("# ", "## ", 1)
    separator = "" if raw.endswith(b"\n") else "\n"
    with path.open("ab") as readme:  # appended: the team's bytes (line endings included) stay as they are
        readme.write(f"{separator}\n{README_MARKER}\n{section}".encode())
    return Step(path, "appended the evalkit section to")


def _copy_examples(target: Path, force: bool) -> list[Step]:
    """evalkit's worked examples (the wheel's copy, or the checkout's), file by file; existing files kept."""
    source = bundled(EXAMPLES)
    steps = []
    for path in sorted(source.rglob("*")):
        rel = path.relative_to(source)
        skipped = any(part in NOT_EXAMPLE_FILES or part.endswith(".egg-info") for part in rel.parts)
        if not path.is_file() or skipped or path.suffix == ".pyc":
            continue
        if (target / rel).exists() and not force:
            steps.append(Step(target / rel, "kept"))
            continue
        (target / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, target / rel)
        steps.append(Step(target / rel, "wrote"))
    return steps


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
    parser.add_argument("dir", help="the project folder to write (created if missing; an existing one is merged into)")
    parser.add_argument(
        "--labelset", metavar="PATH", help="the team's labelled set, relative to DIR (default: a copy of the demo set)"
    )
    parser.add_argument(
        "--force", action="store_true", help="rewrite evalkit's files that exist (never README.md or .gitignore)"
    )
    parser.add_argument("--empty", action="store_true", help="an empty labelled set instead of the demo set's copy")
    parser.add_argument(
        "--readme-section", action="store_true", help="append an evalkit section to an existing README.md"
    )
    args = parser.parse_args(argv)
    try:
        steps = init_project(Path(args.dir), args.labelset, args.force, args.empty, args.readme_section)
    except (InitError, OSError) as exc:
        print(f"evalkit init: error: {exc}", file=sys.stderr)
        return 2
    root = Path(args.dir)
    print(f"evalkit init: into {root}:", file=sys.stderr)
    for step in steps:  # relative to DIR: the workflow of a subfolder's project is ../.github/...
        print(f"evalkit init:   {step.action} {os.path.relpath(step.path, root.resolve())}", file=sys.stderr)
    wrote = sum(step.action != "kept" for step in steps)
    print(f"evalkit init: {wrote} written or merged, {len(steps) - wrote} kept as they were", file=sys.stderr)
    if args.labelset is None:
        print(f"evalkit init: {copied_note(root)}", file=sys.stderr)
    here = root.resolve() == Path.cwd().resolve()  # `evalkit init .`: no `cd .` to tell
    print(f"evalkit init: next: {'' if here else f'cd {root} && '}python -m evalkit.sweep", file=sys.stderr)
    return 0
