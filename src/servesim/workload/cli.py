"""``servesim workload ...``: generate a workload to Parquet, or convert a public trace to one.

Register with ``from servesim.workload.cli import add_parser`` in ``servesim.cli``; also runnable as
``python -m servesim.workload.cli generate sageserve_week --scale 0.01 -o week.parquet``.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from servesim.cli_errors import add_debug_flag, run_command

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
    """The generator's scale factor: a named scale or a finite positive number."""
    from servesim.errors import InputError

    if s in ("quick", "full"):
        return SCALES.get(gen, {}).get(s, 1.0)
    try:
        x = float(s)
    except ValueError:
        raise InputError(f"--scale {s!r}: expected quick, full or a number") from None
    if not (0 < x < float("inf")):
        raise InputError(f"--scale {s!r}: must be a finite number > 0")
    return x


def _options(text: str) -> dict:
    """``--options`` as a mapping (YAML/JSON; duplicate keys are errors)."""
    from servesim._yaml import StrictYAMLError, strict_yaml_load
    from servesim.errors import InputError

    try:
        opts = strict_yaml_load(text, source="--options")
    except StrictYAMLError as exc:
        raise InputError(str(exc)) from None
    if opts is None:
        return {}
    if not isinstance(opts, dict) or not all(isinstance(k, str) for k in opts):
        raise InputError(f"--options: expected a mapping of option names to values, got {text!r}")
    return opts


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

    from servesim.errors import InputError
    from servesim.output_dir import check_output_file

    check_output_file(args.output)  # before any work: -o naming a folder fails at once
    if Path(args.output).suffix != ".parquet":  # the table is Parquet whatever the name says
        raise InputError(f"-o {args.output}: the workload is written as Parquet; name it <name>.parquet")
    if args.workload_cmd == "generate":
        from . import GENERATORS

        if args.generator not in GENERATORS:
            raise InputError(f"unknown generator {args.generator!r}; known: {', '.join(sorted(GENERATORS))}")
        scale, opts = _scale(args.generator, args.scale), _options(args.options)
        if args.seed < 0:
            raise InputError(f"--seed {args.seed}: must be an integer >= 0")
        try:
            df = generate(args.generator, scale=scale, seed=args.seed, **opts)
        except TypeError as exc:  # an option the generator does not take
            if "argument" not in str(exc):
                raise
            raise InputError(f"--options for {args.generator}: {exc}") from None
    else:
        loader = {"azure": load_azure, "aegaeon": load_aegaeon, "sageserve": load_sageserve}[args.format]
        df = loader(args.path, lenient=args.lenient)
        if len(df) == 0:
            raise InputError(f"{args.path}: no valid rows (of {df.attrs.get('dropped_rows', 0)} read)")
    write(df, args.output)  # via a .part file renamed on success
    info = {"output": args.output, "requests": len(df), "dropped_rows": df.attrs.get("dropped_rows", 0)}
    print(json.dumps(info))
    return 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="servesim")
    add_parser(parser.add_subparsers(dest="cmd", required=True))
    add_debug_flag(parser)
    args = parser.parse_args(argv)
    return run_command(args.func, args, "servesim workload")


if __name__ == "__main__":
    sys.exit(main())
