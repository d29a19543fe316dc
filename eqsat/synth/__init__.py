"""Rule synthesis by enumeration, in the manner of Ruler (Nandi et al., OOPSLA'21).

shapes.py       symbolic shapes: each matrix variable has two dim symbols, an op
                unifies them (matmul's inner dims, elementwise operands)
terms.py        terms as nested tuples; sizes, variables, rule syntax, identities
fingerprint.py  characteristic vectors: a term evaluated on random integer and
                float inputs under several concrete sizes of its dim classes
enumerate.py    terms by size, one representative per fingerprint class
derive.py       the e-graph test: do the kept rules prove lhs == rhs?
select.py       candidates smallest first: derivable -> dropped, else verified
                (eqsat verify-rules) and kept; then a pass that drops kept rules
                the others derive
emit.py         the documented rule file
rediscover.py   which identities of rules/*.rules the kept rules derive
run.py          the whole pipeline (`eqsat rules synthesize`)
"""

from eqsat.synth.run import SynthConfig, SynthResult, synthesize

__all__ = ["SynthConfig", "SynthResult", "synthesize"]
