"""`eqsat rules check|compile`: statically check rules files, or print their egglog."""

from __future__ import annotations

import argparse
import sys

from eqsat.rules import check_in_egglog, default_rules_dir, load_rules


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "rules",
        help="check rules files or print the egglog they compile to",
        description="Work with rule files (rules/*.rules, documented in rules/README.md).",
    )
    rules_sub = p.add_subparsers(dest="rules_command", metavar="ACTION", required=True)
    check = rules_sub.add_parser(
        "check",
        help="parse, type-check and compile rules; load them into egglog",
        description=(
            "Check every rule of the given files (or directories of *.rules; default: the "
            "project's rules/ directory) against the op registry, compile them to egglog "
            "and load the result into a fresh e-graph. Prints one line per file; exits 1 "
            "with FILE:LINE:COL: error: ... on the first mistake."
        ),
    )
    _paths(check)
    check.add_argument(
        "--growth",
        action="store_true",
        help="also run each rule alone on a small probe model (one generated instance of its "
        "left-hand side) and report rules whose e-graph grows in every round: they keep "
        "matching their own output and make saturation loop or blow up (exit 1)",
    )
    check.add_argument(
        "--rounds",
        type=int,
        default=6,
        metavar="N",
        help="rounds of the --growth probe (default 6)",
    )
    check.set_defaults(func=run_check)
    emit = rules_sub.add_parser(
        "compile",
        help="print the egglog text the rules compile to",
        description="Print the egglog rulesets and rules compiled from the given rules files.",
    )
    _paths(emit)
    emit.add_argument(
        "--approx", action="store_true", help="include approximate rules (in <ruleset>-approx)"
    )
    emit.set_defaults(func=run_compile)
    __import__("eqsat.commands.rules_test", fromlist=["_"]).add_parser(rules_sub)
    __import__("eqsat.commands.rules_why", fromlist=["_"]).add_parser(rules_sub)
    __import__("eqsat.commands.rules_synthesize", fromlist=["_"]).add_parser(rules_sub)


def _paths(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "paths",
        metavar="FILE_OR_DIR",
        nargs="*",
        help="rules files or directories of *.rules (default: the project's rules/)",
    )


def _load(args: argparse.Namespace):
    paths = args.paths or [default_rules_dir()]
    return load_rules(paths)


def run_check(args: argparse.Namespace) -> int:
    collection = _load(args)
    check_in_egglog(collection, include_approx=True)
    from eqsat.ruletest import validate_files  # test blocks: fragments, hardware, terms

    tests = validate_files(args.paths or [default_rules_dir()])
    if not collection.files:
        where = ", ".join(str(p) for p in (args.paths or [default_rules_dir()]))
        print(f"no .rules files in {where}")
        return 0
    for f in collection.files:
        approx = sum(r.is_approx for r in f.rules)
        extra = f", {approx} approximate" if approx else ""
        n = len(f.rules)
        rulesets = ", ".join(f.rulesets)
        t = tests.get(f.path, 0)
        print(
            f"{f.path}: {n} rule{'s' if n != 1 else ''}{extra}, "
            f"{len(f.rulesets)} ruleset{'s' if len(f.rulesets) != 1 else ''} ({rulesets})"
            + (f", {t} test{'s' if t != 1 else ''}" if t else "")
        )
        for r in f.rules:
            if r.doc is None:
                print(
                    f"{r.location}: warning: rule '{r.name}' has no '# identity' comment "
                    "on the line above",
                    file=sys.stderr,
                )
    if getattr(args, "growth", False):
        return run_growth(collection, args.rounds)
    return 0


def run_growth(collection, rounds: int) -> int:
    """Report rules that keep matching their own output (eqsat.verify.growth)."""
    from eqsat.config import DEFAULT_HARDWARE
    from eqsat.flags import UsageError
    from eqsat.verify.growth import growth, hardware_facts_text
    from eqsat.verify.guards import hardware_facts

    if rounds < 2:
        raise UsageError(f"--rounds must be at least 2, got {rounds}")
    facts, text = hardware_facts(DEFAULT_HARDWARE), hardware_facts_text(DEFAULT_HARDWARE)
    feeding, unprobed = [], []
    for rule in collection:
        g = growth(rule, facts, text, rounds)
        if g.probe is None:
            unprobed.append(rule.name)
        elif g.self_feeding:
            feeding.append(g)
            counts = " -> ".join(str(n) for n in g.nodes)
            print(
                f"{rule.location}: warning: rule '{rule.name}' keeps matching its own output: "
                f"e-nodes per round {counts} on a probe of {len(g.probe.nodes)} nodes"
            )
    n = len(collection)
    print(
        f"growth: {n - len(unprobed)} of {n} rules probed for {rounds} rounds alone, "
        f"{len(feeding)} self-feeding"
        + (f"; no probe for {', '.join(unprobed)}" if unprobed else "")
    )
    return 1 if feeding else 0


def run_compile(args: argparse.Namespace) -> int:
    print(_load(args).compile(include_approx=args.approx), end="")
    return 0
