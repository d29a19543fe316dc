"""The optimizer's time and memory limits on a rule set that explodes (associativity
and commutativity on a 16-term add chain: the e-graph grows about 15x a round).

    python bench/limits.py                 # the issue's cases and the per-e-node figures
    python bench/limits.py --times 1,5,20  # --time-limit values to try

Prints, per case, the optimization's own time (saturation + extraction, as the
optimizer reports it), the process's wall time and peak resident memory, and why
saturation stopped; then the per-e-node extraction seconds and bytes that
eqsat/budget.py's constants stand for. Each case runs in a child process with a 6 GiB
address-space cap, so a broken limit fails instead of exhausting the machine.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data"

CHILD = """
import json, resource, sys, time
resource.setrlimit(resource.RLIMIT_AS, (6 * 2**30, 6 * 2**30))
t0 = time.perf_counter()
from eqsat.cli import main
code = main(sys.argv[1:])
# VmHWM: this process's own peak; ru_maxrss keeps the forking parent's across exec
peak = int([l for l in open("/proc/self/status") if l.startswith("VmHWM")][0].split()[1]) * 1024
print(json.dumps({"code": code, "peak": peak, "wall": time.perf_counter() - t0}))
"""


def run_case(flags: list[str]) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        report = Path(tmp) / "r.json"
        args = [str(DATA / "add_chain.model"), "--rules", str(DATA / "explode.rules"), "-q"]
        args += ["--report", str(report), *flags]
        proc = subprocess.run(
            [sys.executable, "-c", CHILD, "optimize", *args], capture_output=True, text=True
        )
        if proc.returncode != 0:
            return {"error": proc.stderr.strip().splitlines()[-1:] or [f"exit {proc.returncode}"]}
        out = json.loads(proc.stdout.strip().splitlines()[-1])
        out["report"] = json.loads(report.read_text())
        return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--times", default="1,5", help="--time-limit values (seconds)")
    ap.add_argument("--memory", default="2GB", help="--memory-limit value")
    args = ap.parse_args()
    cases = [
        (f"--time-limit {t}", ["--time-limit", t, "--node-limit", "100000000"])
        for t in args.times.split(",")
    ]
    cases.append(
        (
            f"--memory-limit {args.memory}",
            ["--memory-limit", args.memory, "--time-limit", "600", "--node-limit", "100000000"],
        )
    )
    print(
        f"{'case':<24} {'optimize s':>10} {'bound s':>8} {'wall s':>7} {'peak RSS':>9} "
        f"{'e-nodes':>9}  stopped"
    )
    for name, flags in cases:
        r = run_case(flags)
        if "error" in r:
            print(f"{name:<24} failed: {r['error'][0]}")
            continue
        rep = r["report"]
        bound = f"{2 * float(flags[1]) + 1:.0f}" if flags[0] == "--time-limit" else "-"
        print(
            f"{name:<24} {rep['time_s']['total']:>10.2f} {bound:>8} {r['wall']:>7.2f} "
            f"{r['peak'] / 1e9:>7.2f}GB {rep['egraph']['nodes']:>9,}  {rep['egraph']['stop']}"
        )
    # Extraction's cost per e-node, on an e-graph left by 5 rounds (no limit hit).
    r = run_case(["--iter-limit", "5", "--time-limit", "600", "--node-limit", "100000000"])
    if "error" not in r:
        rep = r["report"]
        n = rep["egraph"]["nodes"]
        print(
            f"\nextraction from {n:,} e-nodes: {rep['time_s']['extract']:.2f} s "
            f"({rep['time_s']['extract'] / n * 1e6:.0f} us per e-node; eqsat.budget assumes 80), "
            f"peak RSS {r['peak'] / 1e9:.2f} GB"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
