"""Figures for the dashboard: matplotlib (Agg, no pyplot state) rendered to SVG images
(dashboard.charts). Each call draws a fresh Figure, so nothing is shared between threads."""

import io
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from functools import cache
from types import ModuleType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure
    from matplotlib.patches import PathPatch


@cache
def _matplotlib() -> tuple[ModuleType, type["Figure"]]:
    """matplotlib and its Figure, imported on the first figure drawn: the URLconf imports this
    module, and a worker page must not pay matplotlib's import on a process's first request."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.figure import Figure

    return matplotlib, Figure


PREMISE_GREEN = "#3a9a5b"
HYPOTHESIS_PURPLE = "#7b4fb8"
LABEL_COLOURS = {"entailment": "#2f6fdf", "neutral": "#9aa5b1", "contradiction": "#c0392b", "-": "#e0c068"}

_RC = {
    # Labels are data (genre and model names): one that looks like mathtext prints as typed.
    "text.parse_math": False,
    "svg.fonttype": "none",  # text stays text, not paths: a smaller image
    "font.size": 9,
    "axes.spines.top": False,
    "axes.spines.right": False,
}


def to_svg(figure: "Figure", title: str, margins: dict[str, float] | None = None) -> str:
    # Fixed margins instead of bbox_inches="tight": one draw pass instead of two.
    figure.subplots_adjust(**(margins or {"left": 0.07, "right": 0.99, "top": 0.95, "bottom": 0.2}))
    buffer = io.StringIO()
    figure.savefig(buffer, format="svg", metadata={"Date": None})
    svg = buffer.getvalue()
    svg = svg[svg.index("<svg") :]
    # An image of its own (dashboard.charts): its width and height in points are its natural size,
    # which the page's style scales to the column.
    return svg.replace("<svg", f'<svg role="img" aria-label="{title}" class="plot"', 1)


def new_figure(width: float, height: float) -> tuple["Figure", "Axes"]:
    matplotlib, Figure = _matplotlib()
    with matplotlib.rc_context(_RC):
        figure = Figure(figsize=(width, height))
        axes = figure.add_subplot()
    return figure, axes


def bars(axes: "Axes", centres: Sequence[float], heights: Sequence[float], width: float, **style: Any) -> "PathPatch":
    """Bars as one patch (a legend handle, with `label=`): `axes.bar` makes an artist per bar, and
    drawing a hundred of them was most of a cold corpus page."""
    _matplotlib()
    from matplotlib.patches import PathPatch
    from matplotlib.path import Path

    vertices: list[tuple[float, float]] = []
    codes: list[np.uint8] = []
    for centre, height in zip(centres, heights, strict=True):
        left, right = centre - width / 2, centre + width / 2
        vertices += [(left, 0), (right, 0), (right, height), (left, height), (left, 0)]
        codes += [Path.MOVETO, Path.LINETO, Path.LINETO, Path.LINETO, Path.CLOSEPOLY]
    patch = PathPatch(Path(vertices or [(0, 0)], codes or None), linewidth=0, **style)
    patch.sticky_edges.y.append(0)  # as a bar's: no margin under the axis
    axes.add_patch(patch)
    if vertices:
        axes.update_datalim(vertices)
        axes.autoscale_view()
    return patch


def hourly_bars(hourly: Sequence[tuple[datetime, int]], title: str = "Pairs written per hour, last 48 hours") -> str:
    """hourly: [(hour datetime, count)] oldest first."""
    matplotlib, _ = _matplotlib()
    with matplotlib.rc_context(_RC):
        figure, axes = new_figure(11, 2.4)
        counts = [count for _, count in hourly]
        bars(axes, list(range(len(counts))), counts, 0.8, color="#2f6fdf")
        step = max(1, len(hourly) // 8)
        axes.set_xticks(range(0, len(hourly), step))
        axes.set_xticklabels([hour.strftime("%d %H:00") for hour, _ in hourly][::step], rotation=0)
        axes.set_ylabel("pairs")
        axes.set_ylim(0, max([*counts, 1]) * 1.1)
        return to_svg(figure, title, {"left": 0.06, "right": 0.99, "top": 0.95, "bottom": 0.14})


def binned(histogram: Mapping[int, int], cap: int) -> list[int]:
    """Counts for lengths 1..cap, everything longer in the last bin."""
    counts = [0] * cap
    for words, n in histogram.items():
        counts[min(max(words, 1), cap) - 1] += n
    return counts


def length_histogram(
    premise_lengths: Mapping[int, int],
    hypothesis_lengths: Mapping[int, int],
    cap: int | None = None,
    title: str = "Sentence length (words) of premises and hypotheses",
) -> str:
    """MultiNLI Figure 2: premises green, hypotheses purple, as share of sentences per length."""
    matplotlib, _ = _matplotlib()
    longest = max(list(premise_lengths) + list(hypothesis_lengths) + [1])
    cap = cap or min(longest, 60)
    with matplotlib.rc_context(_RC):
        figure, axes = new_figure(10, 3.4)
        positions = list(range(1, cap + 1))
        for lengths, colour, name, offset in (
            (hypothesis_lengths, HYPOTHESIS_PURPLE, "hypothesis", -0.2),
            (premise_lengths, PREMISE_GREEN, "premise", 0.2),
        ):
            counts = binned(lengths, cap)
            total = sum(counts) or 1
            shares = [100 * c / total for c in counts]
            bars(axes, [p + offset for p in positions], shares, 0.4, color=colour, label=f"{name} ({sum(counts):,})")
        axes.set_xlabel(f"words (the last bar counts {cap} and more)" if longest > cap else "words")
        axes.set_ylabel("% of sentences")
        axes.set_xlim(0.3, cap + 0.7)
        axes.legend(frameon=False)
        return to_svg(figure, title, {"left": 0.06, "right": 0.99, "top": 0.97, "bottom": 0.14})


def label_bars(
    gold: Sequence[tuple[str, int]], author: Iterable[tuple[str, int]], title: str = "Label distribution"
) -> str:
    """gold, author: [(label, count)]; gold may include '-'."""
    matplotlib, _ = _matplotlib()
    with matplotlib.rc_context(_RC):
        figure, axes = new_figure(6, 2.6)
        labels = [label for label, _ in gold]
        author_counts = dict(author)
        width = 0.38
        positions = range(len(labels))
        colours = [LABEL_COLOURS.get(label, "#888") for label in labels]
        axes.bar([i - width / 2 for i in positions], [n for _, n in gold], width, color=colours, label="gold")
        axes.bar(
            [i + width / 2 for i in positions],
            [author_counts.get(label, 0) for label in labels],
            width,
            color="none",
            edgecolor="#1f2933",
            hatch="//",
            label="author",
        )
        axes.set_xticks(range(len(labels)))
        axes.set_xticklabels(labels)
        axes.set_ylabel("pairs")
        axes.legend(frameon=False)
        return to_svg(figure, title, {"left": 0.12, "right": 0.99, "top": 0.95, "bottom": 0.12})


def heatmap(
    matrix: Sequence[Sequence[float | None]],
    row_labels: Sequence[str],
    column_labels: Sequence[str],
    title: str,
    xlabel: str = "",
    ylabel: str = "",
    percent: bool = True,
) -> str:
    """A labelled matrix (genre × genre accuracy, confusion matrix); None cells stay blank."""
    matplotlib, _ = _matplotlib()
    import numpy as np

    values = np.array([[np.nan if v is None else float(v) for v in row] for row in matrix], dtype=float)
    width, height = 2.6 + 0.75 * len(column_labels), 1.4 + 0.5 * len(row_labels)
    with matplotlib.rc_context(_RC):
        figure, axes = new_figure(width, height)
        low, high = (np.nanmin(values), np.nanmax(values)) if values.size else (0, 1)
        image = axes.imshow(values, cmap="Blues", aspect="auto", vmin=low, vmax=high)
        axes.set_xticks(range(len(column_labels)))
        axes.set_xticklabels(column_labels, rotation=45, ha="right")
        axes.set_yticks(range(len(row_labels)))
        axes.set_yticklabels(row_labels)
        axes.set_xlabel(xlabel)
        axes.set_ylabel(ylabel)
        axes.spines[:].set_visible(False)
        middle = (np.nanmin(values) + np.nanmax(values)) / 2 if values.size and not np.isnan(values).all() else 0
        for i in range(values.shape[0]):
            for j in range(values.shape[1]):
                if np.isnan(values[i, j]):
                    continue
                text = f"{100 * values[i, j]:.1f}" if percent else f"{values[i, j]:g}"
                colour = "white" if values[i, j] > middle else "#1f2933"
                axes.text(j, i, text, ha="center", va="center", fontsize=8, color=colour)
        colorbar = figure.colorbar(image, ax=axes, fraction=0.04)
        if percent:
            from matplotlib.ticker import FuncFormatter

            colorbar.formatter = FuncFormatter(lambda value, _: f"{100 * value:.0f}")
            colorbar.update_ticks()
        # Margins in inches: room for the longest genre name on the left and the slanted ones below.
        return to_svg(
            figure,
            title,
            {"left": 1.3 / width, "right": 1 - 0.45 / width, "top": 1 - 0.15 / height, "bottom": 1.2 / height},
        )
