"""Wall time on this CPU: IREE on eqsat's optimized program vs IREE on the model as
written vs ONNX Runtime, for zoo models (`eqsat bench MODEL --backend iree,onnxruntime`
on each, as a user runs it).

For each zoo model (default: BERT-base and ResNet-50 from ~/.cache/eqsat/zoo, built by
bench/zoo.py): the model as written emitted as MLIR and compiled by IREE (llvm-cpu,
this host); eqsat's program for --hw, likewise; ONNX Runtime (CPU provider,
ORT_ENABLE_ALL) on the ONNX file. The three take turns after a warm-up.

Run: python bench/iree_vs.py [--zoo bert_base,resnet50] [--hw datacenter] [--repeat 20]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

ZOO = Path.home() / ".cache" / "eqsat" / "zoo"


def zoo_file(name: str) -> Path:
    found = sorted(ZOO.glob(f"{name}-*.onnx"), key=lambda p: p.stat().st_mtime)
    if not found:
        sys.exit(f"{name}: no cached export in {ZOO} (run bench/zoo.py)")
    return found[-1]


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--zoo", default="bert_base,resnet50", help="zoo model names (comma-separated)")
    p.add_argument("--hw", default="datacenter", help="hardware eqsat optimizes for")
    p.add_argument("--repeat", type=int, default=20, help="timed runs per program")
    args = p.parse_args()
    summary = []
    for name in [n for n in args.zoo.split(",") if n]:
        path = zoo_file(name)
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp) / "bench.json"
            cmd = [sys.executable, "-m", "eqsat", "bench", str(path), "--hw", args.hw]
            cmd += ["--backend", "iree,onnxruntime", "--repeat", str(args.repeat)]
            cmd += ["--json", str(out), "--quiet"]
            print(
                f"$ eqsat bench {path.name} --hw {args.hw} --backend iree,onnxruntime", flush=True
            )
            subprocess.run(cmd, check=True)
            report = json.loads(out.read_text())
        medians = {q["label"]: q["median_seconds"] * 1e3 for q in report["programs"]}
        summary.append((name, medians))
    print("\nmedian ms per inference:")
    for name, medians in summary:
        cells = "  ".join(f"{label}: {ms:.1f}" for label, ms in medians.items())
        print(f"  {name}: {cells}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
