"""Figure builders (pure: data in, a matplotlib Figure out) and PNG encoding.

Figures are built on ``matplotlib.figure.Figure`` with the Agg canvas, never
through pyplot, so nothing global (backend, open-figure registry) changes.
Call builders inside :func:`draw`, which applies the report's style and the
CJK font for the duration of one figure and returns base64 PNG.
"""

from __future__ import annotations

import base64
import io
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from evalkit.report.fonts import FontStatus
from evalkit.run.review import Interval

BLUE, ORANGE, GREEN, RED, GREY = "#2457c5", "#d9730d", "#1a7f37", "#b42318", "#9aa4b5"
DPI = 110


@dataclass(frozen=True)
class Series:
    """One line of a line plot: x values, means and optional CI bounds."""

    label: str
    x: tuple[float, ...]
    y: tuple[float, ...]
    low: tuple[float, ...] | None = None
    high: tuple[float, ...] | None = None
    emphasis: bool = True


def series_from_intervals(label: str, x: Sequence[float], cis: Sequence[Interval | None]) -> Series:
    """A line with CI whiskers from bootstrap intervals (NaN where an interval is missing)."""
    nan = float("nan")
    return Series(
        label,
        tuple(float(v) for v in x),
        tuple(c.mean if c else nan for c in cis),
        tuple(c.low if c else nan for c in cis),
        tuple(c.high if c else nan for c in cis),
    )


def _style(font: FontStatus) -> dict[str, object]:
    return {
        "font.family": font.families,  # a list: matplotlib falls back per glyph (3.6+)
        "font.size": 9,
        "axes.titlesize": 10,
        "axes.labelsize": 9,
        "axes.spines.top": False,
        "axes.spines.right": False,
        "axes.grid": True,
        "grid.color": "#e6e9ef",
        "grid.linewidth": 0.8,
        "legend.frameon": False,
        "legend.fontsize": 8,
        "axes.unicode_minus": False,
    }


def draw(build: Callable[[], object], font: FontStatus) -> str:
    """Build a figure under the report's style and return it as base64 PNG."""
    import matplotlib
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    with matplotlib.rc_context(_style(font)):
        fig = build()
        FigureCanvasAgg(fig)  # type: ignore[arg-type]
        buffer = io.BytesIO()
        fig.savefig(buffer, format="png", dpi=DPI, bbox_inches="tight")  # type: ignore[attr-defined]
    return base64.b64encode(buffer.getvalue()).decode("ascii")


def new_figure(width: float, height: float) -> object:
    """An empty figure of ``width`` x ``height`` inches, constrained layout: every plot of the report starts here."""
    from matplotlib.figure import Figure

    return Figure(figsize=(width, height), layout="constrained")


def heatmaps(grids: Mapping[str, pd.DataFrame], marks: Mapping[str, tuple[int, int]], lower_better: set[str]) -> object:
    """One chunk_size x overlap heatmap per metric; values are proportions shown as percentages.

    ``grids``: title -> frame (index chunk_size, columns overlap). ``marks``: label -> (size, overlap)
    cell to outline (the recommended and baseline configs).
    """
    from matplotlib.ticker import MaxNLocator

    n = len(grids)
    cols = min(n, 3)
    rows = -(-n // cols)
    fig = new_figure(3.4 * cols, 2.6 * rows + 0.3)
    axes = fig.subplots(rows, cols, squeeze=False)  # type: ignore[attr-defined]
    styles = {0: ("-", "#111111"), 1: ("--", RED)}
    for ax, (title, grid) in zip(axes.flat, grids.items(), strict=False):
        data = grid.to_numpy(dtype=float)
        cmap = "viridis_r" if title in lower_better else "viridis"
        low, high = float(np.nanmin(data)), float(np.nanmax(data))
        flat = high - low < 1e-12  # every cell equal: a neutral scale, dark text
        image = ax.imshow(data, cmap=cmap, aspect="auto", vmin=low, vmax=high + 0.01 * flat)
        ax.set_xticks(range(grid.shape[1]), [str(c) for c in grid.columns])
        ax.set_yticks(range(grid.shape[0]), [str(i) for i in grid.index])
        ax.set_xlabel("chunk_overlap")
        ax.set_ylabel("chunk_size")
        ax.set_title(title)
        ax.grid(False)
        mid = (np.nanmin(data) + np.nanmax(data)) / 2
        for (i, j), v in np.ndenumerate(data):
            if np.isfinite(v):
                dark = not flat and (v < mid) != (title in lower_better)
                ax.text(
                    j, i, f"{100 * v:.1f}", ha="center", va="center", fontsize=8, color="white" if dark else "black"
                )
        for m, (label, (size, overlap)) in enumerate(marks.items()):
            if size in grid.index and overlap in grid.columns:
                i, j = list(grid.index).index(size), list(grid.columns).index(overlap)
                line, color = styles.get(m, ("-", GREY))
                ax.add_patch(_box(j, i, line, color, label))
        bar = fig.colorbar(image, ax=ax, shrink=0.8, format=lambda v, _: f"{100 * v:.1f}%")  # type: ignore[attr-defined]
        bar.locator = MaxNLocator(4)
        bar.update_ticks()
    for ax in list(axes.flat)[n:]:
        ax.set_visible(False)
    if marks:
        handles = [_box(0, 0, *styles.get(m, ("-", GREY)), label) for m, label in enumerate(marks)]
        fig.legend(handles=handles, loc="outside lower center", ncols=len(handles))  # type: ignore[attr-defined]
    return fig


def _box(x: float, y: float, line: str, color: str, label: str) -> object:
    from matplotlib.patches import Rectangle

    return Rectangle((x - 0.47, y - 0.47), 0.94, 0.94, fill=False, lw=2.2, ls=line, ec=color, label=label)


def lines(
    panels: Mapping[str, Sequence[Series]],
    xlabel: str,
    percent: bool = True,
    vlines: Mapping[str, tuple[float, str]] | None = None,
    log_x: bool = False,
) -> object:
    """Side-by-side line panels; emphasised series get CI whiskers, others are thin context lines.

    ``vlines``: panel title -> (x, label) marker, e.g. the top_k plateau.
    """
    n = len(panels)
    fig = new_figure(4.4 * n, 3.1)
    axes = fig.subplots(1, n, squeeze=False)[0]  # type: ignore[attr-defined]
    palette = [BLUE, ORANGE, GREEN, RED, "#7c3aed", "#0e7490"]
    for ax, (title, group) in zip(axes, panels.items(), strict=True):
        colour = 0
        for s in group:
            x, y = np.array(s.x), np.array(s.y)
            scale = 100.0 if percent else 1.0
            if s.emphasis:
                c = palette[colour % len(palette)]
                colour += 1
                ax.plot(x, scale * y, marker="o", ms=4, lw=2, color=c, label=s.label, zorder=3)
                if s.low is not None and s.high is not None:
                    low, high = scale * np.array(s.low), scale * np.array(s.high)
                    ax.fill_between(x, low, high, color=c, alpha=0.15, lw=0, zorder=2)
            else:
                ax.plot(x, scale * y, lw=1, color=GREY, alpha=0.7, label=s.label, zorder=1)
        if vlines and title in vlines:
            at, label = vlines[title]
            ax.axvline(at, color=RED, ls="--", lw=1.2)
            ax.annotate(
                label,
                (at, 0.02),
                xycoords=("data", "axes fraction"),
                xytext=(4, 0),
                textcoords="offset points",
                color=RED,
                fontsize=8,
            )
        if log_x:
            ax.set_xscale("log", base=2)
        xs = sorted({v for s in group for v in s.x})
        if len(xs) <= 8:
            ax.set_xticks(xs, [f"{v:g}" for v in xs])
            ax.minorticks_off()
        ax.set_title(title)
        ax.set_xlabel(xlabel)
        if percent:
            ax.set_ylabel("%")
        handles, labels = ax.get_legend_handles_labels()
        unique = dict(zip(labels, handles, strict=True))
        if len(unique) <= 8:
            ax.legend(unique.values(), unique.keys(), loc="best")
    return fig


def bars(panels: Mapping[str, Mapping[str, float]]) -> object:
    """Horizontal bar counts, one panel per breakdown (labels may be Chinese)."""
    n = len(panels)
    cols = min(n, 3)
    rows = -(-n // cols)
    height = max(1.9, 0.26 * max((len(v) for v in panels.values()), default=1) + 0.8)
    fig = new_figure(3.6 * cols, height * rows)
    axes = list(fig.subplots(rows, cols, squeeze=False).flat)  # type: ignore[attr-defined]
    for ax in list(axes)[n:]:
        ax.set_visible(False)
    for ax, (title, counts) in zip(axes, panels.items(), strict=False):
        labels = list(counts)[::-1]
        values = [counts[k] for k in labels]
        ax.barh(range(len(labels)), values, color=BLUE, height=0.6)
        ax.set_yticks(range(len(labels)), labels)
        for i, v in enumerate(values):
            ax.text(v, i, f" {v:,.0f}", va="center", fontsize=8)
        ax.set_title(title)
        ax.grid(axis="y", visible=False)
        ax.set_xlim(0, max(values, default=1) * 1.2 + 1)
    return fig


def grouped_bars(
    groups: Sequence[str], arms: Mapping[str, Sequence[Interval | None]], ylabel: str = "accuracy %"
) -> object:
    """Accuracy by group (gold position bucket) per arm, with CI whiskers."""
    fig = new_figure(5.6, 3.1)
    ax = fig.add_subplot()  # type: ignore[attr-defined]
    width = 0.8 / max(len(arms), 1)
    palette = [BLUE, ORANGE, GREEN, RED, "#7c3aed"]
    for a, (arm, cis) in enumerate(arms.items()):
        x = np.arange(len(groups)) + (a - (len(arms) - 1) / 2) * width
        mean = np.array([100 * c.mean if c else np.nan for c in cis])
        err = np.array([[100 * (c.mean - c.low), 100 * (c.high - c.mean)] if c else [np.nan, np.nan] for c in cis]).T
        ax.bar(x, mean, width * 0.92, yerr=err, capsize=3, color=palette[a % len(palette)], label=arm)
    ax.set_xticks(range(len(groups)), list(groups))
    ax.set_ylabel(ylabel)
    ax.set_ylim(0, 105)
    ax.legend(loc="lower right")
    ax.grid(axis="x", visible=False)
    return fig


def score_histograms(
    relevant: Sequence[float], irrelevant: Sequence[float], thresholds: Sequence[float], calibrated: float | None
) -> object:
    """Per question: the best relevant candidate's score against the best irrelevant one's."""
    fig = new_figure(6.0, 3.0)
    ax = fig.add_subplot()  # type: ignore[attr-defined]
    rel, irr = np.asarray(relevant, dtype=float), np.asarray(irrelevant, dtype=float)
    rel, irr = rel[np.isfinite(rel)], irr[np.isfinite(irr)]
    both = np.concatenate([rel, irr]) if rel.size + irr.size else np.zeros(1)
    bins = np.linspace(float(both.min()), float(both.max()) + 1e-9, 31)
    ax.hist(irr, bins=bins, alpha=0.55, color=ORANGE, label=f"best irrelevant (n={irr.size})")
    ax.hist(rel, bins=bins, alpha=0.55, color=BLUE, label=f"best relevant (n={rel.size})")
    for t in thresholds:
        ax.axvline(t, color=GREY, ls=":", lw=1)
    if calibrated is not None:
        ax.axvline(calibrated, color=RED, ls="--", lw=1.4, label=f"calibrated {calibrated:.3g}")
    ax.set_xlabel("score (dotted: the grid's thresholds)")
    ax.set_ylabel("questions")
    ax.legend(loc="upper right")
    return fig
