"""The Python evaluation of rule expressions, guards and patterns agrees with what the
rule compiler asks egglog (eqsat/rules/exprs.py, guards.py, prelude.egg)."""

from __future__ import annotations

import pytest

from eqsat.ir.graph import GraphBuilder
from eqsat.ir.types import DType, TensorType
from eqsat.rules import load_rules_text
from eqsat.rules.parser import parse_rules
from eqsat.rules.scope import Ty
from eqsat.verify.guards import holds
from eqsat.verify.instance import build_rhs, directions, match_lhs
from eqsat.verify.semantics import Env, Undefined, evaluate

F32 = DType.F32


def _expr(text: str):
    """The left side of the guard of a one-rule file `r: neg(x) => x if TEXT == 0`."""
    rule = parse_rules(f"r: neg(x) => x if {text} == 0\n", "t").rules[0]
    return rule.guards[0].left


def _env(*shapes: tuple[int, ...]) -> Env:
    b = GraphBuilder("t")
    env = Env(b.graph)
    for i, shape in enumerate(shapes):
        env.tensors[f"x{i}"] = b.leaf("input", f"x{i}", TensorType(F32, shape))
    return env


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("-7 / 2", -3),  # i64 division truncates toward zero
        ("-7 % 2", -1),
        ("7 / 2", 3),
        ("dim(x0, -1)", 5),
        ("dim(x0, 0) * rank(x0)", 6),
        ("1.0 / 4", 0.25),  # an integer literal beside a float is a float
        ("max(dim(x0, 0), 4)", 4),
        ("index(permute([5, 6, 7], [2, 0, 1]), 5)", 1),
    ],
)
def test_expressions(text, value):
    got, _ = evaluate(_expr(text), _env((3, 5)))
    assert got == value and type(got) is type(value)


@pytest.mark.parametrize(
    "text",
    ["dim(x0, 2)", "index([1, 2], 3)", "rank(x0) / 0", "dim(x0, 0 - 3)"],
)
def test_undefined_values(text):
    with pytest.raises(Undefined):
        evaluate(_expr(text), _env((3, 5)))


def test_list_functions():
    env = _env((2, 3, 4))
    cases = {
        "swaplast2(shape(x0))": (2, 4, 3),
        "setnth(fill(rank(x0), 0), 1, dim(x0, 1))": (0, 3, 0),
        "permute(shape(x0), range(rank(x0)))": (2, 3, 4),
    }
    for text, want in cases.items():
        rule = parse_rules(f"r: neg(x) => x if {text} == [1]\n", "t").rules[0]
        assert evaluate(rule.guards[0].left, env)[0] == want


def test_equality_guards_bind():
    rule = parse_rules("r: neg(x) => x if shape(x0) == [M, K], dim(x0, 0) == N\n", "t").rules[0]
    env = _env((2, 7))
    assert all(holds(g, env) for g in rule.guards)
    assert env.values["M"] == (2, Ty.INT) and env.values["K"] == (7, Ty.INT)
    assert env.values["N"] == (2, Ty.INT)


def _instance(rule_text: str, build):
    rules = load_rules_text("ruleset t\n" + rule_text, "t.rules")
    (direction,) = directions(rules.rules[0])
    b = GraphBuilder("t")
    root = build(b)
    return direction, b, root


def test_matcher_respects_the_broadcast_guard():
    text = "add-zero: r = add(x, const(value=0.0)) => x if shape(r) == shape(x)\n"

    def widening(b):
        x = b.leaf("input", "x", TensorType(F32, (3,)))
        return b.add("add", [x, b.const(0.0, TensorType(F32, (2, 3)))])

    d, b, root = _instance(text, widening)
    assert match_lhs(d, b.graph, {"r": root}) is None

    def same(b):
        x = b.leaf("input", "x", TensorType(F32, (2, 3)))
        return b.add("add", [x, b.const(0.0, TensorType(F32, (3,)))])

    d, b, root = _instance(text, same)
    env = match_lhs(d, b.graph, {"r": root})
    assert env is not None and build_rhs(d, env, b).roots == {"r": env.tensors["x"]}


def test_matcher_reads_canonical_attributes():
    text = "t: transpose(x, perm=P) => x if P == range(rank(x))\n"

    def identity(b):
        x = b.leaf("input", "x", TensorType(F32, (2, 3)))
        return b.add("transpose", [x], {"perm": (-2, -1)})  # canonical: [0, 1]

    d, b, root = _instance(text, identity)
    env = match_lhs(d, b.graph, {"root": root})
    assert env is not None and env.values["P"][0] == (0, 1)
