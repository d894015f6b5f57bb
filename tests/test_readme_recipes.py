"""The README's recipes that name code, run as written: a recipe cannot go stale silently.

"Where to add: a metric" is followed on a copy of evalkit (its module written from the README's block, its
name added to ``REPORTED`` as the README says), and "Evaluate your production retriever" runs its command
with a toy ``myteam.search:retrieve``; one sweep with both must show the metric and the retriever's configs
on the report's page.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

from tests.conftest import REPO

README = (REPO / "README.md").read_text(encoding="utf-8")

TOY_RETRIEVER = '''
def retrieve(queries, k, documents):
    """Ranks documents by the words they share with the question; the document's opening as the hit."""
    out = []
    for query in queries:
        words = set(query["question"].lower().split())
        ranked = sorted(documents, key=lambda d: (-len(words & set(d["text"].lower().split())), d["doc_id"]))
        out.append([{"doc_id": d["doc_id"], "start": 0, "end": min(len(d["text"]), 400), "score": 1.0 - i / 100}
                    for i, d in enumerate(ranked[:k])])
    return out
'''


def metric_recipe() -> tuple[str, str, str]:
    """The README's metric block: the file it names, its code, and the name it adds to REPORTED."""
    block = re.search(r"```python\n\s*# (evalkit/scoring/ir/\w+\.py)\n(.*?)```", README, re.S)
    assert block is not None, "the README's metric recipe has a module block"
    code = "\n".join(line.removeprefix("  ") for line in block.group(2).splitlines())
    reported = re.search(r'`REPORTED = \(\.\.\., "(\w+)"\)`', README)
    assert reported is not None, "the README's metric recipe names REPORTED"
    return block.group(1), code, reported.group(1)


def retriever_command() -> list[str]:
    """The README's command that sweeps a Python function as production's retriever."""
    line = next(line for line in README.splitlines() if "retriever.target=myteam.search:retrieve" in line)
    command = line.split("#")[0].split()
    assert command[:3] == ["python", "-m", "evalkit.sweep"], command
    return command[3:]


def test_the_readmes_metric_and_retriever_recipes_reach_the_page(tmp_path: Path, small_demo: Path) -> None:
    src = tmp_path / "src"
    skip = shutil.ignore_patterns("__pycache__", "*.egg-info", "*.pyc")
    for folder in ("evalkit", "conf", "labelsets"):
        shutil.copytree(REPO / folder, src / folder, ignore=skip)
    module, code, name = metric_recipe()
    (src / module).write_text(code, encoding="utf-8")
    registry = src / "evalkit" / "scoring" / "registry.py"
    text = registry.read_text(encoding="utf-8")
    reported = re.search(r"(?ms)^REPORTED = \(\n(.*?)^\)", text)
    assert reported is not None
    registry.write_text(text[: reported.end() - 1] + f'    "{name}",\n' + text[reported.end() - 1 :], encoding="utf-8")
    (tmp_path / "myteam").mkdir()
    (tmp_path / "myteam" / "__init__.py").write_text("", encoding="utf-8")
    (tmp_path / "myteam" / "search.py").write_text(TOY_RETRIEVER, encoding="utf-8")

    overrides = ["top_k=[1,3]", "pool_size=5", "position=off", "answer_check=off", "progress=false", "run_id=doc"]
    args = [*retriever_command(), f"labelset.path={small_demo}", f"reports_dir={tmp_path / 'reports'}", *overrides]
    env = os.environ | {"PYTHONPATH": os.pathsep.join([str(src), str(tmp_path)])}
    done = subprocess.run([sys.executable, "-m", "evalkit.sweep", *args], cwd=tmp_path, env=env,
                          capture_output=True, text=True)  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    run = tmp_path / "reports" / "doc"
    summary = (run / "summary.csv").read_text(encoding="utf-8")
    assert summary.splitlines()[0].split(",").count(name) == 1, "the metric is a column of the results"
    page = (run / "index.html").read_text(encoding="utf-8")
    label = re.search(r'Column\("\w+", "([^"]+)"', code)
    assert label is not None and label.group(1) in page, "the metric is shown on the page"
    assert "external|external|none|k3|t0" in page, "the README's retriever is scored and shown"
    review = json.loads((run / "review.json").read_text(encoding="utf-8"))
    assert name in json.dumps(review), "the review the page renders carries it"


def test_every_answer_check_the_readme_names_composes() -> None:
    """``answer_check=<name>`` in the README is a file of conf/answer_check/, and the README's own size
    (``answer_check=custom answer_check.questions=N``) is read as written (``answer_check=custom`` was named
    once and exited 2 when there was no such file)."""
    from hydra import compose, initialize_config_dir
    from omegaconf import OmegaConf

    from evalkit.answers.check.settings import AnswerCheckSettings

    options = {path.stem for path in (REPO / "conf" / "answer_check").glob("*.yaml")}
    named = set(re.findall(r"answer_check=(\w+)", README))
    assert named and named <= options, named - options
    custom = re.search(r"`(answer_check=custom answer_check\.questions=(\d+))`", README)
    assert custom is not None, "the README says how to size the check yourself"
    with initialize_config_dir(version_base="1.3", config_dir=str(REPO / "conf")):
        cfg = compose(config_name="config", overrides=custom.group(1).split())
    settings = AnswerCheckSettings.from_config(OmegaConf.to_container(cfg.answer_check, resolve=True))
    assert settings.preset == "custom" and settings.questions == int(custom.group(2))
