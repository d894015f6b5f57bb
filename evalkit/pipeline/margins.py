"""Reading the gate's margins file (``conf/gate/<name>.yaml`` or a path): for the gate and the recommendation."""

from __future__ import annotations

from pathlib import Path

import yaml

from evalkit.pipeline.config import CONF_DIR
from evalkit.scoring.gatecheck import GateConfig, GateError, parse_margins

GATE_CONF = CONF_DIR / "gate"


def load_gate_config(name_or_path: str) -> GateConfig:
    """Read and validate a margins file (a path, or a name under conf/gate/)."""
    path = Path(name_or_path)
    if not path.is_file():
        path = GATE_CONF / f"{name_or_path}.yaml"
    if not path.is_file():
        raise GateError(f"margins: {name_or_path!r} is neither a file nor a name in {GATE_CONF}")
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except yaml.YAMLError as exc:
        raise GateError(f"{path}: invalid YAML ({str(exc).splitlines()[0]})") from exc
    return parse_margins(raw, str(path))
