"""Wall time of `eqsat optimize --quantize int8` on a SwiGLU feed-forward block with
LLaMA-7B shapes (d_model 4096, hidden 11008, 128 tokens; 135 M weights drawn at
random), the case issue 12 measured at 104 s.

    python bench/quantize_speed.py [--tokens 128] [--hw edge]

Runs the command in a child process and prints its wall time, peak memory and the
optimizer's summary lines (SQNR, times).
"""

from __future__ import annotations

import argparse
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

MODEL = """model swiglu_7b {{
  dim S = {tokens}
  input x: f32[S, 4096]
  param w_gate: f32[4096, 11008]
  param w_up: f32[4096, 11008]
  param w_down: f32[11008, 4096]
  g = matmul(x, w_gate)
  u = matmul(x, w_up)
  h = mul(silu(g), u)
  y = matmul(h, w_down)
  output y
}}
"""


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tokens", type=int, default=128)
    ap.add_argument("--hw", default="edge")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "swiglu_7b.model"
        path.write_text(MODEL.format(tokens=args.tokens))
        cmd = [sys.executable, "-m", "eqsat", "optimize", str(path), "--quantize", "int8"]
        cmd += ["--hw", args.hw, "-q"]
        t0 = time.perf_counter()
        proc = subprocess.run(cmd, capture_output=True, text=True)
        wall = time.perf_counter() - t0
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1e6
    if proc.returncode:
        print(proc.stderr, file=sys.stderr)
        return proc.returncode
    for line in proc.stdout.splitlines():
        if line.startswith(("SQNR", "time:", "int8:")) or "est. cycles" in line:
            print(line)
    print(f"wall {wall:.1f} s (process, imports included), peak RSS {peak:.2f} GB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
