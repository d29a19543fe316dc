"""`eqsat verify-rules`: check every rewrite rule by property-based testing."""

from __future__ import annotations

import argparse
import secrets
import sys

from eqsat.config import DEFAULT_HARDWARE
from eqsat.flags import UsageError, seed
from hwsim.hardware import Hardware


def add_parser(sub: argparse._SubParsersAction) -> None:
    from eqsat.verify.rules import DEFAULT_EXAMPLES

    p = sub.add_parser(
        "verify-rules",
        help="check that rewrite rules are sound, by property-based testing",
        description=(
            "For each rule (each direction of <=>), generate instances of its left-hand "
            "side that satisfy its guards (shapes, dtypes, attributes, broadcasting) and "
            "input tensors (zeros, negatives, large and tiny magnitudes...), evaluate both "
            "sides with the reference interpreter and compare them: exactly for integers, "
            "within a rounding tolerance for floats (scaled by dtype and reduction length), "
            "within the declared budget for approximate rules. Prints a line per rule and, "
            "for a failure, the shrunk counterexample and the seed that reproduces it. "
            "Exits 1 if any rule fails."
        ),
    )
    p.add_argument(
        "paths",
        metavar="FILE_OR_DIR",
        nargs="*",
        help="rules files or directories of *.rules (default: the bundled rules/)",
    )
    p.add_argument(
        "--examples",
        type=int,
        default=DEFAULT_EXAMPLES,
        metavar="N",
        help=f"hypothesis examples per rule direction (default {DEFAULT_EXAMPLES})",
    )
    p.add_argument(
        "--seed", type=seed, metavar="S", help="seed of the run (default: a random one, printed)"
    )
    p.add_argument(
        "--rule",
        action="append",
        default=[],
        metavar="NAME",
        help="check only this rule (NAME or NAME-rev; repeatable)",
    )
    p.add_argument(
        "-j",
        "--jobs",
        type=int,
        metavar="N",
        help="check rules in N worker processes (default: the number of CPUs, at most 8)",
    )
    p.add_argument(
        "--hw",
        default=DEFAULT_HARDWARE,
        metavar="PRESET|FILE.toml",
        help="hardware whose facts predicate guards read, e.g. tile_candidate "
        f"(default {DEFAULT_HARDWARE}); a file that declares instructions ([[instruction]]) "
        "adds the rules introducing them, checked against their declared semantics (only "
        "those when no FILE_OR_DIR is given)",
    )
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from eqsat.rules import load_rules
    from eqsat.rulesets import DEFAULT_RULES_DIR
    from eqsat.verify.report import format_counterexample, result_line, summary
    from eqsat.verify.rules import default_jobs, select, verify_rules

    if args.examples < 1:
        raise UsageError(f"--examples must be at least 1, got {args.examples}")
    from eqsat.custom_instr import in_use, instruction_rules
    from eqsat.rules import RuleCollection
    from eqsat.rulesets import with_instruction_rules

    declaring = in_use()  # the --hw file's instructions (eqsat/cli.py put them in use)
    if declaring is not None and not args.paths:
        paths: list[str] = []
        rules = RuleCollection((instruction_rules(declaring),))  # type: ignore[arg-type]
    else:
        paths = [str(p) for p in (args.paths or [DEFAULT_RULES_DIR])]
        rules = with_instruction_rules(load_rules(paths), quick_check=False)
    # what a counterexample's "reproduce" line passes
    again = [*paths, *(("--hw", str(args.hw)) if declaring is not None else ())]
    seed = args.seed if args.seed is not None else secrets.randbelow(2**32)
    width = max((len(d.name) for d in select(rules, args.rule)), default=10)
    shown = [*paths, *([f"the instructions of {args.hw}"] if declaring is not None else [])]
    print(f"verifying rules in {', '.join(shown)}: {args.examples} examples each, seed {seed}")

    def show(result) -> None:
        print(result_line(result, width), flush=True)
        if result.counterexample is not None:
            print(format_counterexample(result, again), flush=True)

    jobs = args.jobs if args.jobs is not None else default_jobs()
    if jobs < 1:
        raise UsageError(f"--jobs must be at least 1, got {jobs}")
    report = verify_rules(rules, args.examples, seed, args.rule, args.hw, show, jobs)
    print(summary(report.results, report.n_rules, report.seconds))
    if report.failed:
        names = ", ".join(_named(r.name, declaring) for r in report.failed)
        print(f"unsound rules: {names}", file=sys.stderr)
        return 1
    return 0


def _named(rule: str, hw: Hardware | None) -> str:
    """A failed rule's name, with the instruction it introduces if it is one's."""
    if hw is not None:
        from eqsat.custom_instr.rules import rule_name

        for ins in hw.instructions:
            for k in range(len(ins.replaces)):
                for dtype in ins.dtypes:
                    if rule.removesuffix("-rev") == rule_name(ins, k, dtype):
                        return f"{rule} (instruction '{ins.name}' of {ins.path})"
    return rule
