"""Weight preparation: what runs once when the weights are loaded, not per inference.

A model's params are fixed for every inference. Work that reads only params and
constants (a batch-norm scale folded into conv weights, weights concatenated so that
one GEMM replaces three, a weight quantized or transposed) gives the same result every
time, so inference compilers run it once at load time, as TVM's constant folding of
bound params and ONNX Runtime's folding of initializers do. eqsat does the same:

- such a node is *prepared*: the compiled program takes its value as an input buffer
  (`prep.<name>`) that the host computes from the params when it feeds the program
  (backend/program.py CompiledProgram.feeds), listed in the compiled program;
- the cost model prices it at nothing per inference (program_cost.program_cost, extraction's
  prices), and the model roofline leaves its work out.

A `literal` (a constant tensor with its data, an ONNX initializer imported as a
constant) is a weight here: its values are as fixed as a param's, and a rewrite can
bring two of them together (add-assoc turns BERT's word + token-type + position
embeddings into the word embeddings plus one prepared sum). Only nodes that depend on
at least one param or literal are prepared (nodes of splat constants and iotas alone
are folded into immediates by the backend), and views (reshape, transpose, slice,
broadcast) are not: they cost nothing at run time, and a broadcast prepared would
store more than it reads.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping

from eqsat.ir.graph import Graph

WEIGHT_LEAVES = frozenset({"param", "literal"})
CONSTANT_LEAVES = frozenset({"const", "iota"})
VIEW_OPS = frozenset({"reshape", "transpose", "slice", "broadcast"})

# The value class of a node: computed from params (and constants), from constants only,
# or from inputs (a run-time value).
WEIGHT, CONSTANT, RUNTIME = "weight", "constant", "runtime"


def value_class(op: str, children: Iterable[str]) -> str:
    """The class of a node's value from its op and its operands' classes."""
    if op in WEIGHT_LEAVES:
        return WEIGHT
    if op in CONSTANT_LEAVES:
        return CONSTANT
    kinds = set(children)
    if not kinds:  # another leaf: an input
        return RUNTIME
    if RUNTIME in kinds:
        return RUNTIME
    return WEIGHT if WEIGHT in kinds else CONSTANT


def is_prepared(op: str, children: Iterable[str]) -> bool:
    """Is a node of this op over operands of these classes computed at load time?"""
    return op not in VIEW_OPS and not is_leaf_op(op) and value_class(op, children) == WEIGHT


def stored_transposed(op: str, children: Iterable[str]) -> bool:
    """Is a node of this op over operands of these classes a transpose of a weight,
    which the host stores in the transposed order (backend/layouts.py), so that the
    view costs nothing? (When the weight's every reader transposes it alike.)"""
    return op == "transpose" and list(children) == [WEIGHT]


def is_leaf_op(op: str) -> bool:
    return op in WEIGHT_LEAVES or op in CONSTANT_LEAVES or op == "input"


def graph_value_classes(graph: Graph) -> list[str]:
    """The value class of every node of `graph` (nodes are in topological order)."""
    classes: list[str] = []
    for _, node in graph:
        classes.append(value_class(node.op, (classes[j] for j in node.inputs)))
    return classes


def prepared_nodes(graph: Graph) -> frozenset[int]:
    """The live nodes of `graph` computed at load time."""
    classes = graph_value_classes(graph)
    live = graph.live()
    return frozenset(
        i
        for i, node in graph
        if live[i] and is_prepared(node.op, (classes[j] for j in node.inputs))
    )


def eclass_value_classes(
    classes: Mapping[str, list], children: Callable[[object], tuple[str, ...]], op: Callable
) -> dict[str, str]:
    """The value class of every e-class of an e-graph: the least run-time class any of
    its e-nodes reaches (an e-class holding a term computed from params alone is a
    weight, whatever other terms it holds), to a fixpoint."""
    rank = {CONSTANT: 0, WEIGHT: 1, RUNTIME: 2}
    state: dict[str, str] = {}
    changed = True
    while changed:
        changed = False
        for eclass, nodes in classes.items():
            best = state.get(eclass)
            for n in nodes:
                kids = children(n)
                if any(k not in state for k in kids):
                    continue
                c = value_class(op(n), (state[k] for k in kids))
                if best is None or rank[c] < rank[best]:
                    best = c
            if best is not None and state.get(eclass) != best:
                state[eclass] = best
                changed = True
    return state
