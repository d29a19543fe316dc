"""What `eqsat verify-rules` prints: a line per rule direction and, for a failure, the
shrunk counterexample (the instance as a model, every input and both results printed
in full) with the command that reproduces it."""

from __future__ import annotations

import numpy as np

from eqsat.ir.graph import Graph
from eqsat.verify.check import FAILED, NO_INSTANCE, PASSED, Counterexample, DirectionResult

_RANGE_WORDS = {
    "normal": "standard-normal inputs",
    "unit-positive": "positive inputs in [0.5, 2]",
    "small": "inputs of magnitude 0.01",
}
_EDGE_REGIMES = ("zeros", "negative", "positive", "large", "tiny", "mixed")


def result_line(r: DirectionResult, width: int) -> str:
    tag = {PASSED: "PASS ", FAILED: "FAIL ", NO_INSTANCE: "NOGEN"}[r.status]
    head = f"{tag} {r.name:<{width}}"
    if r.status == NO_INSTANCE:
        return f"{head} could not generate an instance ({r.no_instance} examples tried)"
    if r.status == FAILED:
        assert r.counterexample is not None
        return f"{head} after {r.examples + 1} examples: {r.counterexample.reason}"
    text = f"{head} {r.examples} examples"
    assumes = r.direction.rule.ast.assumes
    if assumes:
        text += " assuming " + ", ".join(
            f"{f'abs({a.name})' if a.magnitude else a.name} {a.op} {_number(a.value)}"
            for a in assumes
        )
    if r.no_instance:
        text += f" ({r.no_instance} more found no instance)"
    if r.unchecked:
        text += f"; {r.unchecked} left unchecked: the reference was not finite in any range"
    if r.restricted:
        ranges = ", ".join(
            f"{n} on {_RANGE_WORDS.get(k, k)}" for k, n in sorted(r.restricted.items())
        )
        edges = "/".join(k for k in _EDGE_REGIMES if k in r.overflowed) or "some"
        text += (
            f"; checked only for a range in {sum(r.restricted.values())}: the reference was "
            f"not finite (or left a calibrated range or an assumption) on {edges} inputs, "
            f"re-drawn as {ranges}"
        )
    return text


def summary(results: list[DirectionResult], n_rules: int, seconds: float) -> str:
    counts = {s: sum(r.status == s for r in results) for s in (PASSED, FAILED, NO_INSTANCE)}
    return (
        f"{n_rules} rules ({len(results)} directions): {counts[PASSED]} passed, "
        f"{counts[FAILED]} failed, {counts[NO_INSTANCE]} could not generate an instance "
        f"in {seconds:.1f} s"
    )


def format_counterexample(r: DirectionResult, files: list[str]) -> str:
    """The failure of `r` in full, indented under its result line."""
    cx = r.counterexample
    assert cx is not None
    rule = r.direction.rule
    lines = [f"  rule {r.name} at {rule.location}" + (f": {rule.doc}" if rule.doc else "")]
    env = cx.instance.env
    bound = {k: v for k, (v, _) in sorted(env.values.items())}
    if bound:
        lines.append("  bindings: " + ", ".join(f"{k}={_value(v)}" for k, v in bound.items()))
    lines.append("  instance (lhs_* is the left-hand side, rhs_* its replacement):")
    lines += ["    " + line for line in _model_text(cx).splitlines()]
    for name, value in cx.inputs.items():
        regime = cx.regimes.get(name, "")
        lines.append(f"  input {name} ({regime}):")
        lines += ["    " + line for line in _array(value).splitlines()]
    for key, (lhs, rhs) in cx.outputs.items():
        lines.append(f"  left-hand side {key}:")
        lines += ["    " + line for line in _array(lhs).splitlines()]
        lines.append(f"  right-hand side {key}:")
        lines += ["    " + line for line in _array(rhs).splitlines()]
    where = " ".join(files)
    lines.append(
        f"  reproduce: eqsat verify-rules {where} --rule {r.name} --seed {r.seed} "
        f"--examples {r.requested}"
    )
    return "\n".join(lines)


def _value(v) -> str:
    if isinstance(v, tuple):
        return "[" + ", ".join(str(x) for x in v) + "]"
    return repr(v) if isinstance(v, float) else str(v)


def _model_text(cx: Counterexample) -> str:
    from frontend import graph_to_model, print_model

    graph = cx.instance.builder.graph
    if not graph.outputs:
        outputs = [(f"lhs_{k}", n) for k, n in cx.instance.roots.items()]
        if cx.replacement is not None:
            outputs += [(f"rhs_{k}", n) for k, n in cx.replacement.roots.items()]
        graph = Graph(graph.name, graph.nodes, outputs, graph.dims, graph.constants)
    try:
        return print_model(graph_to_model(graph)).rstrip()
    except Exception as err:  # pragma: no cover - printing is best effort
        return f"(cannot print the instance: {err})"


def _array(a: np.ndarray) -> str:
    a = np.asarray(a)
    if a.dtype.kind == "V" or a.dtype.name == "bfloat16":
        a = a.astype(np.float32)
    return np.array2string(a, threshold=10**6, max_line_width=100, precision=6)


def _number(expr) -> str:
    return f"-{expr.operand.value}" if hasattr(expr, "operand") else str(expr.value)
