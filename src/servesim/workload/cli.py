"""``servesim workload ...``: generate a workload to Parquet, or convert a public trace to one.

Register with ``from servesim.workload.cli import add_parser`` in ``servesim.cli``; also runnable as
``python -m servesim.workload.cli generate sageserve_week --scale 0.01 -o week.parquet``.
"""

from __future__ import annotations

import argparse
import json
import sys

import yaml

#: named scales (the workflow's quick/full) -> generator scale factor
SCALES = {
    "sageserve_week": {"quick": 0.02, "full": 1.0},
    "azure_code_week": {"quick": 0.02, "full": 0.2},
    "azure_conv_week": {"quick": 0.02, "full": 0.2},
    "oserve": {"quick": 1.0, "full": 1.0},
    "aegaeon_market": {"quick": 1.0, "full": 1.0},
}
LOADERS = ("azure", "aegaeon", "sageserve")


def _scale(gen: str, s: str) -> float:
    return SCALES.get(gen, {}).get(s) if s in ("quick", "full") else float(s)


def add_parser(subparsers) -> argparse.ArgumentParser:
    p = subparsers.add_parser("workload", help="generate or convert request workloads (Parquet)")
    sub = p.add_subparsers(dest="workload_cmd", required=True)
    g = sub.add_parser("generate", help="run a calibrated generator")
    g.add_argument("generator")
    g.add_argument("--scale", default="quick", help="quick | full | a number")
    g.add_argument("--seed", type=int, default=0)
    g.add_argument("--options", default="{}", help="generator keyword options as YAML/JSON")
    g.add_argument("-o", "--output", required=True)
    c = sub.add_parser("convert", help="load a public trace file and store it in the schema")
    c.add_argument("format", choices=LOADERS)
    c.add_argument("path")
    c.add_argument("--lenient", action="store_true", help="drop (and count) bad rows instead of failing")
    c.add_argument("-o", "--output", required=True)
    p.set_defaults(func=run)
    return p


def run(args) -> int:
    from . import generate, load_aegaeon, load_azure, load_sageserve, write

    if args.workload_cmd == "generate":
        df = generate(args.generator, scale=_scale(args.generator, args.scale), seed=args.seed,
                      **(yaml.safe_load(args.options) or {}))
    else:
        loader = {"azure": load_azure, "aegaeon": load_aegaeon, "sageserve": load_sageserve}[args.format]
        df = loader(args.path, lenient=args.lenient)
    write(df, args.output)
    info = {"output": args.output, "requests": len(df), "dropped_rows": df.attrs.get("dropped_rows", 0)}
    print(json.dumps(info))
    return 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="servesim")
    add_parser(parser.add_subparsers(dest="cmd", required=True))
    args = parser.parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
