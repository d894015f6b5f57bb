"""Reading a production file (``conf/baseline/production.yaml``) on its own, as a grid point.

The sweep reads production through Hydra with the rest of its config; the CI gate also needs the production
of another commit (the pull request's base branch), which is one small YAML file outside any composed config.
Both are checked by the same typed settings (:class:`~evalkit.pipeline.config.BaselineSettings`).
"""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path

import yaml

from evalkit.pipeline.config import BaselineSettings
from evalkit.run.folder import BaselinePoint
from evalkit.scoring.gatecheck import GateError
from evalkit.settings import ConfigError, parse_settings

POINT_KEYS = ("chunk_size", "chunk_overlap", "top_k")
"""Keys a production file must set (a null threshold means the lowest of the grid)."""


def load_production_point(path: str | Path) -> BaselinePoint:
    """The grid point a production file names.

    Raises:
        GateError: the file is missing, not YAML, or not a complete production point (one line naming it).
    """
    where = str(path)
    try:
        raw = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise GateError(f"{where}: cannot read the production file ({exc.strerror or exc})") from exc
    except yaml.YAMLError as exc:
        raise GateError(f"{where}: invalid YAML ({str(exc).splitlines()[0]})") from exc
    try:
        settings = parse_settings(BaselineSettings, raw, where)
    except ConfigError as exc:
        raise GateError(str(exc)) from exc
    missing = [key for key in POINT_KEYS if getattr(settings, key) is None]
    if missing:
        raise GateError(f"{where}: {missing[0]} is missing (a production file names chunk_size, chunk_overlap, top_k)")
    return BaselinePoint(**asdict(settings))
