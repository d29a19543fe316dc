"""Cutting a graph into blocks: where the cuts go, what makes two blocks the same."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from eqsat.blocks import plan_blocks, rule_nestings
from eqsat.blocks.segments import static_nodes
from eqsat.rules import load_rules_text
from eqsat.rulesets import DEFAULT_RULES_DIR, compile_rule_paths
from frontend import check_model, parse_model
from tests.blocks.models import stacked_model

NESTINGS = compile_rule_paths([DEFAULT_RULES_DIR]).nestings


def _graph(text: str):
    return check_model(parse_model(text))


@given(st.integers(2, 6))
def test_identical_layers_become_one_distinct_block(layers):
    plan = plan_blocks(_graph(stacked_model(layers)), NESTINGS)
    sizes = {key: len(group) for key, group in plan.distinct.items()}
    # one block shared by all the layers, one for the gate computed once before them
    assert sorted(sizes.values()) == [1, layers]
    assert len(plan.blocks) == layers + 1
    assert len(plan.cuts) == layers


def test_every_cut_is_crossed_by_the_residual_and_the_shared_value():
    g = _graph(stacked_model(4))
    plan = plan_blocks(g, NESTINGS)
    names = [{g.nodes[i].name for i in c.crossing} for c in plan.cuts]
    assert names == [{"gate"}] + [{"gate", f"h{k}"} for k in range(3)]


def test_a_block_key_ignores_param_names_but_not_shapes():
    a = plan_blocks(_graph(stacked_model(3, d=16)), NESTINGS)
    b = plan_blocks(_graph(stacked_model(3, d=16).replace("w1a", "other_name")), NESTINGS)
    c = plan_blocks(_graph(stacked_model(3, d=24)), NESTINGS)
    assert set(a.distinct) == set(b.distinct)
    assert not set(a.distinct) & set(c.distinct)


def test_a_rule_nesting_across_a_cut_keeps_the_cut_out():
    # A rule whose pattern puts layernorm over add, and that leaves fewer ops, spans the
    # cut after each layer's residual add: cutting there would hide its matches, so the
    # planner does not. (Only the pattern matters to the planner; it is not meant to be
    # a sound rule.)
    spanning = load_rules_text(
        "ruleset extra\n# pattern only: layernorm over an add\n"
        "ln-add: layernorm(add(a, b), g, c) => layernorm(a, g, c)\n"
    )
    nestings = {**NESTINGS, **rule_nestings(spanning)}
    g = _graph(stacked_model(3))
    plan = plan_blocks(g, nestings)
    assert not plan.repeats
    assert plan.refused and all("ln-add" in rules for _, rules in plan.refused)


def test_a_rearranging_rule_across_a_cut_is_reported_not_refused():
    # add-assoc matches add(add(h0, ...), ...) across every residual cut; it moves work
    # without saving any, so the cut stays and the report names it.
    g = _graph(stacked_model(3))
    plan = plan_blocks(g, NESTINGS)
    assert plan.repeats and not plan.refused
    spans = {(g.nodes[lr.node].name, lr.consumer_op): lr.rules for lr in plan.long_range}
    assert spans == {("h0", "add"): ("add-assoc",), ("h1", "add"): ("add-assoc",)}


def test_constants_of_a_layer_are_copied_into_it_not_cut():
    g = _graph(stacked_model(2))
    static = static_nodes(g)
    plan = plan_blocks(g, NESTINGS)
    cut_nodes = {i for c in plan.cuts for i in c.crossing}
    assert not any(static[i] for i in cut_nodes)
