"""The step model's signed error on a replay's busy time (issue 33): the predicted over the
engine's measured sum of step times, per in-process replay. A median step error near zero can hide
a bias of a few % on the long steps, and at a queueing knee the tail latencies amplify it tenfold
(the sim_vs_vllm notebook's sensitivities); this is the number to multiply them by.

Its own module, not `compare`'s: the engine job imports `compare`, so an analysis added there would
re-run the engine's replays."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd


def busy_time_bias(step_dirs, fit_json: str | Path) -> pd.Series:
    """``{replay folder name: bias %}`` for each in-process replay in ``step_dirs`` (a folder with
    ``steps.parquet``), the model being the profile's fit (``fit_json``, the one the simulator runs):
    100 x (sum of predicted step times / sum of measured ones - 1)."""
    from servesim.engine.compare import step_table
    from servesim.engine.profile import load_fitted
    from servesim.perf import measurements as M

    model = load_fitted(fit_json)[0]
    out = {}
    for d in step_dirs:
        t = step_table(d)
        pred = np.asarray(model.step_time(*(t[c].to_numpy(float) for c in M.AGGREGATES)), float)
        out[Path(d).name] = float((pred.sum() / t.step_s.to_numpy(float).sum() - 1.0) * 100)
    return pd.Series(out, name="bias_pct", dtype=float)
