"""Run the `test` blocks of rules files: optimize each fragment the way `eqsat
optimize` does and check its expectations.

Which rules a test runs with: every *.rules file of its own file's directory (a
fusion test may need algebra to expose the pattern), unless `rule_paths` names the
set. Approximate rules run only in a test that says `with approx`.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from egglog.bindings import EGraph as EggGraph

from eqsat.config import DEFAULT_HARDWARE, DEFAULT_LIMITS, Limits
from eqsat.custom_instr import in_use, instructions_in_use
from eqsat.ir.graph import Graph
from eqsat.pipeline import CompiledRules, optimize, prepare_egraph
from eqsat.rules import ast
from eqsat.rules.compiler import egglog_names
from eqsat.rules.loader import rule_files
from eqsat.rules.parser import parse_rules_file
from eqsat.rules.testblock import check_ops
from eqsat.rulesets import compile_rule_paths
from eqsat.ruletest.egraph import same_class, saturated
from eqsat.ruletest.expectations import Outcome, check_program
from eqsat.ruletest.fragment import fragment_graph, graph_with_terms, test_hardware
from hwsim.hardware import Hardware


@dataclass
class TestResult:
    file: str
    test: ast.TestDecl
    outcomes: list[Outcome]
    program: str | None  # the extracted program, printed in the model language
    fired: Counter[str]  # matches per rule (egglog names) in the test's runs
    file_rules: tuple[str, ...]  # egglog names of the rules of the test's file
    rule_set: tuple[str, ...]  # the rule files the test ran with
    seconds: float = 0.0
    notes: list[str] = field(default_factory=list)
    explained: list[str] = field(default_factory=list)  # `eqsat explain` of a failure

    __test__ = False

    @property
    def passed(self) -> bool:
        return all(o.passed for o in self.outcomes)


def parse_files(paths: Iterable[str | Path]) -> list[ast.RulesFile]:
    """Parse every rules file (a directory: its *.rules) with its test blocks."""
    return [parse_rules_file(p) for p in rule_files(paths)]


def validate(parsed: ast.RulesFile, default_hw: str = DEFAULT_HARDWARE) -> None:
    """Check every test of a file without running it: the fragment type-checks, the
    hardware loads, the terms of `equal(...)` are well-formed (raises a RuleError)."""
    for test in parsed.tests:
        hw = test_hardware(test, parsed.path, parsed.source, default_hw)
        with instructions_in_use(hw):
            check_ops(test, parsed.path, parsed.source)
            fragment_graph(test, parsed.path, parsed.source)
            graph_with_terms(test, parsed.path, parsed.source)


class RuleSets:
    """Compiled rule sets, one per (files, approximate or not), and e-graphs with them
    loaded, one per (rule set, hardware), built once: loading the rules into egglog
    costs more than optimizing a test's fragment."""

    def __init__(self, override: Sequence[str | Path] | None = None):
        self.override = tuple(str(p) for p in override) if override else None
        self._cache: dict[tuple, CompiledRules] = {}
        self._egraphs: dict[tuple, EggGraph] = {}

    def paths_for(self, rules_file: str) -> tuple[str, ...]:
        return self.override or (str(Path(rules_file).parent),)

    def compiled(
        self, rules_file: str, approx: bool, provenance: bool = False
    ) -> tuple[tuple[str, ...], CompiledRules]:
        """The rules of a test of `rules_file`; with the rules of the instructions of
        the hardware in use, if it declares any (eqsat/custom_instr). `provenance`:
        compiled to record which rule built each e-node (eqsat explain)."""
        paths = self.paths_for(rules_file)
        key = (paths, approx, in_use(), provenance)
        if key not in self._cache:
            self._cache[key] = compile_rule_paths(
                list(paths), include_approx=approx, provenance=provenance
            )
        return tuple(str(p) for p in rule_files(paths)), self._cache[key]

    def prepared(self, rules_file: str, approx: bool, hw: Hardware) -> EggGraph:
        """An e-graph with the rules and `hw`'s facts loaded (`optimize(prepared=)`)."""
        key = (self.paths_for(rules_file), approx, hw)
        if key not in self._egraphs:
            _, rules = self.compiled(rules_file, approx)
            self._egraphs[key] = prepare_egraph(rules, hw)
        return self._egraphs[key]


def run_test(
    parsed: ast.RulesFile,
    test: ast.TestDecl,
    rulesets: RuleSets,
    default_hw: str = DEFAULT_HARDWARE,
    limits: Limits = DEFAULT_LIMITS,
) -> TestResult:
    hw = test_hardware(test, parsed.path, parsed.source, default_hw)
    with instructions_in_use(hw):  # a hardware's declared instructions are ops here
        return _run_test(parsed, test, rulesets, hw, limits)


def _run_test(
    parsed: ast.RulesFile,
    test: ast.TestDecl,
    rulesets: RuleSets,
    hw: Hardware,
    limits: Limits,
) -> TestResult:
    start = time.perf_counter()
    file, text = parsed.path, parsed.source
    check_ops(test, file, text)
    graph = fragment_graph(test, file, text)
    terms_graph, pairs = graph_with_terms(test, file, text)
    files, rules = rulesets.compiled(file, test.approx)
    own = tuple(n for r in parsed.rules for n in egglog_names(r))
    result = TestResult(file, test, [], None, Counter(), own, files)
    program_expects = [e for e in test.expects if not isinstance(e, ast.ExpectEqual)]
    if program_expects or not pairs:
        from frontend import graph_to_model, print_model

        prepared = rulesets.prepared(file, test.approx, hw)
        opt = optimize(graph, rules, hw, limits, prepared=prepared)
        result.fired.update(opt.saturation.rules_fired)
        result.program = print_model(graph_to_model(opt.graph))
        for e in program_expects:
            result.outcomes.append(
                check_program(e, opt.graph, hw, opt.before.cycles, opt.after.cycles)
            )
        if opt.saturation.stop_reason != "saturated":
            result.notes.append(f"saturation stopped: {opt.saturation.describe_stop()}")
        if not all(o.passed for o in result.outcomes):
            result.explained = _explain(graph, hw, rulesets, file, test.approx, limits)
    if pairs:
        prepared = rulesets.prepared(file, test.approx, hw)
        with saturated(prepared, terms_graph, rules, limits) as (names, report):
            result.fired.update(report.rules_fired)
            for pair in pairs:
                same = same_class(prepared, names[pair.left], names[pair.right])
                got = "one e-class" if same else "different e-classes after saturation"
                result.outcomes.append(Outcome(pair.expect, same, got))
    order = {id(e): k for k, e in enumerate(test.expects)}
    result.outcomes.sort(key=lambda o: order[id(o.expect)])
    result.seconds = time.perf_counter() - start
    return result


def _explain(
    graph: Graph, hw: Hardware, rulesets: RuleSets, file: str, approx: bool, limits: Limits
) -> list[str]:
    """For a failed test: each kernel of the extracted program with the rule that built
    it and the alternatives of its e-class that lost, and why (as `eqsat explain`; the
    optimization runs again with rules that record who built what)."""
    from eqsat.explain import explain, format_explanations

    _, rules = rulesets.compiled(file, approx, provenance=True)
    opt = optimize(graph, rules, hw, limits, keep_egraph=True)
    if opt.priced is None:
        return []
    return format_explanations(explain(opt.original, opt.graph, opt.priced, hw)).splitlines()


def run_files(
    parsed_files: Sequence[ast.RulesFile],
    rule_paths: Sequence[str | Path] | None = None,
    default_hw: str = DEFAULT_HARDWARE,
    limits: Limits = DEFAULT_LIMITS,
    only: Sequence[str] = (),
    on_result=None,
) -> list[TestResult]:
    """Run the tests of `parsed_files` (those named in `only`, if given)."""
    rulesets = RuleSets(rule_paths)
    results = []
    for parsed in parsed_files:
        for test in parsed.tests:
            if only and test.name not in only:
                continue
            r = run_test(parsed, test, rulesets, default_hw, limits)
            results.append(r)
            if on_result is not None:
                on_result(r)
    return results


def format_result(result: TestResult, source: str) -> str:
    """PASS/FAIL line; on failure each expectation, the extracted program and the rules
    of the test's file that fired."""
    where = f"{result.file}:{result.test.pos.line}"
    head = f"{'PASS' if result.passed else 'FAIL'} {result.test.name} ({where}, {result.seconds:.2f} s)"
    if result.passed:
        return head
    lines = [head]
    src = source.splitlines()
    for o in result.outcomes:
        said = src[o.expect.pos.line - 1].strip() if o.expect.pos.line <= len(src) else ""
        mark = "ok  " if o.passed else "FAIL"
        lines.append(f"  {mark} {said}: got {o.got}")
    if result.program is not None:
        lines.append("  extracted program:")
        lines += [f"    {line}" for line in result.program.rstrip().splitlines()]
    mine = [(n, result.fired[n]) for n in result.file_rules if result.fired.get(n)]
    stem = Path(result.file).name
    if mine:
        lines.append(f"  rules of {stem} that fired: " + ", ".join(f"{n} ({c})" for n, c in mine))
    else:
        lines.append(f"  no rule of {stem} fired")
    others = sorted(
        ((n, c) for n, c in result.fired.items() if c and n not in result.file_rules),
        key=lambda t: (-t[1], t[0]),
    )
    if others:
        shown = ", ".join(f"{n} ({c})" for n, c in others[:8])
        more = f", and {len(others) - 8} more" if len(others) > 8 else ""
        lines.append(f"  other rules that fired: {shown}{more}")
    if result.explained:
        lines.append("  how each kernel was chosen (as `eqsat explain` shows it):")
        lines += [f"    {line}" for line in result.explained]
    lines.append(f"  rules loaded from: {', '.join(result.rule_set)}")
    lines += [f"  note: {n}" for n in result.notes]
    return "\n".join(lines)


def validate_files(
    paths: Iterable[str | Path], default_hw: str = DEFAULT_HARDWARE
) -> dict[str, int]:
    """`validate` every test of the rules files under `paths`; tests per file."""
    parsed = parse_files(paths)
    for p in parsed:
        validate(p, default_hw)
    return {p.path: len(p.tests) for p in parsed}


def display_path(path: str | Path) -> str:
    """`path` relative to the working directory when it lies below it (shorter output)."""
    try:
        return str(Path(path).resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)
