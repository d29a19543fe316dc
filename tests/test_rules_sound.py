"""Every rule of rules/ (each direction of <=>) is a hypothesis property test: both
sides evaluated by the reference interpreter on generated instances agree. A new rule
is covered as soon as it is in rules/. `eqsat verify-rules` runs the same check with
more examples; EQSAT_HYPOTHESIS_SCALE scales this one."""

from __future__ import annotations

import pytest

from eqsat.rules import default_rules_dir, load_rules
from eqsat.verify.check import FAILED, NO_INSTANCE, check_direction
from eqsat.verify.guards import hardware_facts
from eqsat.verify.report import format_counterexample
from eqsat.verify.rules import select
from tests.strategies import scaled

SEED = 20240601
FACTS = hardware_facts("edge")
DIRECTIONS = select(load_rules(default_rules_dir()))


@pytest.mark.parametrize("direction", DIRECTIONS, ids=lambda d: d.name)
def test_rule_is_sound(direction):
    result = check_direction(direction, scaled(50), SEED, FACTS)
    if result.status == NO_INSTANCE:
        pytest.skip(f"could not generate an instance of {direction.name}")
    if result.status == FAILED:
        pytest.fail(format_counterexample(result, [str(default_rules_dir())]), pytrace=False)
    assert result.examples > 0
