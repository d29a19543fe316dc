"""Hypothesis-driven equivalence checks: are rules sound, is a compiled result right?

    eqsat verify-rules          every rule direction as a property (rules.py -> check.py)
    optimize/simulate --verify  translation validation of a result (translation.py)
    rules check --growth        rules that keep matching their own output (growth.py)

A rule direction is checked on generated instances of its left-hand side:

    opcases.py, opcases_layout.py, cases.py, space.py   valid applications of every op
    hints.py, generate.py, attrchoice.py                 graphs shaped like the pattern
    instance.py, guards.py, semantics.py                 does the rule fire (Python mirror
                                                         of the compiled egglog query),
                                                         and what does it build
    values.py, compare.py                                input regimes, tolerances
    check.py, report.py                                  hypothesis run, counterexamples

Product code only: the test suite's strategies (tests/strategies.py) build on
opcases.py, not the other way round.
"""
