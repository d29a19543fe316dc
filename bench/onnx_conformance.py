"""ONNX conformance figures for README: per op the importer claims, how many of the
ONNX backend node test cases pass (regenerated from the installed onnx package).

Run: python bench/onnx_conformance.py [--failures]
Prints a markdown table: op, cases, passed, and the cases of types eqsat has no dtype
for (float8, int4, strings, sequences), which cannot pass by construction.
"""

from __future__ import annotations

import argparse
import collections
import sys
import time
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from eqsat.verify.onnx_cases import claimed_cases, run_case  # noqa: E402
from tests.onnx.conformance_expected import unsupported_type  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--failures", action="store_true", help="also list every failing case")
    args = ap.parse_args()
    warnings.filterwarnings("ignore")
    t = time.perf_counter()
    rows: dict[str, list[int]] = collections.defaultdict(lambda: [0, 0, 0])
    failures = []
    for case in claimed_cases():
        result = run_case(case)
        row = rows[result.op]
        row[0] += 1
        row[1] += result.passed
        row[2] += unsupported_type(case) is not None
        if not result.passed:
            failures.append((case.name, result.message))
    single = {op: r for op, r in rows.items() if "(expanded)" not in op}
    expanded = [r for op, r in rows.items() if "(expanded)" in op]
    print("| op | cases | pass | of which types eqsat lacks |")
    print("|---|---|---|---|")
    for op in sorted(single):
        n, p, typed = single[op]
        print(f"| {op} | {n} | {p} | {typed} |")
    total = sum(r[0] for r in rows.values())
    passed = sum(r[1] for r in rows.values())
    typed = sum(r[2] for r in rows.values())
    print(
        f"\n{len(single)} ops, {total} cases ({sum(r[0] for r in expanded)} of them functions "
        f"expanded into claimed ops): {passed} pass; {typed} use types eqsat has no dtype for; "
        f"{time.perf_counter() - t:.1f} s"
    )
    if args.failures:
        for name, message in failures:
            print(f"  {name}: {message}")


if __name__ == "__main__":
    main()
