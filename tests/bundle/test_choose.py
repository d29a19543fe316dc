"""Bucket choice: the dynamic program against brute force, the flags' parsing."""

from __future__ import annotations

import argparse
import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from eqsat.bundle import BundleError, DimRange, choose_buckets, default_buckets, read_lengths
from eqsat.bundle.choose import expected_cycles
from eqsat.bundle.ranges import bucket_for, check_buckets, parse_buckets
from eqsat.flags import parse_dim_or_range


def _brute(counts, r, k, cycles):
    cands = sorted(set(counts) | {r.hi})
    best = None
    for m in range(1, k + 1):
        for rest in itertools.combinations(cands[:-1], m - 1):
            b = [*rest, r.hi]
            v = expected_cycles(counts, b, cycles)
            if best is None or v < best[0] - 1e-9:
                best = (v, b)
    return best


@settings(max_examples=60)
@given(
    counts=st.dictionaries(st.integers(1, 40), st.integers(1, 20), min_size=1, max_size=7),
    k=st.integers(1, 4),
    weights=st.lists(st.integers(0, 50), min_size=41, max_size=41),
)
def test_the_dp_finds_the_brute_force_optimum(counts, k, weights):
    r = DimRange("S", 1, 40)
    # any cost (not even monotone): the DP is exact over the candidate set
    table = {s: 1000 + weights[s] for s in range(1, 41)}
    choice = choose_buckets(counts, r, k, table.__getitem__)
    value, _ = _brute(counts, r, k, table.__getitem__)
    assert choice.expected_cycles == pytest.approx(value)
    assert choice.buckets[-1] == 40 and len(choice.buckets) <= k
    assert expected_cycles(counts, choice.buckets, table.__getitem__) == pytest.approx(value)


def test_skewed_lengths_get_buckets_where_the_requests_are():
    counts = {20: 90, 21: 5, 500: 5}
    choice = choose_buckets(counts, DimRange("S", 1, 512), 2, lambda s: s * s)
    assert choice.buckets == [21, 512]


def test_lengths_file(tmp_path):
    f = tmp_path / "lengths.txt"
    f.write_text("# requests\n300\n300 4\n17  # short\n\n")
    assert read_lengths(f) == {300: 5, 17: 1}
    f.write_text("300 x\n")
    with pytest.raises(BundleError, match=r"lengths.txt:1: expected 'LENGTH' or 'LENGTH COUNT'"):
        read_lengths(f)
    f.write_text("600\n")
    with pytest.raises(BundleError, match=r"lengths \[600\] lie outside S=1..512"):
        choose_buckets(read_lengths(f), DimRange("S", 1, 512), 2, float)


def test_range_and_bucket_flags():
    assert parse_dim_or_range("S=1..2048") == ("S", range(1, 2049))
    assert parse_dim_or_range("S=300") == ("S", 300)
    for bad in ("S=5..2", "S=0..4", "S=1..x"):
        with pytest.raises(argparse.ArgumentTypeError):
            parse_dim_or_range(bad)
    assert parse_buckets("512, 128,256") == [128, 256, 512]
    assert parse_buckets("auto") == "auto"
    with pytest.raises(argparse.ArgumentTypeError):
        parse_buckets("128,-1")
    r = DimRange("S", 1, 300)
    assert default_buckets(r) == [1, 2, 4, 8, 16, 32, 64, 128, 256, 300]
    assert default_buckets(DimRange("S", 100, 512)) == [128, 256, 512]
    assert check_buckets(r, [300, 64]) == [64, 300]
    with pytest.raises(ValueError, match="add 300"):
        check_buckets(r, [64, 128])
    assert bucket_for([64, 300], 65) == 300 and bucket_for([64, 300], 301) is None
