"""Group scales stored in bf16 (`--group-scale-dtype bf16`, the default): the integers
sit on the rounded scales' grid, the kernel moves two bytes a scale in the simulator
and in the cost model, and the simulator computes what the reference does."""

from __future__ import annotations

import json

import ml_dtypes
import numpy as np
import pytest

from eqsat.cli import main
from eqsat.costs import kernel_work, op_cost
from eqsat.interpreter import evaluate
from eqsat.ops.weight_only import group_scales, quantize_weights
from frontend import check_model, parse_model
from hwsim import load_hardware
from hwsim.wq import dequantize
from tests.backend.helpers import run_backend
from tests.quant.test_weight_only import MLP


@pytest.mark.parametrize("bits", [4, 8])
def test_bf16_scales_are_the_rounded_f32_ones_and_quantize_on_their_grid(bits) -> None:
    w = np.random.default_rng(bits).standard_normal((256, 24)).astype(np.float32)
    s32 = group_scales(w, 32, bits)
    s16 = group_scales(w, 32, bits, sdtype="bf16")
    assert s32.dtype == np.float32 and s16.dtype == ml_dtypes.bfloat16
    assert np.array_equal(s16, s32.astype(ml_dtypes.bfloat16))
    assert not np.array_equal(s16.astype(np.float32), s32)  # really rounded
    q = quantize_weights(w, 32, bits, sdtype="bf16")
    back = dequantize(q, s16.astype(np.float32), bits, 32)
    step = np.repeat(s16.astype(np.float32), 32, axis=0)
    # on the bf16 grid: at most half a step, but for the largest weight of a group
    # whose scale rounded down (clipped to qmax: at most 2^-9 of it more)
    assert np.all(np.abs(back - w) <= step / 2 + np.abs(w) * 2.0**-8)
    # the integers are those of the bf16 scales, not of the f32 ones
    assert not np.array_equal(q, quantize_weights(w, 32, bits))


def _model(m: int, k: int, n: int, group: int) -> str:
    return f"""model t {{
  input x: f32[{m}, {k}]
  param wq: i8[{k // 2}, {n}]
  param s: bf16[{k // group}, {n}]
  y = matmul_wq(x, wq, s, group={group}, bits=4)
  output y
}}"""


@pytest.mark.parametrize(("hw", "m", "k", "n"), [("edge", 1, 512, 256), ("edge", 3, 256, 64)])
def test_bf16_scales_simulate_as_the_reference_and_as_priced(hw, m, k, n) -> None:
    group = 128
    graph = check_model(parse_model(_model(m, k, n, group)))
    rng = np.random.default_rng(k + m)
    w = rng.standard_normal((k, n)).astype(np.float32)
    bindings = {
        "x": rng.integers(-3, 4, (m, k)).astype(np.float32),
        "wq": quantize_weights(w, group, 4, sdtype="bf16"),
        "s": group_scales(w, group, 4, sdtype="bf16"),
    }
    got, report, compiled = run_backend(graph, hw, bindings)
    want = evaluate(graph, bindings)["y"]
    # small integer x: the products are exact; the sums agree to f32 rounding (a one-row
    # product splits its columns, whose vector share sums in f32 partial sums)
    np.testing.assert_allclose(got["y"], want, rtol=0, atol=2e-6 * np.abs(want).max())
    i, node = next((i, nd) for i, nd in graph if nd.op == "matmul_wq")
    types = [graph.nodes[j].type for j in node.inputs]
    work = kernel_work(node.op, types, node.type, node.attr_dict)
    assert work.b_scale_bytes == 2
    assert work.bytes_in == m * k * 4 + k * n // 2 + k // group * n * 2
    cost = op_cost(load_hardware(hw), node.op, types, node.type, node.attr_dict)
    assert cost.dram_bytes == report.dram_bytes_read + report.dram_bytes_written
    kernel = next(kn for kn in compiled.kernels if kn.node == i)
    span = next(sp for sp in report.kernels if sp.name == kernel.name)
    assert abs(span.end - span.start - cost.cycles) <= 0.02 * cost.cycles


def test_group_scale_dtype_flag(tmp_path, capsys) -> None:
    gemv = tmp_path / "gemv.model"  # one row: bound by its weight bytes
    gemv.write_text(
        "model gemv {\n  input x: f32[1, 512]\n  param w: f32[512, 1024]\n"
        "  y = matmul(x, w)\n  output y\n}\n"
    )
    # f32 scales on request (the default bf16 ones: test_fp8_needs_a_hardware_that_declares_it)
    report = tmp_path / "r.json"
    flags = ["--quantize", "w4a16", "--hw", "edge", "--report", str(report), "-q"]
    assert main(["simulate", str(gemv), *flags, "--group-scale-dtype", "f32"]) == 0
    d = json.loads(report.read_text())
    # packed int4 and the f32 scales once, x a whole number of times (once per part
    # where the columns split between two units)
    x_reads, rest = divmod(d["dram_bytes_read"] - (256 * 1024 + 4 * 1024 * 4), 512 * 4)
    assert x_reads >= 1 and rest == 0
    assert d["quantization"]["param_bytes"] == 256 * 1024 + 4 * 1024 * 4
    assert "(f32 scales)" in d["quantization"]["detail"]
    assert 15.0 < d["sqnr_db"]["y"] < 30.0  # int4 (not the f32 product kept)
    assert main(["optimize", MLP, "-q", "--quantize", "int8", "--group-scale-dtype", "bf16"]) == 1
    assert "--group-scale-dtype applies to --quantize w4a16" in capsys.readouterr().err
