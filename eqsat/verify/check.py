"""Check one direction of a rule by property-based testing (hypothesis).

Each example: find an instance of the left-hand side (generate.py), build the
right-hand side on it (an ill-typed or undefined replacement is a failure), draw
input values (values.py), evaluate both sides with the reference interpreter and
compare each replaced root (compare.py). On a failure hypothesis shrinks the example
and the smallest counterexample is kept, with the seed that reproduces the run.
"""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass, field

import numpy as np
from hypothesis import HealthCheck, Phase, Verbosity, given, settings
from hypothesis import seed as hypothesis_seed
from hypothesis import strategies as st
from hypothesis.errors import HypothesisException

from eqsat.interpreter import evaluate_nodes
from eqsat.ops import OpTypeError
from eqsat.verify.compare import Verdict, compare, tolerance
from eqsat.verify.generate import Instance, find_instance
from eqsat.verify.guards import Facts
from eqsat.verify.instance import Direction, Replacement, build_rhs
from eqsat.verify.semantics import Undefined
from eqsat.verify.values import RESTRICTED, arrays, input_draws

PASSED, FAILED, NO_INSTANCE = "passed", "failed", "no instance"


@dataclass
class Counterexample:
    reason: str
    instance: Instance
    replacement: Replacement | None = None
    inputs: dict[str, np.ndarray] = field(default_factory=dict)
    outputs: dict[str, tuple[np.ndarray, np.ndarray]] = field(default_factory=dict)
    regimes: dict[str, str] = field(default_factory=dict)


@dataclass
class DirectionResult:
    direction: Direction
    status: str
    examples: int  # checked instances
    no_instance: int  # examples in which no instance was found
    unchecked: int  # examples whose reference was not finite even in a restricted range
    seed: int
    seconds: float
    requested: int  # max examples of the run (with the seed, what reproduces it)
    restricted: Counter[str] = field(default_factory=Counter)  # range -> examples
    overflowed: Counter[str] = field(default_factory=Counter)  # regime the reference broke on
    counterexample: Counterexample | None = None

    @property
    def name(self) -> str:
        return self.direction.name


# Examples without any instance after which a direction is given up as "could not
# generate an instance" (hypothesis's first examples are its simplest draws, so a few
# misses are normal; a pattern the generator cannot reach misses every time).
GIVE_UP_AFTER = 25


class RuleViolation(Exception):
    def __init__(self, counterexample: Counterexample):
        super().__init__(counterexample.reason)
        self.counterexample = counterexample


@dataclass
class _Stats:
    no_instance: int = 0
    unchecked: int = 0
    checked: int = 0
    failed: bool = False  # from then on hypothesis is shrinking: stop counting
    gave_up: bool = False
    restricted: Counter[str] = field(default_factory=Counter)
    overflowed: Counter[str] = field(default_factory=Counter)


def check_direction(
    direction: Direction,
    examples: int,
    seed: int,
    facts: Facts | None = None,
    shrink: bool = True,
) -> DirectionResult:
    """Run `examples` hypothesis examples of `direction` (reproducible from `seed`).
    `shrink=False`: a failure ends the check at once, with the counterexample as found
    (for callers that only need the verdict, such as rule synthesis)."""
    stats = _Stats()

    @hypothesis_seed(seed)
    @settings(
        max_examples=examples,
        database=None,
        deadline=None,
        derandomize=False,
        suppress_health_check=list(HealthCheck),
        verbosity=Verbosity.quiet,
        phases=(Phase.generate, Phase.shrink) if shrink else (Phase.generate,),
        report_multiple_bugs=False,
        print_blob=False,
    )
    @given(st.data())
    def prop(data) -> None:
        _example(direction, data, facts, stats)

    start = time.perf_counter()
    counterexample = None
    try:
        prop()
    except RuleViolation as v:
        counterexample = v.counterexample
    except HypothesisException:
        pass  # e.g. every example overran: nothing was checked
    status = FAILED if counterexample is not None else PASSED if stats.checked else NO_INSTANCE
    return DirectionResult(
        direction,
        status,
        stats.checked,
        stats.no_instance,
        stats.unchecked,
        seed,
        time.perf_counter() - start,
        examples,
        stats.restricted,
        stats.overflowed,
        counterexample,
    )


def _example(direction: Direction, data, facts: Facts | None, stats: _Stats) -> None:
    if stats.gave_up:
        return  # the remaining examples cost hypothesis's overhead only
    count = not stats.failed
    inst = find_instance(data.draw, direction, facts)
    if inst is None:
        stats.no_instance += count
        stats.gave_up = not stats.checked and stats.no_instance >= GIVE_UP_AFTER
        return
    try:
        replacement = build_rhs(direction, inst.env, inst.builder)
    except Undefined as err:
        if err.in_query:  # a shape read of the right-hand side has no value: no match
            stats.no_instance += count
            return
        _fail(
            stats, Counterexample(f"the right-hand side computes an undefined value: {err}", inst)
        )
    except OpTypeError as err:
        _fail(stats, Counterexample(f"the right-hand side is ill-typed here: {err}", inst))
    graph = inst.builder.graph
    for key, new in replacement.roots.items():
        old = inst.roots[key]
        if graph.nodes[old].type != graph.nodes[new].type:
            reason = (
                f"the right-hand side has type {graph.nodes[new].type} where the left-hand side "
                f"has {graph.nodes[old].type}"
            )
            _fail(stats, Counterexample(reason, inst, replacement))
    graph.outputs = [(f"lhs_{k}", inst.roots[k]) for k in replacement.roots]
    graph.outputs += [(f"rhs_{k}", n) for k, n in replacement.roots.items()]
    draws = data.draw(input_draws(graph))
    regime = None
    for attempt in (None, *RESTRICTED):
        verdicts, inputs, outputs = _evaluate(direction, inst, replacement, draws, attempt)
        if all(v.reference_finite for v in verdicts):
            regime = attempt
            break
        if attempt is None and count:
            stats.overflowed.update({draws[n][0] for n in draws} - {"small-int", "normal"})
    else:
        stats.unchecked += count  # not even a restricted range keeps the reference finite
        return
    failed = [v for v in verdicts if not v.ok]
    if failed:
        regimes = {n: regime or draws[n][0] for n in draws}
        _fail(
            stats,
            Counterexample(failed[0].message, inst, replacement, inputs, outputs, regimes),
        )
    if count:
        stats.checked += 1
        if regime is not None:
            stats.restricted[regime] += 1


def _evaluate(direction, inst: Instance, replacement: Replacement, draws, regime):
    graph = inst.builder.graph
    lhs_nodes = range(replacement.first_node)
    inputs = fill_calibrated_ranges(graph, arrays(graph, draws, regime), lhs_nodes, draws)
    inputs = draw_within_assumptions(direction, inst, inputs)
    with np.errstate(all="ignore"):
        values = evaluate_nodes(graph, inputs)
    if not preconditions_hold(graph, values, lhs_nodes) or not assumptions_hold(
        direction, inst, values
    ):
        return [Verdict(False, False, "outside a calibrated range")], inputs, {}
    tol = tolerance(graph, values, lhs_nodes, direction.approx)
    if direction.approx is not None:
        tol = max(tol, direction.approx * computation_magnitude(graph, inputs, inst))
    verdicts, outputs = [], {}
    for key, new in replacement.roots.items():
        old = inst.roots[key]
        lhs, rhs = values[old], values[new]
        outputs[key] = (lhs, rhs)
        verdicts.append(compare(lhs, rhs, graph.nodes[old].type.dtype, tol, direction.approx))
    return verdicts, inputs, outputs


def preconditions_hold(graph, values: list, nodes: range) -> bool:
    """What the left-hand side asserts about its values: `observe(x, scale=S,
    zero_point=Z)` says x was calibrated into the int8 range, [(-128 - Z) S, (127 - Z) S];
    a quantization rule only has to hold there."""
    for i in nodes:
        node = graph.nodes[i]
        if node.op != "observe" or values[i] is None:
            continue
        s, z = float(node.attr("scale")), int(node.attr("zero_point"))
        x = np.asarray(values[node.inputs[0]], dtype=np.float64)
        if x.size and not ((x >= (-128 - z) * s) & (x <= (127 - z) * s)).all():
            return False
    return True


def computation_magnitude(graph, inputs: dict, inst: Instance) -> float:
    """The left-hand side evaluated on |inputs|: for a dot product, sum |x||w|.

    An approximate rule's budget is relative to this, as a floating-point error bound
    is: quantizing the terms of a sum that cancels leaves an error of the size of the
    terms, not of their sum. A calibrated (`observe`d) input counts at its full scale."""
    magnitudes = {
        k: np.abs(np.asarray(v, dtype=np.float64)).astype(v.dtype) for k, v in inputs.items()
    }
    for _, node in graph:
        leaf = graph.nodes[node.inputs[0]] if node.op == "observe" else None
        if leaf is not None and leaf.op in ("input", "param"):
            # a calibrated input's error is relative to its full scale, not its draw
            z = int(node.attr("zero_point"))
            full = float(node.attr("scale")) * max(abs(-128 - z), abs(127 - z))
            name = str(leaf.attr("name"))
            magnitudes[name] = np.full_like(magnitudes[name], full)
    with np.errstate(all="ignore"):
        values = evaluate_nodes(graph, magnitudes)
    out = 0.0
    for node in inst.roots.values():
        v = values[node]
        if v is None or v.size == 0:
            continue
        v = np.abs(np.asarray(v, dtype=np.float64))
        finite = v[np.isfinite(v)]
        if finite.size:
            out = max(out, float(finite.max()))
    return out


def fill_calibrated_ranges(graph, inputs: dict, nodes: range, draws) -> dict:
    """An input that a left-hand side `observe`s was calibrated: real data spans the
    observed range, so draw it uniformly across [(-128 - Z) S, (127 - Z) S] rather than
    far inside one quantization step (where any int8 rule is trivially all error)."""
    out = dict(inputs)
    for i in nodes:
        node = graph.nodes[i]
        if node.op != "observe":
            continue
        leaf = graph.nodes[node.inputs[0]]
        if leaf.op not in ("input", "param"):
            continue
        name = str(leaf.attr("name"))
        s, z = float(node.attr("scale")), int(node.attr("zero_point"))
        rng = np.random.default_rng(draws[name][1])
        x = rng.uniform((-128 - z) * s, (127 - z) * s, size=leaf.type.shape)
        out[name] = x.astype(leaf.type.dtype.np_dtype)
    return out


_COMPARE = {">": np.greater, ">=": np.greater_equal, "<": np.less, "<=": np.less_equal}


def _bound(assume) -> float:
    value = assume.value
    return float(-value.operand.value if hasattr(value, "operand") else value.value)


def draw_within_assumptions(direction, inst: Instance, inputs: dict) -> dict:
    """Move each input a rule makes an assumption about into the assumed domain
    (`s > 0`: c + |s| + a margin; `abs(a) >= c`: a pushed out past c, sign kept;
    `abs(a) <= c`: a scaled into the bound, its pattern kept), so
    that every example checks the rule where it claims to hold."""
    out = dict(inputs)
    graph = inst.builder.graph
    for assume in direction.rule.ast.assumes:
        node = inst.env.tensors.get(assume.name)
        if node is None or graph.nodes[node].op not in ("input", "param"):
            continue
        name = str(graph.nodes[node].attr("name"))
        dtype = graph.nodes[node].type.dtype
        x = np.asarray(out[name], dtype=np.float64)
        c = _bound(assume)
        step = 1.0 if dtype.is_int else max(abs(c), 1.0) * 1e-3
        if assume.magnitude and assume.op in (">", ">="):
            x = np.where(x < 0, -1.0, 1.0) * (c + step + np.abs(x))
        elif assume.magnitude and assume.op in ("<", "<=") and c > 0:
            top = float(np.abs(x).max()) if x.size else 0.0
            if top > c or (assume.op == "<" and top == c):  # scaled into the bound
                x = x * ((c - step) / top)
        elif assume.op in (">", ">="):
            x = c + step + np.abs(x)
        elif assume.op in ("<", "<="):
            x = c - step - np.abs(x)
        elif assume.op == "!=":
            x = np.where(x == c, c + step, x)
        if dtype.is_int:
            info = np.iinfo(dtype.np_dtype)
            x = np.clip(np.rint(x), info.min, info.max)
        out[name] = x.astype(dtype.np_dtype)
    return out


def assumptions_hold(direction, inst: Instance, values: list) -> bool:
    """The rule's `assume` clauses (e.g. `assume s > 0`) hold on this draw."""
    for assume in direction.rule.ast.assumes:
        node = inst.env.tensors.get(assume.name)
        if node is None or values[node] is None:
            continue
        x = np.asarray(values[node], dtype=np.float64)
        if assume.magnitude:
            x = np.abs(x)
        number = _bound(assume)
        ok = x != number if assume.op == "!=" else _COMPARE[assume.op](x, number)
        if not np.all(ok):
            return False
    return True


def _fail(stats: _Stats, counterexample: Counterexample):
    stats.failed = True
    raise RuleViolation(counterexample)
