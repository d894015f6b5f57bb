"""Settings read only after the retrieval sweep are checked when the plan is built: one line, before any chunk.

A bad margins file, a generator URL that is not http(s), an unset generator key and an answer-check id that is
not a grid point each raise one ConfigError from ``build_plan`` (the sweep prints it and exits 2); the good
ones build a plan."""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
import yaml
from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf

from evalkit.chunking.chunkers import CHUNKERS
from evalkit.pipeline.config import read_config
from evalkit.pipeline.plan import SweepPlan, build_plan
from evalkit.retrieval.embedding.registry import EMBEDDERS
from evalkit.settings import ConfigError
from tests.conftest import REPO

KEY_ENV = "EVALKIT_TEST_PLAN_KEY"


def plan_of(overrides: Sequence[str]) -> SweepPlan:
    with initialize_config_dir(version_base="1.3", config_dir=str(REPO / "conf")):
        cfg = compose(config_name="config", overrides=["retriever=bm25", "chunk_size=[160]", *overrides])
    plain: dict[str, Any] = OmegaConf.to_container(cfg, resolve=True)  # type: ignore[assignment]
    return build_plan(read_config(plain), tuple(CHUNKERS), tuple(EMBEDDERS))


def refused(overrides: Sequence[str]) -> str:
    with pytest.raises(ConfigError) as err:
        plan_of(overrides)
    line = str(err.value)
    assert "\n" not in line and "Traceback" not in line, line
    return line


def margins(tmp_path: Path, text: str) -> str:
    path = tmp_path / "margins.yaml"
    path.write_text(text, encoding="utf-8")
    return f"objective.margins={path}"


@pytest.mark.parametrize(
    ("max_drop", "says"),
    [(-0.02, "non-negative"), (math.nan, "non-negative"), ("'a lot'", "is not a number"), ("null", "not a number")],
)
def test_a_bad_max_drop_is_one_line_naming_the_file(tmp_path: Path, max_drop: object, says: str) -> None:
    value = ".nan" if isinstance(max_drop, float) and math.isnan(max_drop) else max_drop
    line = refused([margins(tmp_path, f"checks:\n  recall:\n    max_drop: {value}\n")])
    assert line.startswith("objective.margins: ") and "margins.yaml" in line and says in line, line


@pytest.mark.parametrize(
    "text",
    ["checks:\n  recal:\n    max_drop: 0.02\n", "checks: {}\n", "[1, 2]\n", "checks:\n  recall:\n    max_dropp: 0.1\n"],
)
def test_a_misspelt_or_empty_margins_file_is_one_line(tmp_path: Path, text: str) -> None:
    assert refused([margins(tmp_path, text)]).startswith("objective.margins: ")


def test_a_missing_unreadable_or_folder_margins_file_is_one_line(tmp_path: Path) -> None:
    assert "neither a file nor a name" in refused([f"objective.margins={tmp_path / 'none.yaml'}"])
    assert "neither a file nor a name" in refused([f"objective.margins={tmp_path}"])
    binary = tmp_path / "binary.yaml"
    binary.write_bytes(b"\xff\xfe\x00checks")
    assert refused([f"objective.margins={binary}"]).startswith("objective.margins: ")


def test_a_good_margins_file_builds_a_plan(tmp_path: Path) -> None:
    good = yaml.safe_dump({"checks": {"recall": {"max_drop": 0.02}}})
    assert plan_of([margins(tmp_path, good)]).objective.margins.endswith("margins.yaml")


@pytest.mark.parametrize("url", ["file:///etc", "not-a-url", "ftp://h/v1", "http://"])
def test_a_generator_url_that_is_not_http_is_one_line(url: str) -> None:
    line = refused(
        ["generator=openai", f"generator.base_url={url}", "generator.api_key_env=null", "answer_check=smoke"]
    )
    assert line.startswith("generator.base_url: ") and url in line, line


def test_a_missing_generator_key_is_one_line_naming_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(KEY_ENV, raising=False)
    line = refused(["generator=openai", f"generator.api_key_env={KEY_ENV}", "answer_check=smoke"])
    assert line.startswith(f"{KEY_ENV} is not set"), line
    monkeypatch.setenv(KEY_ENV, "sk-never-shown")
    assert plan_of(["generator=openai", f"generator.api_key_env={KEY_ENV}", "answer_check=smoke"]).generator
    monkeypatch.delenv(KEY_ENV)
    assert plan_of(["generator=openai", f"generator.api_key_env={KEY_ENV}", "answer_check=off", "position=off"])


def test_an_answer_check_id_outside_the_grid_is_one_line_and_a_grid_point_is_accepted() -> None:
    line = refused(["answer_check=smoke", "answer_check.configs=[recursive-s999-o0|bm25|none|k5|t0]"])
    assert line.startswith("answer_check.configs: 'recursive-s999-o0|bm25|none|k5|t0' is not a config"), line
    plan = plan_of(["answer_check=smoke", "top_k=[5]", "threshold=[0]"])
    point = f"{plan.chunkings[0].key}|bm25|none|k5|t0"
    assert plan_of(["answer_check=smoke", "top_k=[5]", "threshold=[0]", f"answer_check.configs=[{point}]"])


def sweep_in_process(overrides: list[str]) -> tuple[int, list[str]]:
    """The sweep's entry point in process, the answer check as the overrides say: (exit code, stderr lines)."""
    import contextlib
    import io

    from evalkit.overrides import composition_error
    from evalkit.sweep import sweep

    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        assert composition_error(REPO / "conf", overrides) is None
        with initialize_config_dir(version_base="1.3", config_dir=str(REPO / "conf")):
            cfg = compose(config_name="config", overrides=overrides)
        try:
            sweep(cfg)
        except SystemExit as exc:
            return int(exc.code or 0), err.getvalue().splitlines()
    return 0, err.getvalue().splitlines()


@pytest.mark.parametrize(
    "setting",
    [
        "objective.margins={bad}",
        "generator.base_url=file:///etc",
        "answer_check.configs=[recursive-s999-o0|bm25|none|k1|t0]",
    ],
)
def test_the_sweep_stops_on_a_bad_setting_with_one_line_before_the_first_chunk(tmp_path: Path, setting: str) -> None:
    """End to end through the sweep's entry point: exit 2, one error line, no traceback, no chunk computed."""
    bad = tmp_path / "margins.yaml"
    bad.write_text("checks:\n  recall:\n    max_drop: -0.5\n", encoding="utf-8")
    code, lines = sweep_in_process(
        [f"labelset.path={REPO / 'labelsets' / 'demo'}", f"reports_dir={tmp_path / 'r'}", "run_id=stopped",
         f"cache_path={tmp_path / 'c.sqlite'}", "progress=false", "report=false", "retriever=bm25",
         "answer_check=smoke", "generator=openai", "generator.api_key_env=null", setting.format(bad=bad)]
    )  # fmt: skip
    errors = [line for line in lines if "error" in line]
    assert code == 2 and len(errors) == 1 and not any("Traceback" in line for line in lines), lines
    assert not list((tmp_path / "r").glob("*/chunkings/*")), "nothing computed"
