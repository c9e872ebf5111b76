"""Compare forecasters on one series (journal App. B / Fig 17): MAPE vs training time.

Every (method, window) pair is evaluated on the same forecast origins (hourly, starting after
the longest window) predicting the next ``horizon`` minutes, so errors are comparable.

    python -m servesim.forecast.evaluate --scale 1.0 --days 7 -o results/full/.../forecast_eval.csv
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import pandas as pd

from . import make
from .rolling import mape, rolling_forecast, wape

#: (method, window) pairs of journal Fig 17
FIG17_GRID = [("arima", w) for w in (60, 90, 120, 180)] + [("moving_average", w) for w in (60, 90, 120, 180)] \
    + [("tvar", w) for w in (60, 180)] + [("hmm", w) for w in (60, 180)]


def compare(series, grid=FIG17_GRID, horizon: int = 60, step: int = 60, start: int | None = None,
            params: dict | None = None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Evaluate each (method, window); returns (summary, detail).

    summary: method, window, mape_pct, wape_pct, train_s_mean, train_s_median, n_origins.
    detail: the per-(origin, lead) rows of ``rolling_forecast`` with method and window.
    ``params`` maps method -> constructor kwargs.
    """
    params = params or {}
    start = max(w for _, w in grid) if start is None else start
    rows, details = [], []
    for method, window in grid:
        kw = params.get(method, {})
        d = rolling_forecast(series, lambda: make(method, **kw), window=window, horizon=horizon, step=step, start=start)
        per_origin = d.groupby("origin")["train_time_s"].first()
        rows.append({"method": method, "window": window, "mape_pct": mape(d["actual"], d["predicted"]),
                     "wape_pct": wape(d["actual"], d["predicted"]),
                     "train_s_mean": float(per_origin.mean()), "train_s_median": float(per_origin.median()),
                     "n_origins": int(per_origin.size)})
        details.append(d.assign(method=method, window=window))
    return pd.DataFrame(rows), pd.concat(details, ignore_index=True)


def _run(a) -> int:
    from servesim.errors import InputError
    from servesim.workload import sageserve_week

    from .series import per_minute_demand

    if not (a.scale > 0 and a.days >= 1 and a.horizon >= 1 and a.step >= 1):
        raise InputError(f"--scale {a.scale} / --days {a.days} / --horizon {a.horizon} / --step {a.step}: "
                         "the scale must be > 0, the others >= 1")
    df = sageserve_week(scale=a.scale, seed=a.seed, days=a.days)
    y = per_minute_demand(df, a.model, a.region, t_end=a.days * 86400.0)
    summary, _ = compare(y, horizon=a.horizon, step=a.step)
    out = Path(a.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    summary.assign(model=a.model, region=a.region, scale=a.scale, days=a.days, seed=a.seed).to_csv(out, index=False, float_format="%.10g")
    pd.DataFrame({"minute": np.arange(y.size), "prompt_tokens": y}).to_csv(out.with_name(out.stem + "_series.csv"), index=False)
    return 0


def main(argv=None) -> int:
    from servesim.cli_errors import add_debug_flag, run_command

    ap = argparse.ArgumentParser(description="Fig 17: forecasters' MAPE vs training time on the synthetic O365 week")
    ap.add_argument("--scale", type=float, default=1.0, help="sageserve_week volume scale")
    ap.add_argument("--days", type=int, default=7)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--model", default="llama-2-70b")
    ap.add_argument("--region", default="eastus")
    ap.add_argument("--horizon", type=int, default=60)
    ap.add_argument("--step", type=int, default=60)
    ap.add_argument("-o", "--out", required=True, help="summary CSV (the series goes beside it)")
    add_debug_flag(ap)
    return run_command(_run, ap.parse_args(argv), "forecast evaluate")

if __name__ == "__main__":
    raise SystemExit(main())
