"""`servesim <subcommand>`: the command-line entry point.

Each part of the package contributes its subcommands through an ``add_parser(subparsers)``
function; this module only collects them.
"""

from __future__ import annotations

import argparse
import importlib
import sys

# Modules contributing subcommands through add_parser(subparsers), in the order of `--help`.
SUBCOMMAND_MODULES = [
    "servesim.cli_data",
    "servesim.perf.calibrate",
    "servesim.fleet.cli",
    "servesim.perf.profile_gpu",
    "servesim.engine.cli",
    "servesim.systems.sageserve.runs",
    "servesim.workload.cli",
]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="servesim", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True, metavar="<command>")
    for name in SUBCOMMAND_MODULES:
        importlib.import_module(name).add_parser(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return int(args.func(args) or 0)


if __name__ == "__main__":
    sys.exit(main())
