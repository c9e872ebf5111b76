"""`servesim <subcommand>`: the command-line entry point.

Each part of the package contributes its subcommands through an ``add_parser(subparsers)``
function; this module only collects them.
"""

from __future__ import annotations

import argparse
import importlib
import sys

from servesim.cli_errors import add_debug_flag, run_command

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


EPILOG = """exit status: 0 success; 1 a bug (traceback); 2 bad input (one line naming the file and the
row, line, key or option; --debug shows its traceback); 3 results written but partial; 4 the system
failed a read or write (disk full, I/O error; one line naming the file and what is kept)."""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="servesim", description=__doc__.splitlines()[0], epilog=EPILOG)
    sub = parser.add_subparsers(dest="command", required=True, metavar="<command>")
    for name in SUBCOMMAND_MODULES:
        importlib.import_module(name).add_parser(sub)
    add_debug_flag(parser)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return run_command(args.func, args, f"servesim {args.command}")


if __name__ == "__main__":
    sys.exit(main())
