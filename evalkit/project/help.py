"""``python -m evalkit.sweep --help``: evalkit's groups, what each sets, the grid keys, examples.

Generated from what the code knows: the groups are the folders of the config tree (a team's ``conf/``
first, evalkit's after it), each group's default is the primary config's defaults list (a project's
``override`` entries applied), its choices are its yaml files plus what installed plugins register
(:mod:`evalkit.plugins`). Only the one line saying what a group does is written here, in
:data:`GROUP_HELP`; a test fails when a folder of ``conf/`` has none (or a line names no folder).
Folders that hold data files rather than choices (gate margins, prices) are :data:`DATA_FOLDERS`.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import yaml

from evalkit.confdir import CONFIG_NAME, conf_dir, group_options
from evalkit.plugins import GROUPS as PLUGIN_GROUPS
from evalkit.plugins import plugin_names

GROUP_HELP = {
    "labelset": "the labelled set (or labelset.path=DIR for your own, labelset.limit=N for a quick look)",
    "chunker": "how documents are cut (chunk_size/chunk_overlap in characters)",
    "embedder": "the dense model for retriever=dense|hybrid",
    "retriever": "how each chunking's candidate pool is built, and its threshold grid (external: production's own)",
    "reranker": "the rerank stage over the pool, and its threshold grid",
    "sweep": "a grid preset: chunk_size x chunk_overlap x top_k x threshold",
    "objective": "what the recommendation maximises, under the gate's margins",
    "generator": "the model that answers: the answer check and the position experiment",
    "answer_check": "production and the decision's configs answered with their own contexts (off: retrieval only)",
    "position": "the position experiment after the sweep (position=off skips it)",
    "executor": "where units of work run: this process, or a ray cluster",
    "baseline": "the production config the report and the gate compare against (a project's presets)",
    "tracker": "log the sweep to an experiment tracker (+tracker=mlflow; pip install 'evalkit-sweep[tracking]')",
    "experiment": "a larger position experiment (+experiment=position)",
    "judge": "an advisory LLM judge of the answers (+judge=claude)",
}
"""One line per config group: what choosing an option of it does."""
DATA_FOLDERS = {
    "gate": "the gate's margins files (python -m evalkit.gate --margins NAME; objective.margins)",
    "pricing": "prices per provider with the date they were checked (cost.pricing_dir)",
}
"""Folders of conf/ that hold files read by name, not options chosen with group=option."""
GRID = {
    "chunk_size": "characters per chunk (number or list)",
    "chunk_overlap": "characters shared by neighbouring chunks",
    "top_k": "chunks returned per question (slices of one pool)",
    "threshold": "minimum score to return a chunk (number, list or auto)",
}
EXAMPLES = (
    "python -m evalkit.sweep sweep=quick position=off                       # one chunking, retrieval only",
    "python -m evalkit.sweep labelset.path=my-set chunk_size=[256,512] top_k=[3,5,10]",
    "python -m evalkit.sweep -m retriever=bm25,hybrid                        # one run per retriever",
)


def _options(group: str, search: tuple[Path, ...]) -> list[str]:
    """A group's yaml options, then what installed plugins add (marked, so a reader knows whose it is)."""
    options = group_options(group, search)
    if group in PLUGIN_GROUPS:
        options += [f"{name} (plugin)" for name in plugin_names(group) if name not in options]
    return options


def config_groups(search: tuple[Path, ...] = ()) -> list[str]:
    """Every folder of the config tree holding yaml files (a team's and evalkit's), Hydra's own left out."""
    names = set()
    for root in (*search, conf_dir()):
        names.update(p.name for p in root.iterdir() if p.is_dir() and any(p.glob("*.yaml")))
    return sorted(names - {"hydra"})


def groups_without_help(search: tuple[Path, ...] = ()) -> list[str]:
    """Config folders with no line in :data:`GROUP_HELP` or :data:`DATA_FOLDERS` (a test keeps this empty)."""
    return [g for g in config_groups(search) if g not in GROUP_HELP and g not in DATA_FOLDERS]


def defaults(search: tuple[Path, ...] = ()) -> dict[str, str]:
    """group -> its default option: evalkit's config.yaml defaults list, then a team's project.yaml over it."""
    chosen: dict[str, str] = {}
    files = [conf_dir() / f"{CONFIG_NAME}.yaml", *(root / "project.yaml" for root in search)]
    for path in files:
        if not path.is_file():
            continue
        entries = (yaml.safe_load(path.read_text(encoding="utf-8")) or {}).get("defaults") or []
        for entry in entries:
            if isinstance(entry, Mapping):
                for key, value in entry.items():
                    group = str(key).removeprefix("override ").strip()
                    if "/" not in group and value is not None:
                        chosen[group] = str(value)
    return chosen


def _group_lines(group: str, default: str | None, search: tuple[Path, ...]) -> list[str]:
    options = _options(group, search)
    marked = [f"{o} (default)" if o == default else o for o in options]
    return [f"  {group:<13} {GROUP_HELP.get(group, '')}", f"  {'':<13} options: {', '.join(marked)}"]


def help_text(search: tuple[Path, ...] = ()) -> str:
    """The help for ``search`` (a team's conf/ folders, searched before evalkit's own)."""
    chosen = defaults(search)
    groups = [g for g in config_groups(search) if g not in DATA_FOLDERS]
    lines = [
        "evalkit sweep: measure every chunk_size x chunk_overlap x top_k x threshold of a RAG retrieval config",
        "on a labelled set, recommend one, and write reports/<run_id>/ (results, report, gate inputs).",
        "",
        "usage: python -m evalkit.sweep [-m] [--config-dir DIR/conf] [--verbose] [key=value ...]",
        "",
        "config groups (group=option):",
    ]
    for group in [g for g in groups if g in chosen]:
        lines += _group_lines(group, chosen[group], search)
    lines += ["", "add-ons (with '+', not sweep axes):"]
    for group in [g for g in groups if g not in chosen]:
        lines += [
            f"  {'+' + group:<13} {GROUP_HELP.get(group, '')}",
            f"  {'':<13} options: {', '.join(_options(group, search))}",
        ]
    lines += ["", "config folders read by name:"]
    lines += [f"  {name:<13} {what}" for name, what in DATA_FOLDERS.items()]
    lines += ["", "grid keys (a number or a list; a list is swept):"]
    lines += [f"  {key:<14} {what}" for key, what in GRID.items()]
    lines += [
        "  also: pool_size, relevance_tau, seed, dry_run, budget_usd, run_id, reports_dir, progress",
        "",
        "examples:",
        *[f"  {example}" for example in EXAMPLES],
        "",
        "A team's own folder: python -m evalkit init DIR (then run from DIR, or pass --config-dir DIR/conf).",
        "Errors are one line, exit 2; --verbose (or HYDRA_FULL_ERROR=1) shows tracebacks.",
        'Shell completion: eval "$(evalkit-sweep -sc install=bash)". Hydra\'s own help: --hydra-help.',
    ]
    return "\n".join(lines)
