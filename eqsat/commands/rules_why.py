"""`eqsat rules why A B --rules FILES`: whether rules prove two programs equal."""

from __future__ import annotations

import argparse

from eqsat.config import DEFAULT_HARDWARE


def add_parser(rules_sub: argparse._SubParsersAction) -> None:
    p = rules_sub.add_parser(
        "why",
        help="do the rules prove two models (or terms) equal, and by which rules",
        description=(
            "Put A and B (model files, or terms in the model language such as "
            "'relu(transpose(transpose(x, perm=[1, 0]), perm=[1, 0]))' with their leaves "
            "declared by --input) into one e-graph, saturate it with the rules and say "
            "whether each output of A is in one e-class with the same output of B. When "
            "it is: a minimal set of rules that proves it and the chain of rule "
            "applications, each side's term nearest to the other after each. When it is "
            "not: the term of each side's e-class nearest to the other side. Exits 0 when "
            "proved, 1 when not."
        ),
    )
    p.add_argument("left", metavar="A", help="model file or term")
    p.add_argument("right", metavar="B", help="model file or term")
    p.add_argument(
        "--rules",
        action="append",
        metavar="FILE_OR_DIR",
        help="rules files or directories (repeatable; default: the project's rules/)",
    )
    p.add_argument(
        "--input",
        action="append",
        default=[],
        metavar="NAME:TYPE",
        help="a leaf of the terms, e.g. x:f32[8, 16] (repeatable)",
    )
    p.add_argument(
        "--hw",
        default=DEFAULT_HARDWARE,
        metavar="PRESET|FILE.toml",
        help=f"hardware whose facts the rules may read (default {DEFAULT_HARDWARE})",
    )
    p.add_argument("--approx", action="store_true", help="include approximate rules")
    p.add_argument(
        "--no-chain",
        action="store_true",
        help="only decide; skip the minimal rule set and the replay",
    )
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    import dataclasses

    from eqsat.errors import UserError
    from eqsat.rules import RuleCollection, default_rules_dir, load_rules
    from eqsat.rulesets import with_instruction_rules
    from eqsat.ruletest.runner import display_path
    from eqsat.ruletest.sides import load_side, parse_decl
    from eqsat.ruletest.why import format_why, why
    from hwsim.hardware import load_hardware

    inputs = dict(parse_decl(d) for d in args.input)
    left, left_label = load_side(args.left, inputs, "<A>")
    right, right_label = load_side(args.right, inputs, "<B>")
    if len(left.outputs) != len(right.outputs):
        raise UserError(
            f"A has {len(left.outputs)} outputs and B has {len(right.outputs)}: they are "
            "compared output by output, in order"
        )
    rules = load_rules(args.rules or [display_path(default_rules_dir())])
    if not args.approx:
        rules = RuleCollection(
            tuple(
                dataclasses.replace(f, rules=tuple(r for r in f.rules if not r.is_approx))
                for f in rules.files
            )
        )
    rules = with_instruction_rules(rules)  # those of a --hw file's declared instructions
    result = why(left, right, rules, load_hardware(args.hw), chain=not args.no_chain)
    print(f"A: {left_label}\nB: {right_label}")
    print(format_why(result, "A", "B"))
    return 0 if result.proved else 1
