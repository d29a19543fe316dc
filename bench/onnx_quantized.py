"""Quantized ONNX models (ONNX Runtime's quantizer) through eqsat: import, run, simulate.

Run: python bench/onnx_quantized.py [--models resnet18,bert_base] [--formats ...]
     [--hw edge] [--files F.onnx ...] [--no-sim] [--no-float] [--json OUT.json]

For the zoo's ResNet-18 and BERT-base quantized by ONNX Runtime (static QDQ, static
QOperator, dynamic; bench/onnx_quantized_models.py makes and caches them), or for
--files, prints one row per model and format:
- nodes: ONNX nodes; ops: eqsat ops the import wrote (live nodes of the graph);
- within 1 step: % of output elements where `eqsat run` (the reference interpreter)
  is within one quantization step of ONNX Runtime, and the worst error in steps. The
  step of an output is the scale of the DequantizeLinear that computes it; a float
  output of a dynamically quantized model has none: there it is (max - min) / 255 of
  ORT's output (the step DynamicQuantizeLinear would give it);
- ORT/ORT: the same measure between ORT without its graph optimizations and ORT with
  them (its own spread: where one value rounds the other way at a tie, deep models
  amplify it layer after layer);
- sim == run: whether the simulated outputs equal the interpreter's bit for bit, for
  the program as written (--no-optimize) and the optimized one (else the share of
  equal elements and the largest difference, in steps); sim == own: the same against
  the interpreter run on the program that was simulated (the optimized one computes
  int8 products where `eqsat run` computes the f32 products QDQ graphs write);
- int8 / f32: contraction kernels (qmatmul/qconv2d and their fused forms, vs
  matmul/conv) in the program as written and in the optimized program;
- cycles of both programs on --hw, the cost model's estimate of each (error =
  (estimate - simulated) / simulated), the kernels the simulator ran, and for the zoo
  models the optimized float export's cycles on --hw next to them (opt/float: the
  optimized quantized program's cycles over the float program's).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from onnx_quantized_models import DIMS, FORMATS, quantized_files, sample_feeds  # noqa: E402

from eqsat.cli import build_parser  # noqa: E402
from eqsat.commands.compile import graph_for_target  # noqa: E402
from eqsat.interpreter import evaluate  # noqa: E402
from eqsat.loading import load_model  # noqa: E402
from eqsat.ops.fused import contraction_of  # noqa: E402


def ort_outputs(path: Path, feeds: dict, optimize: bool = True) -> dict[str, np.ndarray]:
    """ONNX Runtime's outputs, with its graph optimizations (the default: QDQ pairs
    fused into integer kernels) or without (every node as written)."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.log_severity_level = 3
    if not optimize:
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    names = [o.name for o in session.get_outputs()]
    return dict(zip(names, session.run(None, feeds), strict=True))


def output_steps(path: Path, want: dict[str, np.ndarray]) -> dict[str, float]:
    """The quantization step of each output (see the module docstring)."""
    import onnx
    from onnx import numpy_helper

    model = onnx.load(str(path), load_external_data=False)
    inits = {t.name: t for t in model.graph.initializer}
    producers = {o: n for n in model.graph.node for o in n.output}
    steps = {}
    for name, ref in want.items():
        node = producers.get(name)
        if node is not None and node.op_type == "DequantizeLinear" and node.input[1] in inits:
            steps[name] = float(np.max(numpy_helper.to_array(inits[node.input[1]])))
        else:
            steps[name] = float(np.ptp(ref)) / 255 or 1.0
    return steps


def contraction_counts(graph) -> tuple[int, int]:
    """(int8, float) contraction kernels among the live nodes of `graph`."""
    live = graph.live()
    int8 = flt = 0
    for i, node in graph:
        if not live[i] or node.is_leaf:
            continue
        c = contraction_of(node.op)
        if c in ("qmatmul", "qconv2d"):
            int8 += 1
        elif c is not None:
            flt += 1
    return int8, flt


def simulated(path: Path, dims: dict, bindings: dict, hw: str, optimize: bool, limit: float):
    """(outputs by model name, cycles, int8 and float contractions, whether the
    outputs equal the interpreter's on the same (optimized) program, (estimated
    cycles, kernels simulated)) of the program; `limit`: seconds the optimizer may
    take (past it, it keeps the input program)."""
    from backend import compile_graph
    from eqsat.program_cost import program_cost
    from hwsim import simulate

    flags = ["simulate", str(path), "--hw", hw, "-q", "--time-limit", str(limit)]
    flags += [] if optimize else ["--no-optimize"]
    for k, v in dims.items():
        flags += ["--dim", f"{k}={v}"]
    args = build_parser().parse_args(flags)
    loaded = load_model(path, dims)
    lowered, hw_desc, _ = graph_for_target(args, loaded.graph, bindings)
    compiled = compile_graph(lowered, hw_desc)
    result = simulate(compiled.program, hw_desc, compiled.feeds(bindings))
    outs = compiled.results(result.outputs)
    bound = lowered.bound_names()
    same = evaluate(lowered, {k: v for k, v in bindings.items() if k in bound})
    exact = all(np.array_equal(outs[k], same[k]) for k in same)
    estimate = (program_cost(lowered, hw_desc).cycles, len(result.report.kernels))
    return outs, result.report.cycles, contraction_counts(lowered), exact, estimate


def float_row(name: str, hw: str, limit: float) -> dict:
    """The zoo's float export of NAME, optimized and simulated on `hw`: the figure the
    quantized programs are compared with."""
    from onnx_quantized_models import source_file

    path = source_file(name)
    dims = DIMS.get(name, {})
    feeds = sample_feeds(path, dims, seed=7)
    bindings = load_model(path, dims).bindings(0, feeds)
    _, cycles, _, _, (estimate, kernels) = simulated(path, dims, bindings, hw, True, limit)
    return {"model": name, "cycles": int(cycles), "estimate": int(estimate), "kernels": kernels}


def measure(label: str, fmt: str, path: Path, dims: dict, hw: str, sim: bool, limit: float) -> dict:
    import onnx

    t0 = time.perf_counter()
    feeds = sample_feeds(path, dims, seed=7)
    want = ort_outputs(path, feeds)
    loaded = load_model(path, dims)
    bindings = loaded.bindings(0, feeds)
    ours = evaluate(loaded.graph, bindings)
    got = loaded.onnx.results(ours)
    steps = output_steps(path, want)

    def off(a: dict, b: dict) -> np.ndarray:
        return np.concatenate(
            [
                (np.abs(a[k].astype(np.float64) - b[k].astype(np.float64)) / steps[k]).ravel()
                for k in b
            ]
        )

    errors = off(got, want)
    ort_self = off(ort_outputs(path, feeds, optimize=False), want)
    row = {
        "model": label,
        "format": fmt,
        "nodes": len(onnx.load(str(path), load_external_data=False).graph.node),
        "ops": sum(1 for i, n in loaded.graph if loaded.graph.live()[i] and not n.is_leaf),
        "within_1_step_pct": float(np.mean(errors <= 1.0 + 1e-3) * 100),
        "max_steps": float(errors.max()),
        # ORT without graph optimizations against ORT with them: its own spread
        "ort_self_within_1_step_pct": float(np.mean(ort_self <= 1.0 + 1e-3) * 100),
    }
    if sim:
        for name, optimize in (("written", False), ("optimized", True)):
            outs, cycles, (int8, flt), exact, (estimate, kernels) = simulated(
                path, dims, bindings, hw, optimize, limit
            )
            row[f"estimate_{name}"], row[f"kernels_{name}"] = int(estimate), kernels
            row[f"sim_eq_own_graph_{name}"] = exact
            row[f"sim_eq_run_{name}"] = all(np.array_equal(outs[k], ours[k]) for k in ours)
            row[f"sim_equal_pct_{name}"] = float(
                np.mean(np.concatenate([(outs[k] == ours[k]).ravel() for k in ours])) * 100
            )
            row[f"sim_max_steps_{name}"] = float(off(loaded.onnx.results(outs), got).max())
            row[f"cycles_{name}"] = int(cycles)
            row[f"int8_{name}"], row[f"f32_{name}"] = int8, flt
    row["seconds"] = round(time.perf_counter() - t0, 1)
    return row


KINDS = ("written", "optimized")


def _error(r: dict, k: str) -> str:
    return f"{(r[f'estimate_{k}'] - r[f'cycles_{k}']) / r[f'cycles_{k}']:+.1%}"


def print_speed_table(rows: list[dict], floats: dict[str, dict], hw: str) -> None:
    """Kernels, cycles and estimate errors as written / optimized, against float."""
    print(
        f"{'model':<14}{'format':<11}{'kernels':>14}{'cycles written':>16}{'est. err':>9}"
        f"{'cycles opt':>12}{'est. err':>9}{'float opt':>11}{'est. err':>9}{'opt/float':>10}"
    )
    for name, f in floats.items():
        err = f"{(f['estimate'] - f['cycles']) / f['cycles']:+.1%}"
        print(
            f"{name:<14}{'float':<11}{f['kernels']:>14}{'-':>16}{'-':>9}{f['cycles']:>12}"
            f"{err:>9}{f['cycles']:>11}{err:>9}{1.0:>10.2f}"
        )
    for r in rows:
        if "cycles_optimized" not in r:
            continue
        f = floats.get(r["model"])
        kernels = f"{r['kernels_written']} -> {r['kernels_optimized']}"
        ratio = f"{r['cycles_optimized'] / f['cycles']:.2f}" if f else "-"
        print(
            f"{r['model']:<14}{r['format']:<11}{kernels:>14}{r['cycles_written']:>16}"
            f"{_error(r, 'written'):>9}{r['cycles_optimized']:>12}{_error(r, 'optimized'):>9}"
            f"{f['cycles'] if f else '-':>11}{'':>9}{ratio:>10}"
        )
    print(f"on {hw}; est. err: (cost model estimate - simulated) / simulated")


def print_table(rows: list[dict], hw: str) -> None:
    head = (
        f"{'model':<14}{'format':<11}{'nodes':>6}{'ops':>6}{'<=1 step':>10}{'max':>7}{'ORT/ORT':>9}"
        f"{'sim==run':>22}{'sim==own':>10}{'int8/f32 written':>18}{'int8/f32 opt':>14}"
        f"{'cycles written':>16}{'cycles opt':>12}"
    )
    print(f"hardware: {hw}")
    print(head)
    for r in rows:
        sim = "-"
        if "sim_eq_run_written" in r:
            sim = "/".join(
                "yes"
                if r[f"sim_eq_run_{k}"]
                else f"{r[f'sim_equal_pct_{k}']:.0f}%<{r[f'sim_max_steps_{k}']:.2g}"
                for k in ("written", "optimized")
            )
        own = "/".join(
            "yes" if r.get(f"sim_eq_own_graph_{k}") else "NO" if f"cycles_{k}" in r else "-"
            for k in KINDS
        )
        ints = {k: f"{r.get('int8_' + k, '-')}/{r.get('f32_' + k, '-')}" for k in KINDS}
        print(
            f"{r['model']:<14}{r['format']:<11}{r['nodes']:>6}{r['ops']:>6}"
            f"{r['within_1_step_pct']:>9.2f}%{r['max_steps']:>7.2f}"
            f"{r['ort_self_within_1_step_pct']:>8.2f}%{sim:>22}{own:>10}"
            f"{ints['written']:>18}{ints['optimized']:>14}"
            f"{r.get('cycles_written', '-'):>16}{r.get('cycles_optimized', '-'):>12}"
        )
    print(
        "<=1 step: `eqsat run` within one quantization step of ONNX Runtime; ORT/ORT: ORT "
        "without graph optimizations within one step of ORT with them"
    )
    print(
        "sim==run: simulated outputs equal to `eqsat run`'s, as written / optimized (yes, or "
        "the % of elements equal < the largest difference in steps); sim==own: simulated "
        "outputs equal to the interpreter's on the same program (as written / optimized); "
        "int8/f32: contraction kernels"
    )


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--models", default="resnet18,bert_base")
    p.add_argument("--formats", default=",".join(FORMATS))
    p.add_argument("--files", nargs="*", default=[], help="quantized ONNX files to measure")
    p.add_argument("--dim", action="append", default=[], metavar="NAME=N", help="for --files")
    p.add_argument("--hw", default="edge")
    p.add_argument("--no-sim", action="store_true", help="import and run only")
    p.add_argument(
        "--time-limit", type=float, default=600.0, help="seconds per optimization (default 600)"
    )
    p.add_argument("--json", metavar="OUT.json")
    p.add_argument(
        "--no-float", action="store_true", help="skip the float export of the zoo models"
    )
    args = p.parse_args()
    rows = []
    floats: dict[str, dict] = {}
    jobs = []
    for f in args.files:
        dims = dict((k, int(v)) for k, v in (d.split("=") for d in args.dim))
        jobs.append((Path(f).stem, "file", Path(f), dims))
    for name in [m for m in args.models.split(",") if m] if not args.files else []:
        files = quantized_files(name)
        for fmt in args.formats.split(","):
            jobs.append((name, fmt, files[fmt], DIMS.get(name, {})))
    if not args.files and not args.no_sim and not args.no_float:
        for name in [m for m in args.models.split(",") if m]:
            floats[name] = float_row(name, args.hw, args.time_limit)
            print(json.dumps({"float": floats[name]}), file=sys.stderr, flush=True)
    for label, fmt, path, dims in jobs:
        try:
            rows.append(measure(label, fmt, path, dims, args.hw, not args.no_sim, args.time_limit))
        except Exception as err:  # a row that failed says why, the others still run
            print(f"{label} {fmt}: {type(err).__name__}: {err}", file=sys.stderr)
            continue
        print(json.dumps(rows[-1]), file=sys.stderr, flush=True)
        if args.json:  # after every row: a long run that dies keeps what it measured
            Path(args.json).write_text(json.dumps({"rows": rows, "float": floats}, indent=1))
    print_table(rows, args.hw)
    if not args.no_sim:
        print()
        print_speed_table(rows, floats, args.hw)
    if args.json:
        Path(args.json).write_text(json.dumps({"rows": rows, "float": floats}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
