"""eqsat feeds egglog its programs one top-level form at a time (egglog 13.2 copies
the whole parsed text into every span, so a long program parsed at once costs memory
quadratic in its length). The cut must keep every form whole and lose nothing."""

from __future__ import annotations

from egglog.bindings import EGraph
from hypothesis import given
from hypothesis import strategies as st

from eqsat.egraph.encoding import program_prelude
from eqsat.egraph.saturate import run_commands, top_level_forms

_ATOMS = st.sampled_from(["x", "42", '"a (b"', '"q\\"(("', "; c ( )\n", " ", "\n"])


@st.composite
def forms(draw, depth: int = 0) -> str:
    parts = draw(
        st.lists(_ATOMS if depth >= 2 else st.one_of(_ATOMS, forms(depth + 1)), max_size=4)
    )
    return "(" + " ".join(parts) + ")"


@given(st.lists(st.tuples(st.sampled_from(["", "\n", "; lead (\n", "  "]), forms()), max_size=6))
def test_forms_are_cut_whole_and_lose_nothing(pieces):
    text = "".join(lead + form for lead, form in pieces)
    cut = top_level_forms(text)
    assert cut == [lead + form for lead, form in pieces]


def test_an_unbalanced_tail_is_kept_for_egglog_to_report():
    assert top_level_forms("(a b) (c (d)") == ["(a b)", " (c (d)"]


def test_the_prelude_runs_form_by_form_as_it_runs_whole():
    program = program_prelude() + "(let $s (Bcast (ICons 4 (INil)) (ICons 3 (ICons 1 (INil)))))\n"
    program += "(run-schedule (saturate (run analysis)))\n(extract $s)\n(print-size)\n"
    whole = EGraph()
    expected = [str(out) for out in whole.run_program(*whole.parse_program(program))]
    assert [str(out) for out in run_commands(EGraph(), program)] == expected
    assert "(ICons 3 (ICons 4 (INil)))\n" in expected
