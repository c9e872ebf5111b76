"""``servesim calibrate <measurements> -o <model file>``: fit a step-time backend on a measurement
table and report its error (MAPE, R²) on held-out rows, overall and per regime.

The saved model is the one fitted on the training split, so the reported errors are its own
(``--refit-all`` refits on every row after reporting; the file then says so).
"""

from __future__ import annotations

import argparse
import json
import sys

import pandas as pd

from . import measurements as M
from .fitted import fit
from .registry import _select, save_model_file
from .roofline import RooflineStepTime, fit_roofline


def calibrate(df: pd.DataFrame, backend: str = "fitted", model: str | None = None, hardware: str | None = None,
              tp: int | None = None, pp: int | None = None, test_frac: float = 0.2, seed: int = 0,
              weighting: str = "relative"):
    """Fit on a train split; return (model, held-out error table, train error table)."""
    if len(df) < 5:
        raise M.MeasurementError(f"need at least 5 measurements to calibrate with a held-out split, got {len(df)}")
    train, test = M.split(df, test_frac, seed)
    if backend == "fitted":
        m = fit(train, weighting=weighting, tp=tp, pp=pp)
    elif backend == "roofline":
        model = model or _single(df, "model")
        hardware = hardware or _single(df, "hardware")
        tp = tp or int(_single(df, "tp", 1))
        pp = pp or int(_single(df, "pp", 1))
        m = fit_roofline(RooflineStepTime(model, hardware, tp=tp, pp=pp), train)
    else:
        raise ValueError(f"calibrate: backend must be 'fitted' or 'roofline', got {backend!r}")
    return m, M.evaluate(m, test), M.evaluate(m, train)


def _single(df, col, default=None):
    if col in df.columns and df[col].nunique() == 1:
        return df[col].iloc[0]
    if default is not None:
        return default
    raise M.MeasurementError(f"pass --{col}: the table's '{col}' column is absent or holds several values")


def add_parser(subparsers) -> None:
    p = subparsers.add_parser("calibrate", help="fit a step-time model on measurements; report held-out MAPE/R² per regime",
                              description=__doc__.splitlines()[0])
    p.add_argument("measurements", help="measurement table (.csv/.parquet): prefill_tokens, prefill_ctx, decode_seqs, decode_ctx, step_s")
    p.add_argument("-o", "--output", required=True, help="model file to write (.yaml); servesim.perf.build(<it>) loads it")
    p.add_argument("--backend", choices=["fitted", "roofline"], default="fitted")
    p.add_argument("--model", help="catalog model (selects rows; needed by roofline unless the table has one)")
    p.add_argument("--hardware", help="catalog hardware (selects rows; needed by roofline unless the table has one)")
    p.add_argument("--tp", type=int)
    p.add_argument("--pp", type=int)
    p.add_argument("--test-frac", type=float, default=0.2, help="held-out fraction per regime (default 0.2)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--weighting", choices=["relative", "absolute"], default="relative")
    p.add_argument("--refit-all", action="store_true", help="after reporting, refit on every row before saving")
    p.add_argument("--report", help="also write the error table here (.csv)")
    p.set_defaults(func=run)


def _check_args(args) -> None:
    """Options and output paths, before any work (InputError names the option)."""
    from servesim.errors import InputError
    from servesim.output_dir import check_output_file

    if not 0 < args.test_frac < 1:
        raise InputError(f"--test-frac {args.test_frac}: must be between 0 and 1")
    for opt in ("tp", "pp"):
        if getattr(args, opt) is not None and getattr(args, opt) < 1:
            raise InputError(f"--{opt} {getattr(args, opt)}: must be >= 1")
    check_output_file(args.output)
    if args.report:
        check_output_file(args.report, option="--report")
    from servesim.catalog import get_hardware, get_model
    from servesim.catalog.loader import CatalogError

    for opt, get in (("model", get_model), ("hardware", get_hardware)):
        try:  # an unknown name is an error even where the table has no column to select rows by
            if getattr(args, opt):
                get(getattr(args, opt))
        except CatalogError as exc:
            raise InputError(f"--{opt} {getattr(args, opt)}: {exc}") from None


def run(args) -> int:
    from servesim.output_dir import atomic_file

    _check_args(args)
    df = M.read(args.measurements)
    if args.model or args.hardware or args.tp or args.pp:
        df = _select(df, args.model, args.hardware, args.tp or 1, args.pp or 1)
    if len(df) < 5:
        raise M.MeasurementError(f"{args.measurements}: {len(df)} usable row(s); calibrating with a held-out "
                                 "split needs at least 5")
    m, test_err, train_err = calibrate(df, args.backend, args.model, args.hardware, args.tp, args.pp,
                                       args.test_frac, args.seed, args.weighting)
    err = pd.concat([test_err.assign(split="held-out"), train_err.assign(split="train")], ignore_index=True)
    fitted_on = "train split"
    if args.refit_all:
        m = _refit(df, m, args)
        fitted_on = "all rows (errors above are of the train-split fit)"
    errors = json.loads(test_err.to_json(orient="records"))
    if args.report:  # .part files renamed on success: never a half-written model or report
        with atomic_file(args.report) as tmp:
            err.to_csv(tmp, index=False, float_format="%.6g")
    with atomic_file(args.output) as tmp:
        save_model_file(m, tmp, measurements=str(args.measurements), fitted_on=fitted_on,
                        test_frac=args.test_frac, seed=args.seed, holdout_errors=errors)
    print(f"calibrated {args.backend} on {len(df)} rows of {args.measurements} -> {args.output}")
    print(err.to_string(index=False, float_format=lambda v: f"{v:.4g}"))
    return 0


def _refit(df, m, args):
    if args.backend == "fitted":
        return fit(df, weighting=args.weighting, tp=args.tp, pp=args.pp)
    return fit_roofline(m, df)


if __name__ == "__main__":  # pragma: no cover
    parser = argparse.ArgumentParser(prog="servesim")
    add_parser(parser.add_subparsers(dest="command", required=True))
    a = parser.parse_args()
    sys.exit(a.func(a))
