"""The MLIR acceptance matrix: every bundled example, the held-out blocks of
tests/mlir/models and the zoo's ONNX exports, each optimized in float and with
`--quantize int8`, emitted with `--emit mlir`, read by xDSL and by IREE's MLIR parser
(what xdsl-opt and iree-opt run), compiled by IREE for this CPU and run; compared with
`eqsat run` of the same program (the interpreter on the extracted graph, with the
quantized params).

For int8 programs the integer values are compared too: every i8/i32 value of the
program is made an output of a probe module, and the table shows how many integer
elements differ and by how many steps at most. Integer arithmetic (i8 products summed
in i32, fixed-point requantization) is exact in both; a float epilogue (layernorm,
softmax, GELU) computed in another summation order by IREE can move a value that lies
on a rounding boundary by one step, and the difference then travels downstream.

Run: python bench/mlir_acceptance.py [--only NAME,...] [--hw edge] [--no-zoo] [--json F]
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

from backend.mlir import emit_mlir, statement_locations  # noqa: E402
from backend.mlir.iree import run_iree  # noqa: E402
from eqsat.cli import build_parser  # noqa: E402
from eqsat.commands.compile import graph_for_target  # noqa: E402
from eqsat.interpreter import evaluate, evaluate_nodes  # noqa: E402
from eqsat.loading import load_model  # noqa: E402
from eqsat.wallclock import relative_error  # noqa: E402

ZOO = Path.home() / ".cache" / "eqsat" / "zoo"


def models(args) -> list[Path]:
    from eqsat.control.load import file_has_regions

    found = sorted((ROOT / "examples").glob("*.model"))
    found = [p for p in found if not file_has_regions(p)]  # if/loop: no MLIR yet
    found += sorted((ROOT / "tests" / "mlir" / "models").glob("*.model"))
    if not args.no_zoo:
        found += sorted(ZOO.glob("*.onnx"))
    if args.only:
        wanted = set(args.only.split(","))
        found = [p for p in found if p.stem.split("-")[0] in wanted]
    return found


def parse_everywhere(text: str) -> None:
    """xDSL and IREE's MLIR both parse and verify the module (raise otherwise)."""
    from iree.compiler import ir
    from xdsl.context import Context
    from xdsl.dialects import get_all_dialects
    from xdsl.parser import Parser

    ctx = Context()
    for name, factory in get_all_dialects().items():
        ctx.register_dialect(name, factory)
    Parser(ctx, text).parse_module().verify()
    with ir.Context():
        assert ir.Module.parse(text).operation.verify()


def check(path: Path, hw: str, quantize: bool) -> dict:
    flags = ["compile", str(path), "--hw", hw, "--quiet"] + (
        ["--quantize", "int8"] if quantize else []
    )
    cli = build_parser().parse_args(flags)
    loaded = load_model(path)
    bindings = loaded.bindings(0)
    start = time.perf_counter()
    graph, _, result = graph_for_target(cli, loaded.graph, bindings=bindings, params=loaded.params)
    optimize_s = time.perf_counter() - start
    quant = result.quant
    consts = quant.all_params if quant else None
    feeds = {**bindings, **quant.plan.params} if quant else bindings
    module = emit_mlir(
        graph, locations=statement_locations(loaded.model), source=str(path), consts=consts
    )
    parse_everywhere(module.text)
    run = run_iree(module, {**(consts or {}), **feeds})
    want = evaluate(graph, feeds)
    row = {
        "model": path.stem.split("-")[0],
        "variant": "int8" if quantize else "float",
        "optimize_s": round(optimize_s, 2),
        "compile_s": round(run.compile_seconds, 2),
        "lines": module.text.count("\n"),
        "error": max(relative_error(run.outputs[k], v) for k, v in want.items()),
    }
    if quant:
        values = evaluate_nodes(graph, feeds)
        ints = [i for i, n in graph if not n.is_leaf and n.type.dtype.is_int]
        row["int_values"] = len(ints)
        if ints:
            probe = type(graph)(
                graph.name, graph.nodes, [(f"v{i}", i) for i in ints], graph.dims, graph.constants
            )
            got = run_iree(emit_mlir(probe, consts=consts), {**consts, **feeds}).outputs
            diffs = [
                np.abs(got[f"v{i}"].astype(np.int64) - values[i].astype(np.int64)) for i in ints
            ]
            total = sum(d.size for d in diffs)
            row["int_elements_differing"] = int(sum(int((d > 0).sum()) for d in diffs))
            row["int_share_equal"] = 1 - row["int_elements_differing"] / max(total, 1)
            row["int_max_steps"] = int(max(int(d.max()) if d.size else 0 for d in diffs))
            first = next((i for i, d in zip(ints, diffs, strict=True) if d.any()), None)
            row["first_differing"] = graph.nodes[first].op if first is not None else None
            if first is not None:
                row.update(local_check(graph, values, consts, feeds))
    return row


def local_check(graph, values, consts, feeds) -> dict:
    """Every op of the program alone, fed the interpreter's values of its operands (one
    module holding them all): how far IREE's result is from the interpreter's when the
    inputs agree, so that differences which only travel downstream are not counted."""
    from eqsat.ir.graph import Graph, Node

    local = Graph(f"{graph.name}_local", dims=dict(graph.dims), constants=dict(graph.constants))
    copied: dict[int, int] = {}
    local_feeds = dict(feeds)

    def operand(j: int) -> int:
        if j not in copied:
            node = graph.nodes[j]
            if node.is_leaf:
                local.nodes.append(node)
            else:  # computed upstream: fed the interpreter's value
                name = f"o{j}"
                attrs = (
                    ("name", name),
                    ("shape", node.type.shape),
                    ("dtype", node.type.dtype.value),
                )
                local.nodes.append(Node("input", (), attrs, node.type, name))
                local_feeds[name] = values[j]
            copied[j] = len(local.nodes) - 1
        return copied[j]

    live = graph.live()
    checked = [i for i, n in graph if live[i] and not n.is_leaf]
    for i in checked:
        node = graph.nodes[i]
        local.nodes.append(
            Node(node.op, tuple(operand(j) for j in node.inputs), node.attrs, node.type)
        )
        local.outputs.append((f"v{i}", len(local.nodes) - 1))
    got = run_iree(emit_mlir(local, consts=consts), {**(consts or {}), **local_feeds}).outputs
    steps, float_error, worst = 0, 0.0, None
    for i in checked:
        g, w = got[f"v{i}"], values[i]
        if graph.nodes[i].type.dtype.is_int:
            d = int(np.abs(g.astype(np.int64) - w.astype(np.int64)).max()) if w.size else 0
            if d > steps:
                steps, worst = d, graph.nodes[i].op
        elif w.size:
            float_error = max(float_error, relative_error(g, w))
    return {"local_int_max_steps": steps, "local_worst_op": worst, "local_float_error": float_error}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--only", help="model names (file stems) to run, comma-separated")
    p.add_argument("--hw", default="edge", help="hardware eqsat optimizes for (default edge)")
    p.add_argument("--no-zoo", action="store_true", help="skip the zoo's ONNX exports")
    p.add_argument("--float-only", action="store_true", help="skip the int8 programs")
    p.add_argument("--json", help="write the rows here")
    args = p.parse_args()
    rows = []
    header = (
        f"{'model':16s} {'variant':7s} {'opt s':>6s} {'IREE s':>7s} {'lines':>6s} "
        f"{'rel. error':>10s}  integer values (int8)"
    )
    print(header, flush=True)
    for path in models(args):
        for quantize in (False,) if args.float_only else (False, True):
            try:
                row = check(path, args.hw, quantize)
            except Exception as err:  # a failure is a row of the table, not the end of it
                row = {"model": path.stem.split("-")[0], "variant": "int8" if quantize else "float"}
                row["failed"] = f"{type(err).__name__}: {str(err).splitlines()[0][:120]}"
                print(f"{row['model']:16s} {row['variant']:7s} FAILED {row['failed']}", flush=True)
                rows.append(row)
                continue
            ints = ""
            if "int_share_equal" in row:
                ints = (
                    f"{row['int_share_equal']:.4%} of elements equal, at most "
                    f"{row['int_max_steps']} step(s) apart"
                    + (f" (first: {row['first_differing']})" if row["first_differing"] else "")
                )
            if "local_int_max_steps" in row:
                ints += (
                    f"; each op fed the same inputs: integers at most "
                    f"{row['local_int_max_steps']} step(s) apart"
                    + (f" ({row['local_worst_op']})" if row["local_worst_op"] else "")
                    + f", floats within {row['local_float_error']:.1e}"
                )
            print(
                f"{row['model']:16s} {row['variant']:7s} {row['optimize_s']:6.1f} "
                f"{row['compile_s']:7.1f} {row['lines']:6d} {row['error']:10.1e}  {ints}",
                flush=True,
            )
            rows.append(row)
    failed = [r for r in rows if "failed" in r]
    print(f"{len(rows) - len(failed)} of {len(rows)} programs parsed, compiled and ran")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=2) + "\n")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
