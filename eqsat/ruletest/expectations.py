"""Whether an optimized fragment meets its `expect` lines."""

from __future__ import annotations

import operator
from collections import Counter
from dataclasses import dataclass

from eqsat.ir.graph import Graph
from eqsat.program_cost import kernel_nodes
from eqsat.rules import ast
from hwsim.hardware import Hardware

COMPARE = {
    "==": operator.eq,
    "!=": operator.ne,
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
}


@dataclass(frozen=True)
class Outcome:
    expect: ast.Expectation
    passed: bool
    got: str  # what the program (or the e-graph) showed


def kernel_ops(graph: Graph, hw: Hardware) -> list[str]:
    """The op of each kernel of `graph` in program order: the nodes `program_cost`
    counts as kernels (live, priced, not weights prepared at load time)."""
    return [graph.nodes[i].op for i in kernel_nodes(graph, hw)]


def _ops_in(graph: Graph) -> Counter[str]:
    live = graph.live()
    return Counter(node.op for i, node in graph if live[i])


def check_program(
    expect: ast.Expectation, graph: Graph, hw: Hardware, before: int, after: int
) -> Outcome:
    """Check one expectation other than `equal` on the extracted program `graph`, whose
    estimated cycles are `after` (`before`: the fragment as written)."""
    if isinstance(expect, ast.ExpectKernels):
        kernels = kernel_ops(graph, hw)
        same = Counter(kernels) == Counter(name for name, _ in expect.kernels)
        ok = same if expect.op == "==" else not same
        return Outcome(expect, ok, f"kernels [{', '.join(kernels)}]")
    if isinstance(expect, ast.ExpectKernelCount):
        kernels = kernel_ops(graph, hw)
        ok = COMPARE[expect.op](len(kernels), expect.count)
        return Outcome(expect, ok, f"{len(kernels)} kernels [{', '.join(kernels)}]")
    if isinstance(expect, ast.ExpectNo):
        n = _ops_in(graph)[expect.op]
        return Outcome(expect, n == 0, f"{n} {expect.op} node{'s' if n != 1 else ''}")
    if isinstance(expect, ast.ExpectCost):
        bound = evaluate(expect.bound, before)
        ok = COMPARE[expect.op](after, bound)
        ratio = f" ({after / before:.3f} of the input)" if before else ""
        return Outcome(
            expect,
            ok,
            f"cost {after:,} cycles{ratio}; bound {bound:,.1f} (input {before:,} cycles)",
        )
    raise TypeError(f"not a program expectation: {expect!r}")


def evaluate(expr: ast.Expr, input_cycles: int) -> float:
    """A cost bound (numbers, `input`, + - * /; checked by the parser)."""
    if isinstance(expr, ast.IntLit | ast.FloatLit):
        return float(expr.value)
    if isinstance(expr, ast.Name):
        return float(input_cycles)
    if isinstance(expr, ast.Neg):
        return -evaluate(expr.operand, input_cycles)
    assert isinstance(expr, ast.BinOp)
    a, b = evaluate(expr.left, input_cycles), evaluate(expr.right, input_cycles)
    if expr.op == "/":
        return a / b if b else float("inf")
    return {"+": a + b, "-": a - b, "*": a * b}[expr.op]
