"""The `eqsat` command line. Each subcommand lives in eqsat/commands/."""

from __future__ import annotations

import argparse
import os
import re
import signal
import sys
import threading
from collections.abc import Sequence

from eqsat.errors import UserError
from eqsat.flags import UsageError


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


def error_message(err: BaseException, command: str | None) -> str:
    """A flag's error (UsageError) as argparse prints its own: `eqsat COMMAND: error:
    ...`; other errors as they locate themselves (`FILE:LINE:COL: error: ...`)."""
    text = str(err)
    if not isinstance(err, UsageError) or re.search(r"(^|: )error: ", text.split("\n")[0]):
        return text
    prog = f"eqsat {command}" if command else "eqsat"
    return f"{prog}: error: {text.removeprefix(prog + ': ')}"


def main(argv: Sequence[str] | None = None) -> int:
    args = None
    try:
        # Inside the try: building the parser imports every command (about a second),
        # and a Ctrl-C then must end the same way as one during the work.
        parser = build_parser()
        args = parser.parse_args(argv)
        handler = getattr(args, "func", None) or args.handler
        # a --hw file's declared instructions are registry ops for the whole command
        from eqsat.custom_instr import hardware_of_spec, instructions_in_use

        with instructions_in_use(hardware_of_spec(getattr(args, "hw", None))):
            return int(handler(args) or 0)
    except KeyboardInterrupt:  # before user_errors(), whose imports may be unfinished
        return interrupted()
    except user_errors() as err:
        print(error_message(err, getattr(args, "command", None)), file=sys.stderr)
        return 1
    except BrokenPipeError:
        return 0
    except MemoryError:  # what size checks did not foresee: still no traceback
        command = getattr(args, "command", None)
        print(
            f"eqsat{' ' + command if command else ''}: error: out of memory; give the "
            "optimizer a --memory-limit below this machine's free memory, or bind smaller "
            "dimensions with --dim",
            file=sys.stderr,
        )
        return 1


def interrupted() -> int:
    """Ctrl-C: one line and exit code 130 (128 + SIGINT). The process is ending: a
    second Ctrl-C (while saying so, or while a large e-graph is freed at exit) is
    ignored rather than shown as a traceback."""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, signal.SIG_IGN)
    print("interrupted", file=sys.stderr, flush=True)
    highs = sys.modules.get("eqsat.extract.highs_run")
    if highs is not None and highs.abandoned_solve_running():
        # HiGHS would abort the exiting process (its threads are still at work): the
        # outputs are already cleaned up by the unwinding, so leave at once.
        sys.stdout.flush()
        os._exit(130)
    return 130


if __name__ == "__main__":
    sys.exit(main())
