"""Does a runtime measured elsewhere make sense for the described hardware?

The simulated run splits into the cycles of memory-bound kernels (M), compute-bound
kernels (C) and overhead-bound kernels plus launches (O). A measured runtime T (in
cycles of the hardware's clock) that differs from the simulated M + C + O is then
explained, one resource at a time, by the factor that resource would have to be off
by in the hardware file: DRAM bandwidth k_m = (T - C - O) / M, compute k_c =
(T - M - O) / C, fixed overheads k_o = (T - M - C) / O. A factor near 1 means that
resource alone cannot explain the gap; a plausible one (between 1/4 and 4) names the
kernels it acts on.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from eqsat.profile import KernelProfile

_TIME = re.compile(r"^\s*(\d+(?:\.\d+)?(?:e[+-]?\d+)?)\s*(s|ms|us|ns|cycles?)?\s*$", re.I)
_SCALE = {"s": 1.0, "ms": 1e-3, "us": 1e-6, "ns": 1e-9}


def parse_measured(text: str, clock_ghz: float) -> float:
    """'12.5ms', '0.3 s', '41000 cycles' (a bare number is seconds) -> cycles."""
    m = _TIME.match(text)
    if not m:
        raise ValueError(
            f"expected a time such as 12.5ms, 0.3s, 800us or 41000cycles, got '{text}'"
        )
    value, unit = float(m.group(1)), (m.group(2) or "s").lower()
    if value <= 0:
        raise ValueError(f"a measured runtime must be positive, got '{text}'")
    if unit.startswith("cycle"):
        return value
    return value * _SCALE[unit] * clock_ghz * 1e9


@dataclass
class Explanation:
    measured: float
    simulated: int
    factors: dict[str, float | None]  # resource -> factor it would have to be off by
    kernels: dict[str, list[str]]  # resource -> the kernels it acts on, slowest first

    @property
    def ratio(self) -> float:
        return self.measured / self.simulated if self.simulated else float("inf")

    def lines(self) -> list[str]:
        off = self.ratio
        head = (
            f"measured {self.measured:,.0f} cycles vs {self.simulated:,} simulated: "
            f"{off:.2f}x ({(off - 1) * 100:+.0f}%)"
        )
        if abs(off - 1) <= 0.1:
            return [head + "; within 10%: the runtime makes sense for this hardware"]
        out = [head + "; one resource at a time, the hardware file would have to be off by:"]
        words = {
            "memory": "DRAM bandwidth",
            "compute": "compute rate",
            "overhead": "fixed overheads",
        }
        for res, k in self.factors.items():
            if k is None:
                out.append(
                    f"  {words[res]}: cannot explain it (no such kernels, or the gap is larger)"
                )
                continue
            plausible = 0.25 <= k <= 4
            slower = f"{k:.2f}x slower" if k >= 1 else f"{1 / k:.2f}x faster"
            names = ", ".join(self.kernels[res][:4]) + (
                ", ..." if len(self.kernels[res]) > 4 else ""
            )
            tail = f" ({names})" if plausible and names else ""
            note = "" if plausible else " (implausible)"
            out.append(f"  {words[res]} {slower}{note}{tail}")
        return out


def explain_measured(measured: float, total: int, kernels: list[KernelProfile]) -> Explanation:
    groups: dict[str, list[KernelProfile]] = {"memory": [], "compute": [], "overhead": []}
    for k in kernels:
        key = (
            "memory" if k.bound == "memory" else "overhead" if k.bound == "overhead" else "compute"
        )
        groups[key].append(k)
    spent = {g: float(sum(k.cycles for k in ks)) for g, ks in groups.items()}
    spent["overhead"] += total - sum(spent.values())  # anything outside the kernels
    factors: dict[str, float | None] = {}
    for g in groups:
        rest = sum(v for h, v in spent.items() if h != g)
        k = (measured - rest) / spent[g] if spent[g] else None
        factors[g] = k if k is not None and k > 0 else None
    names = {g: [k.name for k in sorted(ks, key=lambda k: -k.cycles)] for g, ks in groups.items()}
    return Explanation(measured, total, factors, names)
