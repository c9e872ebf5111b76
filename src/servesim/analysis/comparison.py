"""Paper-vs-ours tables for the arithmetic and setup notebooks, as data and as a rendered figure."""

from __future__ import annotations

import math

import pandas as pd


def comparison(rows: list[dict]) -> pd.DataFrame:
    """Rows of ``{quantity, metric, paper, ours, how}`` as a table with ``rel_diff`` (ours/paper - 1;
    NaN where either side is not a number or the paper's value is 0)."""
    df = pd.DataFrame(rows, columns=["quantity", "metric", "paper", "ours", "how"])

    def rel(p, o):
        try:
            p, o = float(p), float(o)
        except (TypeError, ValueError):
            return math.nan
        return math.nan if p == 0 or math.isnan(p) or math.isnan(o) else o / p - 1.0

    df["rel_diff"] = [rel(p, o) for p, o in zip(df.paper, df.ours)]
    return df


def _fmt(v) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "—"
    if isinstance(v, bool):
        return str(v)
    if isinstance(v, (int, float)):
        return f"{v:.6g}"
    return str(v)


def table_figure(df: pd.DataFrame, title: str, columns=("quantity", "paper", "ours", "how"), widths=None):
    """The table drawn as a matplotlib figure (for the figure output of an arithmetic notebook)."""
    import matplotlib.pyplot as plt

    cells = [[_fmt(v) for v in row] for row in df[list(columns)].itertuples(index=False)]
    fig, ax = plt.subplots(figsize=(9.0, 0.45 + 0.28 * (len(cells) + 1)))
    ax.axis("off")
    tab = ax.table(cellText=cells, colLabels=list(columns), loc="upper left", cellLoc="left",
                   colWidths=list(widths) if widths else None)
    tab.auto_set_font_size(False)
    tab.set_fontsize(7)
    tab.auto_set_column_width(list(range(len(columns))))
    ax.set_title(title, fontsize=9, loc="left")
    fig.tight_layout()
    return fig
