"""Tables for the console: every column as wide as its longest cell, so nothing is ever cut off."""

from collections.abc import Iterable, Sequence


def format_table(
    header: Sequence[object] | None,
    rows: Iterable[Sequence[object]],
    align: Sequence[str] | None = None,
    gap: str = "  ",
) -> str:
    """Text lines of `header` (None: no header row) and `rows` (sequences of cells, any type,
    shown with str()).

    Each column is as wide as its longest cell, header included. `align` is one of "<" or ">" per
    column (default: the first left, the rest right, as for a label and its numbers).
    """
    cells = ([[str(cell) for cell in header]] if header is not None else []) + [
        [str(cell) for cell in row] for row in rows
    ]
    columns = max(len(row) for row in cells)
    cells = [row + [""] * (columns - len(row)) for row in cells]
    widths = [max(len(row[i]) for row in cells) for i in range(columns)]
    aligns = list(align or ["<"] + [">"] * (columns - 1))
    return "\n".join(
        gap.join(f"{cell:{a}{w}}" for cell, a, w in zip(row, aligns, widths, strict=True)).rstrip() for row in cells
    )
