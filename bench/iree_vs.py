"""Wall time on this CPU: IREE on eqsat's optimized program vs IREE on the model as
written vs ONNX Runtime.

For each zoo model (default: BERT-base and ResNet-50 from ~/.cache/eqsat/zoo, built by
bench/zoo.py):
  1. eqsat compile MODEL --no-optimize --emit mlir   -> IREE (llvm-cpu, host)
  2. eqsat compile MODEL --hw HW --emit mlir         -> IREE (llvm-cpu, host)
  3. ONNX Runtime (CPU provider, ORT_ENABLE_ALL) on the ONNX file itself
all on the same inputs (the model's seeded bindings), outputs checked against each
other. Prints compile times and the best and median of --repeat runs.

Run: python bench/iree_vs.py [--zoo bert_base,resnet50] [--hw datacenter] [--repeat 10]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from backend.mlir.iree import IreeProgram  # noqa: E402
from eqsat.iree_run import module_from_file  # noqa: E402
from eqsat.loading import load_model  # noqa: E402

ZOO = Path.home() / ".cache" / "eqsat" / "zoo"


def zoo_file(name: str) -> Path:
    found = sorted(ZOO.glob(f"{name}-*.onnx"), key=lambda p: p.stat().st_mtime)
    if not found:
        sys.exit(f"{name}: no cached export in {ZOO} (run bench/zoo.py)")
    return found[-1]


def interleaved(calls: dict[str, object], repeat: int) -> dict[str, tuple[float, float]]:
    """(best, median) seconds per call, the calls taking turns (one warm-up each first)
    so that a change in the machine's load affects them alike."""
    for call in calls.values():
        call()
    times: dict[str, list[float]] = {label: [] for label in calls}
    for _ in range(repeat):
        for label, call in calls.items():
            start = time.perf_counter()
            call()
            times[label].append(time.perf_counter() - start)
    return {label: (min(t), statistics.median(t)) for label, t in times.items()}


def emit(path: Path, out: Path, flags: list[str]) -> float:
    """`eqsat compile --emit mlir` (a subprocess, as a user runs it); its wall time."""
    start = time.perf_counter()
    cmd = [sys.executable, "-m", "eqsat", "compile", str(path), "--emit", "mlir", "-o", str(out)]
    subprocess.run([*cmd, *flags], check=True, capture_output=True, text=True)
    return time.perf_counter() - start


def iree_program(mlir: Path, graph, bindings):
    """(a call running the compiled program, its compile seconds, its outputs)."""
    program = IreeProgram(module_from_file(str(mlir), graph))
    args = program.arguments(bindings)
    return (lambda: program(args)), program.compile_seconds, program(args)


def ort_session(path: Path, loaded, bindings):
    """(a call running ONNX Runtime, its session-creation seconds, its outputs by ONNX name)."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    start = time.perf_counter()
    session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    load = time.perf_counter() - start
    by_onnx = {io.onnx_name: io.name for io in loaded.onnx.inputs}
    types = {"tensor(int64)": np.int64, "tensor(int32)": np.int32, "tensor(float)": np.float32}
    feeds = {
        i.name: np.asarray(bindings[by_onnx[i.name]]).astype(types.get(i.type, np.float32))
        for i in session.get_inputs()
    }
    names = [o.name for o in session.get_outputs()]

    def call():
        return dict(zip(names, session.run(names, feeds), strict=True))

    return call, load, call()


def relative_error(got, want) -> float:
    g, w = np.asarray(got, np.float64), np.asarray(want, np.float64)
    return float(np.linalg.norm(g - w) / max(np.linalg.norm(w), 1e-30))


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--zoo", default="bert_base,resnet50", help="zoo model names (comma-separated)")
    p.add_argument("--hw", default="datacenter", help="hardware eqsat optimizes for")
    p.add_argument("--repeat", type=int, default=10, help="timed runs per program")
    args = p.parse_args()
    for name in [n for n in args.zoo.split(",") if n]:
        path = zoo_file(name)
        loaded = load_model(path)
        bindings = loaded.bindings(0)
        graph = loaded.graph
        plain_label, opt_label = "IREE, model as written", f"IREE, eqsat-optimized ({args.hw})"
        ort_label = "ONNX Runtime (ORT_ENABLE_ALL)"
        rows: dict[str, dict] = {}
        calls = {}
        with tempfile.TemporaryDirectory() as tmp:
            for label, flags in ((plain_label, ["--no-optimize"]), (opt_label, ["--hw", args.hw])):
                mlir = Path(tmp) / "program.mlir"
                emit_s = emit(path, mlir, flags)
                call, compile_s, outputs = iree_program(mlir, graph, bindings)
                calls[label] = call
                rows[label] = {"emit": emit_s, "compile": compile_s, "outputs": outputs}
        call, load_s, ort_outputs = ort_session(path, loaded, bindings)
        calls[ort_label] = call
        rows[ort_label] = {"compile": load_s}
        base = rows[plain_label]["outputs"]
        rows[opt_label]["error"] = max(
            relative_error(rows[opt_label]["outputs"][k], base[k]) for k in base
        )
        want = loaded.onnx.results(base)
        rows[ort_label]["error"] = max(
            relative_error(ort_outputs[k], want[k]) for k in ort_outputs if k in want
        )
        timing = interleaved(calls, args.repeat)
        print(f"{name} ({path.name}), {args.repeat} runs each, taking turns, after a warm-up:")
        print(
            f"  {'program':40s} {'emit s':>7s} {'compile s':>9s} {'best ms':>9s} "
            f"{'median ms':>10s}  rel. error vs IREE as written"
        )
        for label, r in rows.items():
            best, median = timing[label]
            emit_s = f"{r['emit']:7.1f}" if "emit" in r else f"{'-':>7s}"
            err = f"{r['error']:.1e}" if "error" in r else "-"
            print(
                f"  {label:40s} {emit_s} {r['compile']:9.1f} {best * 1e3:9.1f} "
                f"{median * 1e3:10.1f}  {err}"
            )
        speedup = timing[plain_label][1] / timing[opt_label][1]
        print(f"  eqsat-optimized vs as written under IREE: {speedup:.2f}x (median)", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
