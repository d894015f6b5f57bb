"""``python -m evalkit.sweep --help``: evalkit's groups, what each sets, the grid keys, examples.

Hydra's stock help lists every config group it finds, including ones that are
no sweep option (gate margins, price files): this text lists only the groups a
user chooses, with their options as found on the search path (a team's
``conf/`` first), so a project's own presets show up too.
"""

from __future__ import annotations

from pathlib import Path

from evalkit.confdir import group_options
from evalkit.plugins import GROUPS as PLUGIN_GROUPS
from evalkit.plugins import plugin_names

GROUPS = {
    "labelset": "the labelled set (or labelset.path=DIR for your own, labelset.limit=N for a quick look)",
    "chunker": "how documents are cut (chunk_size/chunk_overlap in characters)",
    "embedder": "the dense model for retriever=dense|hybrid",
    "retriever": "how each chunking's candidate pool is built, and its threshold grid",
    "reranker": "the rerank stage over the pool, and its threshold grid",
    "sweep": "a grid preset: chunk_size x chunk_overlap x top_k x threshold",
    "objective": "what the recommendation maximises, under the gate's margins",
    "generator": "the model that answers the position experiment",
    "position": "the position experiment after the sweep (position=off skips it)",
    "baseline": "the production config the report and the gate compare against (a project's presets)",
}
ADD_ONS = {
    "tracker": "log the sweep to an experiment tracker (+tracker=mlflow; pip install 'evalkit-sweep[tracking]')",
    "experiment": "a larger position experiment (+experiment=position)",
    "judge": "an advisory LLM judge of the answers (+judge=claude)",
}
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


def help_text(search: tuple[Path, ...] = ()) -> str:
    """The help for ``search`` (a team's conf/ folders, searched before evalkit's own)."""
    lines = [
        "evalkit sweep: measure every chunk_size x chunk_overlap x top_k x threshold of a RAG retrieval config",
        "on a labelled set, recommend one, and write reports/<run_id>/ (results, report, gate inputs).",
        "",
        "usage: python -m evalkit.sweep [-m] [--config-dir DIR/conf] [--verbose] [key=value ...]",
        "",
        "config groups (group=option):",
    ]
    for group, what in GROUPS.items():
        options = _options(group, search)
        if options:
            lines += [f"  {group:<10} {what}", f"  {'':<10} options: {', '.join(options)}"]
    lines += ["", "add-ons (with '+', not sweep axes):"]
    lines += [f"  {'+' + group:<12} {what}" for group, what in ADD_ONS.items() if _options(group, search)]
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
