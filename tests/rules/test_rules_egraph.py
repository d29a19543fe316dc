"""Compiled rules do in egglog what they say: merge, guard, build, fold."""

from __future__ import annotations

import pytest
from rules_helpers import run_rules, sample

from eqsat.rules import load_rules_text


@pytest.fixture(scope="module")
def rules():
    return sample()


def test_add_zero_merges_x_plus_zero_with_x(rules) -> None:
    r = run_rules(
        "model m { input x: f32[2, 3]  const z: f32[] = 0.0  y = add(x, z)  output y }",
        rules,
        "sample",
    )
    assert r.same("y", "x")
    assert r.matches["add-zero"] == 1


def test_add_zero_guard_false_when_zero_broadcasts_x(rules) -> None:
    r = run_rules(
        "model m { input x: f32[3]  const z: f32[2, 3] = 0.0  y = add(x, z)  output y }",
        rules,
        "sample",
    )
    assert not r.same("y", "x")
    assert r.matches.get("add-zero", 0) == 0
    assert r.egraph.shapes[r.roots["y"]] == (2, 3)


def test_merge_matmul_builds_concat_and_slices(rules) -> None:
    model = """model m {
      input x: f32[4, 8]
      param w1: f32[8, 16]
      param w2: f32[8, 32]
      a = matmul(x, w1)
      b = matmul(x, w2)
      output a, b
    }"""
    r = run_rules(model, rules, "sample")
    # (a, b) and (b, a) both match: one slice of a comes first in the concat
    [slice_a] = [n for n in r.nodes("a", "slice") if dict(n.attrs)["starts"] == (0, 0)]
    [slice_b] = [n for n in r.nodes("b", "slice") if n.children == slice_a.children]
    assert dict(slice_a.attrs) == {"starts": (0, 0), "ends": (4, 16), "axes": (0, 1)}
    assert dict(slice_b.attrs) == {"starts": (0, 16), "ends": (4, 48), "axes": (0, 1)}
    (m_class,) = slice_a.children
    assert r.egraph.shapes[m_class] == (4, 48)
    [matmul] = r.class_nodes(m_class, "matmul")
    assert matmul.children[0] == r.roots["x"]
    [concat] = r.class_nodes(matmul.children[1], "concat")
    assert concat.children == (r.roots["w1"], r.roots["w2"])
    assert dict(concat.attrs) == {"axis": 1}
    assert r.matches["merge-matmul"] == 2
    # the slices have the shapes of what they replace: no shape conflict
    assert r.egraph.shapes[r.roots["a"]] == (4, 16)
    assert r.egraph.shapes[r.roots["b"]] == (4, 32)


def test_merge_matmul_guard_needs_two_distinct_products(rules) -> None:
    model = "model m { input x: f32[4, 8]  param w: f32[8, 16]  a = matmul(x, w)  output a }"
    r = run_rules(model, rules, "sample")
    assert r.nodes("a", "slice") == []


def test_bidirectional_rule_fires_both_ways(rules) -> None:
    forward = run_rules(
        "model m { input a: f32[2]  input b: f32[2]  y = sub(a, b)  output y }", rules, "sample"
    )
    [add] = forward.nodes("y", "add")
    assert add.children[0] == forward.roots["a"]
    assert forward.class_nodes(add.children[1], "neg")
    assert forward.matches["sub-add-neg"] == 1
    back = run_rules(
        "model m { input a: f32[2]  input b: f32[2]  y = add(a, neg(b))  output y }",
        rules,
        "sample",
    )
    [sub] = back.nodes("y", "sub")
    assert sub.children == (back.roots["a"], back.roots["b"])
    assert back.matches["sub-add-neg-rev"] == 1


def test_constant_folding_computes_the_product(rules) -> None:
    model = """model m {
      const c1: f32[] = 2.5
      const c2: f32[] = 4.0
      y = mul(c1, c2)
      output y
    }"""
    r = run_rules(model, rules, "sample")
    consts = r.nodes("y", "const")
    assert [dict(n.attrs) for n in consts] == [{"value": 10.0, "shape": (), "dtype": "f32"}]


def test_computed_attribute_and_negative_dim(rules) -> None:
    wide = run_rules(
        "model m { input x: f32[2, 8]  y = softmax(x, axis=-1)  output y }", rules, "sample"
    )
    built = [n for n in wide.nodes("y", "softmax") if n.children != (wide.roots["x"],)]
    assert [dict(n.attrs) for n in built] == [{"axis": 1}]
    narrow = run_rules(
        "model m { input x: f32[2, 3]  y = softmax(x, axis=-1)  output y }", rules, "sample"
    )
    assert len(narrow.nodes("y", "softmax")) == 1  # dim(x, -1) > 4 is false


def test_approximate_rules_run_only_on_request(rules) -> None:
    model = "model m { input x: f32[2]  y = sigmoid(x)  output y }"
    assert "sigmoid-bf16" not in rules.compile()
    exact = run_rules(model, rules, "sample")
    assert exact.nodes("y", "cast") == []
    approx = run_rules(model, rules, "sample-approx", include_approx=True)
    [cast] = approx.nodes("y", "cast")
    assert dict(cast.attrs) == {"dtype": "f32"}


def test_shape_literal_guard_binds_dims() -> None:
    rules = load_rules_text(
        "# relu(x) = reshape(reshape(relu(x), [M*K]), [M, K])\n"
        "flat: relu(x) => reshape(reshape(relu(x), shape=[M * K]), shape=[M, K])\n"
        "      if shape(x) == [M, K], K > 1\n",
        "flat.rules",
    )
    r = run_rules("model m { input x: f32[3, 4]  y = relu(x)  output y }", rules, "flat")
    [outer] = r.nodes("y", "reshape")
    assert dict(outer.attrs) == {"shape": (3, 4)}
    [inner] = r.class_nodes(outer.children[0], "reshape")
    assert dict(inner.attrs) == {"shape": (12,)}
    assert r.egraph.shapes[outer.children[0]] == (12,)
    narrow = run_rules("model m { input x: f32[3, 1]  y = relu(x)  output y }", rules, "flat")
    assert narrow.nodes("y", "reshape") == []


def test_named_subterm_root_need_not_be_redefined() -> None:
    rules = load_rules_text(
        "# relu(s) = relu(neg(neg(s))) where s = a + b keeps a's shape\n"
        "sub-root: s = add(a, b), t = relu(s) => t = relu(neg(neg(s))) if shape(s) == shape(a)\n",
        "sub.rules",
    )
    r = run_rules(
        "model m { input a: f32[2]  input b: f32[2]  y = relu(add(a, b))  output y }",
        rules,
        "sub",
    )
    assert r.matches["sub-root"] == 1
    [relu_new] = [n for n in r.nodes("y", "relu") if r.class_nodes(n.children[0], "neg")]
    assert relu_new


def test_list_builder_in_guard_is_seeded_then_matches() -> None:
    """`P == range(rank(x))` compares with a list no term has yet: a companion rule
    builds it in one round and the rule matches it in the next."""
    rules = load_rules_text(
        "ruleset t\n"
        "# transpose(x, identity) = x\n"
        "transpose-identity: transpose(x, perm=P) => x if P == range(rank(x))\n",
        "t.rules",
    )
    model = """model m {
      input x: f32[2, 3, 4]
      a = transpose(x, perm=[0, 1, 2])
      b = transpose(x, perm=[0, 2, 1])
      output a, b
    }"""
    first = run_rules(model, rules, "t")
    assert not first.same("a", "x")  # round one only builds range(3)
    assert first.matches.get("transpose-identity-seed0", 0) >= 1
    second = run_rules(model, rules, "t", rounds=2)
    assert second.same("a", "x")
    assert not second.same("b", "x")
    assert second.matches["transpose-identity"] == 1
