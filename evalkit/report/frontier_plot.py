"""The frontier plot: quality against a cost per config, every config a point, labels placed without collisions."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from evalkit.report.plots import BLUE, GREY, RED, new_figure


@dataclass(frozen=True)
class FrontierPoint:
    """One config on a frontier plot."""

    config_id: str
    label: str
    """Short name printed beside the point (``s512 o64 k5 t0``)."""
    x: float
    y: float
    """A proportion (plotted as %)."""
    on_front: bool
    mark: str | None = None
    """``recommended`` or ``production``: drawn distinctly and always labelled."""


LABEL_FONT = 6.5
"""Point size of the config labels: small, still readable at the page's width."""


def _label_box(x: float, y: float, dx: float, dy: float, text: str, scale: tuple[float, float]) -> tuple[float, ...]:
    """The label's box in axes fractions, from its anchor and offset in points (width estimated per character)."""
    width = 0.6 * LABEL_FONT * len(text) / scale[0]
    height = 1.25 * LABEL_FONT / scale[1]
    left = x + dx / scale[0]
    bottom = y + dy / scale[1]
    return (left, bottom, left + width, bottom + height)


def _overlaps(box: tuple[float, ...], placed: Sequence[tuple[float, ...]]) -> bool:
    return any(not (box[2] < b[0] or b[2] < box[0] or box[3] < b[1] or b[3] < box[1]) for b in placed)


def frontier_figure(
    points: Sequence[FrontierPoint], xlabel: str, ylabel: str, title: str, log_x: bool = False
) -> object:
    """Quality against a cost per config: every config a point, the Pareto front joined, the marked ones distinct.

    Labels go where they do not overlap one already placed: the marked configs first, then the front, then
    the rest (a label that fits nowhere is left out, except for marked and front configs, which always get one).
    """
    width, height = 9.0, 4.8
    fig = new_figure(width, height)
    ax = fig.add_subplot()  # type: ignore[attr-defined]
    xs = np.array([p.x for p in points], dtype=float)
    ys = 100 * np.array([p.y for p in points], dtype=float)
    ax.scatter(xs, ys, s=12, color=GREY, zorder=2, label="config")
    front = sorted((p for p in points if p.on_front), key=lambda p: p.x)
    ax.plot([p.x for p in front], [100 * p.y for p in front], "-o", color=BLUE, ms=4, lw=1.4, zorder=3,
            label="Pareto front")  # fmt: skip
    styles = {"recommended": ("*", RED, 150), "production": ("D", "#111111", 60)}
    for name, (marker, colour, size) in styles.items():
        marked = [p for p in points if p.mark == name]
        if marked:
            ax.scatter([p.x for p in marked], [100 * p.y for p in marked], marker=marker, s=size, color=colour,
                       edgecolors="white", linewidths=0.8, zorder=5, label=name)  # fmt: skip
    if log_x:
        ax.set_xscale("log")
    pad_x = (np.nanmax(xs) - np.nanmin(xs)) * 0.04 or 1.0
    pad_y = (np.nanmax(ys) - np.nanmin(ys)) * 0.06 or 1.0
    if not log_x:
        ax.set_xlim(np.nanmin(xs) - pad_x, np.nanmax(xs) + 4 * pad_x)
    ax.set_ylim(np.nanmin(ys) - pad_y, np.nanmax(ys) + 2 * pad_y)
    _label_points(ax, points, (0.86 * width * 72, 0.82 * height * 72))
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.legend(loc="lower right", fontsize=7)
    return fig


def _clusters(points: Sequence[FrontierPoint], to_axes: object, log_x: bool, scale: tuple[float, float]) -> list:
    """Points closer than ~3 points (of type) on the page share one label: they are one spot to the eye."""
    groups: list[tuple[tuple[float, float], list[FrontierPoint]]] = []
    order = sorted(points, key=lambda p: (p.mark is None, not p.on_front, -p.y, p.x))
    for p in order:
        if not (np.isfinite(p.x) and np.isfinite(p.y)):
            continue
        fx, fy = to_axes.transform((np.log10(p.x) if log_x else p.x, 100 * p.y))  # type: ignore[attr-defined]
        for (gx, gy), members in groups:
            if abs(fx - gx) * scale[0] < 3 and abs(fy - gy) * scale[1] < 3 and (p.mark is None):
                members.append(p)
                break
        else:
            groups.append(((fx, fy), [p]))
    return groups


def _label_points(ax: object, points: Sequence[FrontierPoint], scale: tuple[float, float]) -> None:
    """Place labels greedily in priority order (marked, front, rest) where they do not collide.

    Coincident points share a label (``+n`` more); a label that does not fit beside its point is tried
    further away with a thin leader line; the marked and front ones are placed even if they must overlap.
    """
    to_axes = ax.transLimits  # type: ignore[attr-defined]
    log_x = ax.get_xscale() == "log"  # type: ignore[attr-defined]
    placed: list[tuple[float, ...]] = []
    for (fx, fy), members in _clusters(points, to_axes, log_x, scale):
        p = members[0]
        must = p.mark is not None or any(m.on_front for m in members)
        text = p.label + (f" ({p.mark})" if p.mark else "") + (f" +{len(members) - 1}" if len(members) > 1 else "")
        w = 0.6 * LABEL_FONT * len(text)
        offsets = [(4, 2), (4, -8), (-4 - w, 2), (-4 - w, -8)]
        offsets += [(dx, dy) for r in (14, 24, 36) for dx, dy in ((8, r), (8, -r - 6), (-8 - w, r), (-8 - w, -r - 6))]
        chosen = None
        for dx, dy in offsets:
            box = _label_box(fx, fy, dx, dy, text, scale)
            if box[0] >= 0 and box[2] <= 1.0 and box[1] >= 0 and box[3] <= 1.0 and not _overlaps(box, placed):
                chosen = (dx, dy, box)
                break
        if chosen is None and must:
            dx, dy = offsets[0]
            chosen = (dx, dy, _label_box(fx, fy, dx, dy, text, scale))
        if chosen is None:
            continue
        dx, dy, box = chosen
        placed.append(box)
        colour = RED if p.mark == "recommended" else "#111111" if p.mark else BLUE if must else "#5b6577"
        leader = {"arrowstyle": "-", "color": colour, "lw": 0.5, "alpha": 0.6} if abs(dy) > 10 else None
        ax.annotate(text, (p.x, 100 * p.y), xytext=(dx, dy), textcoords="offset points", fontsize=LABEL_FONT,  # type: ignore[attr-defined]
                    color=colour, zorder=6, fontweight="bold" if p.mark else "normal", arrowprops=leader)  # fmt: skip
