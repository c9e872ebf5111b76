"""Where a notebook writes its three outputs, and the one plotting style.

Every figure notebook ends with::

    out = FigureOutputs("sageserve", "fig02_tps_boxplots", scale=scale, root=root)
    out.save_figure(fig)        # figures/<scale>/<paper>/<figure>.{pdf,png}
    out.write_data(df)          # results/<scale>/<paper>/<figure>/data.csv
    out.write_metrics(metrics)  # results/<scale>/<paper>/<figure>/metrics.json

Outputs are byte-for-byte deterministic (no timestamps in PDF/PNG metadata, sorted JSON keys).
This module imports only the leaf `servesim.project_root` (its `project_root` is re-exported here).
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path

from servesim.project_root import project_root  # noqa: F401 - re-exported: notebooks import it from here


def apply_style() -> None:
    """The plotting style every figure uses."""
    import matplotlib

    matplotlib.rcParams.update({
        "figure.figsize": (6.0, 3.6),
        "figure.dpi": 110,
        "savefig.dpi": 150,
        "font.size": 9,
        "axes.grid": True,
        "grid.alpha": 0.3,
        "axes.spines.top": False,
        "axes.spines.right": False,
        "legend.frameon": False,
        "svg.hashsalt": "servesim",
        "pdf.compression": 6,
    })


def _clean(v):
    """JSON-safe value: NaN/inf become None, numpy scalars become Python numbers."""
    if hasattr(v, "item") and not isinstance(v, (list, dict, str)):
        v = v.item()
    if isinstance(v, float) and not math.isfinite(v):
        return None
    if isinstance(v, dict):
        return {str(k): _clean(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_clean(x) for x in v]
    return v


class FigureOutputs:
    def __init__(self, paper: str, figure: str, scale: str = "quick", root: str | os.PathLike | None = None):
        self.paper, self.figure, self.scale = paper, figure, scale
        self.root = Path(root) if root else project_root()
        self.fig_dir = self.root / "figures" / scale / paper
        self.res_dir = self.root / "results" / scale / paper / figure

    @property
    def data_csv(self) -> Path:
        return self.res_dir / "data.csv"

    @property
    def metrics_json(self) -> Path:
        return self.res_dir / "metrics.json"

    def save_figure(self, fig) -> list[Path]:
        self.fig_dir.mkdir(parents=True, exist_ok=True)
        paths = [self.fig_dir / f"{self.figure}.pdf", self.fig_dir / f"{self.figure}.png"]
        fig.savefig(paths[0], bbox_inches="tight", metadata={"CreationDate": None, "ModDate": None, "Producer": None, "Creator": None})
        fig.savefig(paths[1], bbox_inches="tight", metadata={"Software": None})
        return paths

    def write_data(self, df) -> Path:
        self.res_dir.mkdir(parents=True, exist_ok=True)
        df.to_csv(self.data_csv, index=False, float_format="%.10g")
        return self.data_csv

    def write_metrics(self, metrics: dict) -> Path:
        self.res_dir.mkdir(parents=True, exist_ok=True)
        self.metrics_json.write_text(json.dumps(_clean(metrics), indent=1, sort_keys=True) + "\n")
        return self.metrics_json
