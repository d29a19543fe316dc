"""What control flow costs on the simulated machine (examples/early_exit.model and
examples/decode_loop.model), and what the control passes save.

Run: python bench/control_flow.py [--presets edge,datacenter] [--optimize]

Prints, per preset:
- early exit: simulated cycles when the confidence test exits early and when the
  second half runs, split into device cycles and host control (dispatches, read-backs);
- decode loop: cycles for three trip counts (end tokens that stop it after k trips),
  as written and after the control passes (hoisting), and the host's share;
- a constant-trip loop (the decode body with T=4 and no end token test) rolled and
  unrolled;
- the cost model's estimate of each program (eqsat.control.optimize.region_costs).
With --optimize, each graph is also optimized with the rules (slower: egglog per graph).
"""

from __future__ import annotations

import argparse
import copy
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from backend.control import compile_control  # noqa: E402
from eqsat.control.check import check_control_model  # noqa: E402
from eqsat.control.interpret import run_control  # noqa: E402
from eqsat.control.load import load_control  # noqa: E402
from eqsat.control.optimize import optimize_control, region_costs  # noqa: E402
from eqsat.control.passes import simplify  # noqa: E402
from eqsat.program_cost import program_cost  # noqa: E402
from eqsat.rulesets import DEFAULT_RULES_DIR, compile_rule_paths  # noqa: E402
from frontend import parse_model  # noqa: E402
from hwsim.hardware import load_hardware  # noqa: E402


def passes_only(program, hw, **kw):
    out, _, _ = simplify(
        copy.deepcopy(program),
        lambda g: program_cost(g, hw).cycles,
        hw.dispatch_cycles,
        hw.host_readback_cycles,
        **kw,
    )
    return out


def row(label: str, report) -> str:
    return (
        f"  {label:<28} {report.cycles:>10,} cycles  device {report.device_cycles:>9,}  "
        f"host {report.control_cycles:>8,} ({report.dispatches} dispatches, "
        f"{report.readbacks} read-backs)"
    )


def estimate(label: str, program, hw) -> str:
    costs = region_costs(program, hw)
    device, control = sum(c.device for c in costs), sum(c.control for c in costs)
    return (
        f"  {label:<28} {device + control:>10,} cycles  device {device:>9,}  host {control:>8,}"
        "  (cost model: the dearer branch, loops at their trip bound)"
    )


def early_exit(hw, optimized) -> None:
    loaded = load_control(ROOT / "examples" / "early_exit.model")
    print(f"early_exit on {hw.name}")
    for label, program in (("as written", loaded.program), *optimized(loaded.program)):
        compiled = compile_control(program, hw)
        for scale in (100.0, 0.0):
            values = loaded.bindings(1)
            values["x"] = (values["x"] * scale).astype(np.float32)
            _, trace = run_control(loaded.program, values)
            _, report = compiled.run(values)
            branch = "exit early" if trace.branches[0][1] else "run both halves"
            print(row(f"{label}, {branch}", report))
        print(estimate(f"{label}, estimate", program, hw))


def decode(hw, optimized) -> None:
    loaded = load_control(ROOT / "examples" / "decode_loop.model")
    print(f"decode_loop on {hw.name}")
    values = loaded.bindings(3)
    values["end_token"] = np.array(-1, dtype=np.int32)
    tokens = [int(t) for t in run_control(loaded.program, values)[0]["tokens"].reshape(-1)]
    # End tokens that stop decoding after different trip counts (-1: never, all trips).
    first = {}
    for k, t in enumerate(tokens):
        first.setdefault(t, k)
    ends = sorted(first, key=first.get)
    picks = [ends[0], ends[len(ends) // 2], -1]
    variants = [("as written", loaded.program), ("passes", passes_only(loaded.program, hw))]
    variants += optimized(loaded.program)
    for label, program in variants:
        compiled = compile_control(program, hw)
        for end in picks:
            values["end_token"] = np.array(end, dtype=np.int32)
            _, report = compiled.run(values)
            print(row(f"{label}, {report.trips[0]} trips", report))
        print(estimate(f"{label}, estimate", program, hw))
    text = (ROOT / "examples" / "decode_loop.model").read_text().replace("dim T = 8", "dim T = 4")
    text = text.replace("more = logical_not(equal(best, end_token))", "more = go")
    program = check_control_model(parse_model(text))
    values = load_control(ROOT / "examples" / "decode_loop.model").bindings(3)
    for label, unroll in (("T=4, no end test, rolled", False), ("T=4, unrolled", True)):
        _, report = compile_control(passes_only(program, hw, unroll=unroll), hw).run(values)
        print(row(label, report))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--presets", default="edge,datacenter")
    ap.add_argument("--optimize", action="store_true", help="also optimize with the rules")
    args = ap.parse_args()
    rules = compile_rule_paths([DEFAULT_RULES_DIR]) if args.optimize else None
    for name in args.presets.split(","):
        hw = load_hardware(name)

        def optimized(program, hw=hw):
            if rules is None:
                return []
            return [("optimized", optimize_control(program, rules, hw).program)]

        early_exit(hw, optimized)
        decode(hw, optimized)


if __name__ == "__main__":
    main()
