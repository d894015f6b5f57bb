"""``--help`` and a config error load no stage: the heavy libraries wait for a config that runs.

Each case runs the real entry point in a fresh interpreter and lists which heavy modules it
imported (``sys.modules`` after ``main()`` exits). No wall time is measured here (the machine
is shared): ``benchmarks/startup.py`` times the same two commands.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

HEAVY = ("scipy", "pandas", "pyarrow", "torch", "onnxruntime", "xllamacpp", "ray", "lancedb", "usearch", "anthropic")
"""What a sweep needs only once it runs (statistics, tables, model runtimes, the cluster, the SDKs)."""

PROBE = """
import json, sys
from evalkit.sweep import main
try:
    main(sys.argv[1:])
except SystemExit as exc:
    code = exc.code
else:
    code = 0
loaded = sorted({name.split(".")[0] for name in sys.modules} & set(json.loads(sys.stdin.readline())))
print(json.dumps({"code": code, "loaded": loaded}))
"""


def loaded_after(args: list[str], cwd: Path) -> dict[str, object]:
    environ = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-c", PROBE, *args],
        input=json.dumps(HEAVY) + "\n",
        cwd=cwd,
        env=environ,
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize(
    ("args", "code"),
    [(["--help"], 0), (["top_k=abc"], 2), (["retriever=hybird"], 2), (["chunk_size=0"], 2)],
    ids=["help", "bad-value", "unknown-option", "out-of-range"],
)
def test_help_and_config_errors_load_no_stage(args: list[str], code: int, tmp_path: Path) -> None:
    found = loaded_after(args, tmp_path)
    assert found["code"] == code
    assert found["loaded"] == []


def test_the_probe_sees_a_stage_that_is_loaded(tmp_path: Path) -> None:
    """The probe can fail: a config that composes and plans loads the stages (dry_run writes no run)."""
    found = loaded_after(["dry_run=true", f"reports_dir={tmp_path / 'reports'}", "labelset=demo"], tmp_path)
    assert found["code"] == 0
    assert "pandas" in found["loaded"] and "scipy" in found["loaded"]
