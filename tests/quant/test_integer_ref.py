"""The integer contractions' reference (qmatmul, qconv2d) runs through float64 BLAS
where that is exact: it equals int64 arithmetic wrapped to int32, bit for bit."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from eqsat.ops import REGISTRY
from eqsat.ops.linalg import exact_in_float64

int8s = st.integers(-128, 127)


@settings(max_examples=40, deadline=None)
@given(
    m=st.integers(1, 6),
    k=st.integers(1, 40),
    n=st.integers(1, 6),
    za=int8s,
    zb=int8s,
    seed=st.integers(0, 2**16),
)
def test_qmatmul_ref_is_exact(m, k, n, za, zb, seed) -> None:
    rng = np.random.default_rng(seed)
    a = rng.integers(-128, 128, (m, k)).astype(np.int8)
    b = rng.integers(-128, 128, (k, n)).astype(np.int8)
    got = REGISTRY["qmatmul"].ref([a, b], {"a_zero": za, "b_zero": zb, "tile": (0, 0, 0)})
    want = ((a.astype(np.int64) - za) @ (b.astype(np.int64) - zb)).astype(np.int32)
    assert got.dtype == np.int32 and np.array_equal(got, want)


def test_qconv_ref_is_exact() -> None:
    rng = np.random.default_rng(1)
    x = rng.integers(-128, 128, (2, 3, 7, 6)).astype(np.int8)
    w = rng.integers(-128, 128, (4, 3, 3, 3)).astype(np.int8)
    attrs = {"a_zero": -5, "stride": (2, 1), "padding": (1, 2), "tile": (0, 0, 0)}
    got = REGISTRY["qconv2d"].ref([x, w], attrs)
    xs = np.pad(x.astype(np.int64) + 5, ((0, 0), (0, 0), (1, 1), (2, 2)))
    ho, wo = (7 + 2 - 3) // 2 + 1, (6 + 4 - 3) // 1 + 1
    want = np.zeros((2, 4, ho, wo), np.int64)
    for i in range(3):
        for j in range(3):
            patch = xs[:, :, i : i + 2 * ho : 2, j : j + wo]
            want += np.einsum("nchw,oc->nohw", patch, w[:, :, i, j].astype(np.int64))
    assert np.array_equal(got, want.astype(np.int32))


def test_the_exactness_bound() -> None:
    big = np.array([2**26], np.int64)
    assert exact_in_float64(big, big, 1)  # 2^52
    assert not exact_in_float64(big, big, 2)  # 2^53: not every such sum is exact
