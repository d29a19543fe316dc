"""Load compiled rules into a fresh egglog e-graph so that anything egglog itself
rejects (a sort mismatch the checker missed, a name clash) is caught at `rules check`
time and blamed on the rule that caused it, not discovered mid-optimisation."""

from __future__ import annotations

from eqsat.rules.errors import EgglogRejectedError
from eqsat.rules.library import RuleCollection, _rulesets


def check_in_egglog(rules: RuleCollection, include_approx: bool = True) -> None:
    """Raise EgglogRejectedError at the first rule egglog refuses."""
    from egglog import bindings

    from eqsat.egraph.encoding import program_prelude
    from eqsat.egraph.saturate import run_commands

    egraph = bindings.EGraph()
    run_commands(egraph, program_prelude())
    declare = "\n".join(
        f"(ruleset {name})"
        for name in _rulesets(rules.rules, [f.ruleset for f in rules.files], include_approx)
    )
    run_commands(egraph, declare)
    for rule in rules:
        if rule.is_approx and not include_approx:
            continue
        for name, text in zip(rule.egglog_names, rule.egglog, strict=True):
            try:
                run_commands(egraph, text)
            except Exception as err:  # egglog raises EggSmolError (and panics) here
                first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
                raise EgglogRejectedError(
                    f"egglog rejected the compiled rule '{name}': {first}",
                    rule.file,
                    rule.line,
                    rule.col,
                    _source(rule.file),
                ) from None


def _source(path: str) -> str | None:
    try:
        with open(path, encoding="utf-8") as f:
            return f.read()
    except OSError:
        return None
