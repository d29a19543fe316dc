"""A quantized run's stop reason says what stopped saturation: far below the node limit,
the back-off scheduler's per-rule match limit skipped rules whose matches exceed it."""

from __future__ import annotations

from eqsat.config import DEFAULT_LIMITS
from eqsat.egraph.saturate import RULES_SKIPPED
from tests.quant.helpers import model, quantized


def test_quantized_bert_layer_names_the_rules_and_the_share() -> None:
    result, _ = quantized(model("bert_layer"), "edge")
    sat = result.saturation
    assert sat.stop_reason == RULES_SKIPPED
    assert sat.node_limit == DEFAULT_LIMITS.node_limit
    assert sat.nodes < sat.node_limit // 10  # nowhere near the node limit
    assert sat.skipped_rules and set(sat.skipped_rules) == set(sat.skipped_matches)
    # each skipped rule found more matches than a rule may add in one round
    assert 0 < sat.rule_share < sat.node_limit
    assert all(n > sat.rule_share for n in sat.skipped_matches.values())
    text = sat.describe_stop()
    assert "node limit reached" not in text
    assert f"at {sat.nodes:,} e-nodes, below the node limit {sat.node_limit:,}" in text
    assert f"at most {sat.rule_share:,} matches" in text
    rule = sat.skipped_rules[0]
    assert f"{rule} {sat.skipped_matches[rule]:,}" in text
