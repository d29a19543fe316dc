"""`eqsat rules check --growth`: a rule that keeps matching its own output is found on
a small probe; rules the e-graph absorbs are not reported."""

from __future__ import annotations

from eqsat.cli import main
from eqsat.rules import load_rules
from eqsat.verify.growth import growth
from tests.conftest import ROOT

FEEDING = ROOT / "tests" / "data" / "self_feeding.rules"


def test_self_feeding_rule_grows_every_round():
    rules = load_rules(FEEDING)
    g = growth(rules.rule("scale-split"), None)
    assert g.probe is not None and g.self_feeding
    assert all(b > a for a, b in zip(g.nodes, g.nodes[1:], strict=False))
    assert not growth(rules.rule("add-comm-again"), None).self_feeding


def test_cli_reports_the_self_feeding_rule(capsys):
    assert main(["rules", "check", "--growth", str(FEEDING)]) == 1
    out = capsys.readouterr().out
    assert "rule 'scale-split' keeps matching its own output" in out
    assert "add-comm-again" not in out.split("growth:")[0].split("(feed)")[-1]
    assert "2 of 2 rules probed" in out and "1 self-feeding" in out


def test_project_algebra_rules_do_not_feed_themselves(capsys):
    assert main(["rules", "check", "--growth", str(ROOT / "rules" / "algebra.rules")]) == 0
    assert "0 self-feeding" in capsys.readouterr().out
