"""The `eqsat` command line. Each subcommand lives in eqsat/commands/."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from eqsat.errors import UserError


def build_parser() -> argparse.ArgumentParser:
    from eqsat.commands import COMMANDS

    parser = argparse.ArgumentParser(
        prog="eqsat",
        description=(
            "An ML graph compiler built on equality saturation: parse a model, grow an "
            "e-graph of equivalent programs with rewrite rules, extract the cheapest for "
            "a hardware cost model, and run it on an accelerator simulator."
        ),
        epilog="Run `eqsat COMMAND --help` for the options of a command.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for command in COMMANDS:
        command.add_parser(sub)
    return parser


def user_errors() -> tuple[type[Exception], ...]:
    """Exception classes that are the user's mistake, not a bug: no traceback for these.

    hwsim is a separate machine package that cannot derive from UserError.
    """
    from eqsat.extract.errors import ExtractError
    from hwsim import AsmError, SimulationError
    from hwsim.hardware import HardwareError

    return (UserError, HardwareError, ExtractError, AsmError, SimulationError)


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        handler = getattr(args, "func", None) or args.handler
        return int(handler(args) or 0)
    except user_errors() as err:
        print(str(err), file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0


if __name__ == "__main__":
    sys.exit(main())
