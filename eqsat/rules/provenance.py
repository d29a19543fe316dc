"""Rules that record which rule built each e-node, for `eqsat explain`.

The same rules as `RuleCollection.compile`, each direction also setting
`Prov_<Ctor>(args...) = "rule name"` on the e-node its right-hand side builds for a
root; the function keeps the first name set (`:merge old`), so an e-node reports the
rule that created it. Recording costs a table write per match, so it is on only when
asked for.
"""

from __future__ import annotations

import dataclasses

from eqsat.egraph.encoding import provenance_declarations
from eqsat.rules.compiler import compile_rule
from eqsat.rules.library import RuleCollection, compile_rules


def compile_with_provenance(rules: RuleCollection, include_approx: bool = False) -> str:
    files = tuple(
        dataclasses.replace(
            f,
            rules=tuple(
                dataclasses.replace(
                    r, egglog=compile_rule(r.ast, r.egglog_ruleset, r.file, "", provenance=True)
                )
                for r in f.rules
            ),
        )
        for f in rules.files
    )
    return provenance_declarations() + "\n" + compile_rules(RuleCollection(files), include_approx)
