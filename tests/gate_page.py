"""What a reviewer sees first in a gated run's report, read in headless Chromium and held against gate.md.

Both CI recipe tests (an evalkit-built production and an external one) upload ``reports/ci/index.html``; its
first screen must say what the gate said, with gate.md's own rows, so the artefact never reads the opposite.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

SCREEN = {"width": 1280, "height": 800}


def gate_md_rows(run: Path) -> list[list[str]]:
    """gate.md's table rows (header dropped), cell by cell, without its markdown emphasis."""
    text = (run / "gate.md").read_text(encoding="utf-8")
    rows = [line.split("|")[1:-1] for line in text.splitlines() if line.startswith("| ") and "---" not in line]
    return [[cell.strip().replace("**", "") for cell in row] for row in rows[1:]]


def assert_the_page_leads_with_the_gate(browser: Any, run: Path) -> dict[str, Any]:
    """The first section of ``run``'s page is the gate: its verdict on the first screen, its route, both config
    ids and gate.md's rows; gate.json, returned for the caller's own checks."""
    gate = json.loads((run / "gate.json").read_text(encoding="utf-8"))
    page = browser.new_page(viewport=SCREEN)
    try:
        page.goto((run / "index.html").as_uri())
        page.wait_for_load_state("load")
        first = page.locator("main > section").first
        assert first.get_attribute("id") == "gate"
        box = first.locator(".big").bounding_box()
        assert box is not None and box["y"] + box["height"] <= SCREEN["height"], "the verdict is on the first screen"
        text = " ".join(first.inner_text().split())
        assert f"evalkit gate: {gate['verdict'].upper()}" in text, text
        if gate.get("route"):
            assert f"Route: {' '.join(gate['route'].split())}" in text, text
        assert gate["candidate"]["config_id"] in text and gate["baseline"]["config_id"] in text, text
        cells = [[c.strip() for c in row.locator("td").all_inner_texts()] for row in first.locator("tbody tr").all()]
        assert cells == gate_md_rows(run), (cells, gate_md_rows(run))
    finally:
        page.close()
    return gate
