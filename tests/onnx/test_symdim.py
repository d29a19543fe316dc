"""Symbolic dimensions: products of names and an integer. Arithmetic agrees with the
integers at every binding, undecidable questions raise, and dimensions computed by
the op registry at the two probe bindings read back as the product they are."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from frontend.onnx.symdim import NotRepresentable, SymDim, decode, probe_bindings

NAMES = ("B", "S", "H")
dims = st.builds(
    lambda coef, names: SymDim(coef, tuple(sorted(names))),
    st.integers(1, 64),
    st.lists(st.sampled_from(NAMES), max_size=3),
)
bindings = st.fixed_dictionaries({n: st.integers(1, 50) for n in NAMES})


@given(dims, dims, bindings)
def test_products_and_exact_quotients_agree_with_integers(a, b, env):
    assert (a * b).value(env) == a.value(env) * b.value(env)
    assert ((a * b) // b).value(env) == a.value(env)


@given(dims, bindings)
def test_sums_of_like_terms(a, env):
    assert (a + a).value(env) == 2 * a.value(env)
    assert (a - a).value(env) == 0


def test_sums_of_unlike_terms_and_undecidable_comparisons_raise():
    s, b = SymDim(1, ("S",)), SymDim(1, ("B",))
    with pytest.raises(NotRepresentable) as err:
        s + 1
    assert err.value.names == {"S"}
    with pytest.raises(NotRepresentable):
        s == 4  # noqa: B015 - true at one binding only
    with pytest.raises(NotRepresentable):
        s // b
    assert s != -1  # dimensions are positive: decided
    assert s >= 1 and s > 0


@given(dims, st.integers(0, 1))
def test_probe_decoding_reads_back_products(d, which):
    probes = probe_bindings(list(NAMES))
    values = tuple(d.value(p) for p in probes)
    got = decode(values, probes)
    assert got is not None and got.coef == d.coef and got.names == d.names


def test_probe_decoding_refuses_what_is_not_a_product():
    probes = probe_bindings(["S"])
    values = tuple(p["S"] + 1 for p in probes)  # S + 1
    assert decode(values, probes) is None


def test_text_is_the_model_formats_dimension():
    assert SymDim(12, ("B", "S")).text() == "12*B*S"
    assert SymDim(1, ("S",)).text() == "S"
    assert SymDim(64).text() == "64"
