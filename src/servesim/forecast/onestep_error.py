"""The authors' ARIMA forecast error on the synthetic O365 week (spec sageserve §1.4).

The authors' notebook fits statsmodels ARIMA(3,1,2) once on each whole per-minute series of IW
prompt tokens per (model, client region) and reports 100 mean|e| / mean(actual) of its in-sample
one-step-ahead predictions: 16-24 % over the week's 12 series (mean 19.96 %). The synthetic week's
per-minute noise is fitted to that (workload.gen_sageserve.MINUTE_NOISE_READINGS); this measures it.

    python -m servesim.forecast.onestep_error --scale 1.0 --days 7 --minute-noise arima_fit -o <dir>

writes ``onestep_error.csv`` (one row per series) and ``summary.json`` (mean, min, max).
"""

from __future__ import annotations

import argparse
import json
import sys

import numpy as np
import pandas as pd

from .arima import DEFAULT_ORDER, insample_one_step

#: the authors' week errors (%), model A-D x regions West/Central/East (spec sageserve §1.4)
AUTHORS_WEEK_ERROR_PCT = ((21.2, 23.6, 23.5), (20.9, 21.4, 16.0), (21.8, 16.3, 21.6), (18.1, 18.1, 17.0))


def onestep_error_pct(series, order: tuple[int, int, int] = DEFAULT_ORDER) -> float:
    """100 mean|y - yhat| / mean(y) of the in-sample one-step ARIMA predictions (the authors' error)."""
    y = np.asarray(series, dtype=np.float64)
    if not y.size or not np.mean(y) > 0:
        raise ValueError("onestep_error_pct: the series must have a positive mean")
    return float(100.0 * np.mean(np.abs(y - insample_one_step(y, order))) / np.mean(y))


def week_errors(df: pd.DataFrame, days: int, order: tuple[int, int, int] = DEFAULT_ORDER) -> pd.DataFrame:
    """One row per (model, region) of ``df`` with IW requests: the one-step error and the series' mean."""
    from .series import IW_TIERS, per_minute_demand

    iw = df[df["tier"].isin(IW_TIERS)]
    rows = []
    for model in sorted(iw["model"].unique()):
        for region in sorted(iw["region"].unique()):
            if not ((iw["model"] == model) & (iw["region"] == region)).any():
                continue
            y = per_minute_demand(df, model, region, t_end=days * 86_400.0)
            rows.append({"model": model, "region": region, "error_pct": onestep_error_pct(y, order),
                         "mean_tokens_per_min": float(y.mean()), "minutes": int(y.size)})
    return pd.DataFrame(rows)


def run(a: argparse.Namespace) -> int:
    from servesim.errors import InputError
    from servesim.output_dir import staged_output_dir
    from servesim.workload import sageserve_week
    from servesim.workload.gen_sageserve import minute_noise_sigmas

    if not (a.scale > 0 and a.days >= 1):
        raise InputError(f"--scale {a.scale} / --days {a.days}: the scale must be > 0 and the days >= 1")
    try:
        sig = minute_noise_sigmas(a.minute_noise)
    except ValueError as e:
        raise InputError(f"--minute-noise: {e}") from None
    with staged_output_dir(a.out, command="forecast onestep_error", force=a.force) as tmp:
        df = sageserve_week(scale=a.scale, seed=a.seed, days=a.days, minute_noise=a.minute_noise)
        tab = week_errors(df, a.days)
        del df
        tab.to_csv(tmp / "onestep_error.csv", index=False, float_format="%.10g")
        e = tab["error_pct"].to_numpy()
        summ = {"minute_noise": a.minute_noise, "minute_noise_sigmas": sig, "scale": a.scale, "days": a.days,
                "seed": a.seed, "order": list(DEFAULT_ORDER), "n_series": int(e.size),
                "error_pct_mean": float(e.mean()), "error_pct_min": float(e.min()), "error_pct_max": float(e.max()),
                "authors_error_pct_mean": float(np.mean(AUTHORS_WEEK_ERROR_PCT))}
        (tmp / "summary.json").write_text(json.dumps(summ, indent=2) + "\n")
    print(f"one-step ARIMA error ({a.minute_noise}): mean {summ['error_pct_mean']:.1f} % over {e.size} series")
    return 0


def main(argv=None) -> int:
    from servesim.cli_errors import add_output_args, run_command

    ap = argparse.ArgumentParser(prog="python -m servesim.forecast.onestep_error", description=__doc__.split("\n")[0])
    ap.add_argument("--scale", type=float, default=1.0, help="sageserve_week volume scale (1.0: the authors' 7.2 M week)")
    ap.add_argument("--days", type=int, default=7)
    ap.add_argument("--minute-noise", default="arima_fit", help="a reading of gen_sageserve.MINUTE_NOISE_READINGS")
    add_output_args(ap)
    return run_command(run, ap.parse_args(argv), "forecast onestep_error")


if __name__ == "__main__":
    sys.exit(main())
