"""`servesim simulate <scenario.yaml> -o <dir> [--seed N]`.

Register with ``from servesim.fleet.cli import add_parser as add_simulate; add_simulate(sub)``;
the handler is set as the sub-parser's ``func`` default.
"""

from __future__ import annotations

import argparse
import sys
import time


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
    p.set_defaults(func=handle)
    return p


def handle(args: argparse.Namespace) -> int:
    """Run the scenario; returns the exit status (2 on an invalid scenario)."""
    from .run import keeping_partial, run_scenario
    from .scenario import ScenarioError, load_scenario

    try:
        sc = load_scenario(args.scenario)
    except (ScenarioError, OSError) as exc:
        print(f"servesim simulate: {exc}", file=sys.stderr)
        return 2
    t0 = time.perf_counter()
    try:
        with keeping_partial(args.out, f"servesim simulate: {sc.name}"):
            res = run_scenario(sc, seed=args.seed, progress=not args.no_progress and sys.stderr.isatty())
    except ScenarioError as exc:
        print(f"servesim simulate: {exc}", file=sys.stderr)
        return 2
    out = res.write(args.out)
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
    args = ap.parse_args(["simulate", *(sys.argv[1:] if argv is None else argv)])
    return args.func(args)


if __name__ == "__main__":
    raise SystemExit(main())
