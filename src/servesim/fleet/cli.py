"""`servesim simulate <scenario.yaml> -o <dir> [--seed N]`.

Register with ``from servesim.fleet.cli import add_parser as add_simulate; add_simulate(sub)``;
the handler is set as the sub-parser's ``func`` default.
"""

from __future__ import annotations

import argparse
import sys
import time

from servesim.cli_errors import add_debug_flag, run_command


def add_parser(subparsers) -> argparse.ArgumentParser:
    """Add the ``simulate`` sub-command to an argparse sub-parsers object."""
    p = subparsers.add_parser(
        "simulate", help="simulate a fleet scenario (YAML) and write per-request, time-series and summary files",
        description="Simulate a fleet scenario. Writes requests.parquet, timeseries.parquet, instance_hours.parquet, "
                    "lifecycle.parquet and summary.json to the output folder.")
    p.add_argument("scenario", help="scenario YAML file (see examples/scenarios/)")
    p.add_argument("-o", "--out", required=True, help="output folder (created if missing)")
    p.add_argument("--seed", type=int, default=None, help="override the scenario's seed")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument("--force", action="store_true",
                   help="replace a non-empty output folder that holds no servesim results marker")
    p.set_defaults(func=handle)
    return p


def handle(args: argparse.Namespace) -> int:
    """Run the scenario; returns the exit status (EXIT_INPUT on an invalid scenario or -o).

    The output folder is checked before the run and written through a staging folder renamed into
    place on success, with a completion marker (servesim.output_dir); a failed run that simulated
    something leaves it under ``<out>/partial/`` with a failure marker instead."""
    from servesim.output_dir import check_output_dir, staged_output_dir

    from .limits import check_sampling
    from .run import run_scenario, write_partial
    from .scenario import load_scenario

    from servesim.errors import InputError

    if args.seed is not None and args.seed < 0:
        raise InputError(f"--seed {args.seed}: must be an integer >= 0")
    check_output_dir(args.out, force=args.force)
    sc = load_scenario(args.scenario)
    if sc.duration_s is not None:  # the rest of this check needs the workload (run_scenario does it)
        check_sampling(sc.output.sample_s, sc.duration_s, args.scenario)
    t0 = time.perf_counter()
    with staged_output_dir(args.out, command="servesim simulate", force=args.force) as tmp:
        try:
            res = run_scenario(sc, seed=args.seed, progress=not args.no_progress and sys.stderr.isatty())
        except BaseException as exc:
            write_partial(exc, tmp)  # what it simulated: <out>/partial/, marked failed
            raise
        res.write(tmp)
    out = args.out
    wall = time.perf_counter() - t0
    s = res.summary
    print(f"{sc.name}: {s['all']['requests']} requests {s['all']['states']} in {wall:.2f} s wall; "
          f"{s['instance_hours']['billed']:.2f} instance-h billed; wrote {out}/"
          + (" (PARTIAL: run stopped before every request ended)" if s["partial"] else ""))
    return 0


def main(argv: list[str] | None = None) -> int:
    """Stand-alone entry point: ``python -m servesim.fleet.cli <scenario> -o <dir>``."""
    ap = argparse.ArgumentParser(prog="servesim")
    sub = ap.add_subparsers(dest="cmd", required=True)
    add_parser(sub)
    add_debug_flag(ap)
    args = ap.parse_args(["simulate", *(sys.argv[1:] if argv is None else argv)])
    return run_command(args.func, args, "servesim simulate")


if __name__ == "__main__":
    raise SystemExit(main())
