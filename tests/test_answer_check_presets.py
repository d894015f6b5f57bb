"""The answer check's settings have one source of defaults, and every preset the README names runs.

The dataclass (:class:`AnswerCheckSettings`) holds the defaults; ``smoke.yaml`` (the sweep's default) states
exactly them, and the other presets differ only in their name and their sizes. Hydra needs every key in the
group's files to accept ``answer_check.questions=10`` on the command line, so the files list them, and this
test keeps them from drifting apart.
"""

from __future__ import annotations

import dataclasses
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from evalkit.answers.check.settings import PRESETS, AnswerCheckSettings

CONF = Path(__file__).resolve().parents[1] / "conf" / "answer_check"
SIZES = {"preset", "questions", "max_configs"}
"""What a preset may set differently from the defaults."""


def _values(settings: AnswerCheckSettings) -> dict[str, object]:
    return {f.name: getattr(settings, f.name) for f in dataclasses.fields(settings)}


def test_every_preset_has_a_file_and_smoke_states_the_defaults() -> None:
    assert {p.stem for p in CONF.glob("*.yaml")} == set(PRESETS)
    smoke = AnswerCheckSettings.from_config(yaml.safe_load((CONF / "smoke.yaml").read_text(encoding="utf-8")), seed=0)
    assert _values(smoke) == _values(dataclasses.replace(AnswerCheckSettings(), seed=0))


@pytest.mark.parametrize("preset", ["custom", "powered"])
def test_other_presets_change_only_their_sizes(preset: str) -> None:
    raw = yaml.safe_load((CONF / f"{preset}.yaml").read_text(encoding="utf-8"))
    found = _values(AnswerCheckSettings.from_config(raw, seed=0))
    defaults = _values(dataclasses.replace(AnswerCheckSettings(), seed=0))
    assert set(raw) == set(defaults), "every key in the file, so the command line can override it"
    assert {k for k in defaults if found[k] != defaults[k]} <= SIZES
    assert found["preset"] == preset


def test_answer_check_custom_runs_as_the_readme_writes_it(tmp_path: Path) -> None:
    """``answer_check=custom answer_check.questions=10`` composes and plans (a dry run: nothing answered)."""
    done = subprocess.run(
        [sys.executable, "-m", "evalkit.sweep", "answer_check=custom", "answer_check.questions=10",
         "generator=fake", "position=off", "dry_run=true", f"reports_dir={tmp_path / 'r'}",
         f"cache_path={tmp_path / 'c.sqlite'}"],
        capture_output=True, text=True, cwd=tmp_path, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
