"""A dimension's range (`--dim S=1..2048`) and the bucket sizes that cover it."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from dataclasses import dataclass

from eqsat.limits import number_text


@dataclass(frozen=True)
class DimRange:
    """The values a symbolic dimension takes at run time: lo..hi inclusive."""

    name: str
    lo: int
    hi: int

    def __str__(self) -> str:
        return f"{self.name}={self.lo}..{self.hi}"

    @classmethod
    def from_flag(cls, name: str, values: range) -> DimRange:
        """From a parsed --dim NAME=LO..HI (eqsat.flags.parse_dim_or_range)."""
        return cls(name, values.start, values.stop - 1)


def parse_buckets(text: str) -> list[int] | str:
    """A --buckets value: 'auto' or a comma-separated list of positive sizes."""
    if text.strip() == "auto":
        return "auto"
    sizes = []
    for part in text.split(","):
        part = part.strip()
        if not part.isdigit() or int(part) < 1 or len(part) > 18:
            raise argparse.ArgumentTypeError(
                f"expected 'auto' or sizes like 128,256,512, got '{number_text(text)}'"
            )
        sizes.append(int(part))
    return sorted(set(sizes))


def default_buckets(r: DimRange) -> list[int]:
    """Powers of two from the first one >= lo, and hi itself as the last bucket."""
    out, p = [], 1
    while p < r.hi:
        if p >= r.lo:
            out.append(p)
        p *= 2
    return [*out, r.hi]


def check_buckets(r: DimRange, buckets: Sequence[int]) -> list[int]:
    """Sorted, distinct buckets inside the range whose largest is hi (every value fits)."""
    sizes = sorted(set(buckets))
    if not sizes:
        raise ValueError(f"no buckets for {r}")
    outside = [b for b in sizes if not r.lo <= b <= r.hi]
    if outside:
        raise ValueError(f"buckets {outside} lie outside {r}")
    if sizes[-1] != r.hi:
        raise ValueError(
            f"the largest bucket is {sizes[-1]}, so {r.name} in {sizes[-1] + 1}..{r.hi} would "
            f"fit none: add {r.hi}"
        )
    return sizes


def bucket_for(buckets: Sequence[int], n: int) -> int | None:
    """The smallest bucket that holds n, or None."""
    return next((b for b in sorted(buckets) if b >= n), None)
