"""`eqsat rules test [FILES]`: run the `test` blocks of rules files."""

from __future__ import annotations

import argparse
import sys

from eqsat.config import DEFAULT_HARDWARE


def add_parser(rules_sub: argparse._SubParsersAction) -> None:
    p = rules_sub.add_parser(
        "test",
        help="run the test blocks of rules files (PASS/FAIL per test)",
        description=(
            "Run every `test NAME { ... }` block of the given rules files (or directories "
            "of *.rules; default: the project's rules/): optimize its model fragment as "
            "`eqsat optimize` does, with every rule of the file's directory (or --rules), "
            "and check its expectations. Prints PASS or FAIL per test and, on a failure, "
            "each expectation with what the program showed, the extracted program and "
            "which of the file's rules fired. Exits 1 if a test fails."
        ),
    )
    p.add_argument(
        "paths",
        metavar="FILE_OR_DIR",
        nargs="*",
        help="rules files or directories of *.rules (default: the project's rules/)",
    )
    p.add_argument(
        "--rules",
        action="append",
        metavar="FILE_OR_DIR",
        help="run the tests with exactly these rules (repeatable; default: every *.rules "
        "file in the directory of the test's file)",
    )
    p.add_argument(
        "--test",
        action="append",
        default=[],
        metavar="NAME",
        help="run only the test of this name (repeatable)",
    )
    p.add_argument(
        "--hw",
        default=DEFAULT_HARDWARE,
        metavar="PRESET|FILE.toml",
        help=f"hardware of tests without `on hw=` (default {DEFAULT_HARDWARE})",
    )
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from eqsat.errors import UserError
    from eqsat.rules import default_rules_dir
    from eqsat.ruletest import format_result, parse_files, run_files
    from eqsat.ruletest.runner import display_path

    parsed = parse_files(args.paths or [display_path(default_rules_dir())])
    sources = {p.path: p.source for p in parsed}
    known = {t.name for p in parsed for t in p.tests}
    missing = [n for n in args.test if n not in known]
    if missing:
        raise UserError(f"--test: no test named {', '.join(missing)} in the given files")

    def show(result) -> None:
        print(format_result(result, sources[result.file]), flush=True)

    results = run_files(parsed, args.rules, args.hw, only=args.test, on_result=show)
    failed = [r for r in results if not r.passed]
    files = len({r.file for r in results})
    print(
        f"{len(results)} test{'s' if len(results) != 1 else ''} in {files} "
        f"file{'s' if files != 1 else ''}: {len(results) - len(failed)} passed, "
        f"{len(failed)} failed" + (f" ({', '.join(r.test.name for r in failed)})" if failed else "")
    )
    if not results:
        print("no tests found", file=sys.stderr)
    return 1 if failed else 0
