"""Weight-only quantization: int4 packing, the load-path dequantizer (hwsim LoadDq), the
matmul_wq kernel simulated against the reference, its DRAM bytes in the simulator and
the cost model, and the `--quantize w4a16 | w8a16 | bf16` flags."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from eqsat.cli import build_parser, main
from eqsat.costs import kernel_work, op_cost
from eqsat.interpreter import evaluate
from eqsat.ops.weight_only import group_scales, quantize_weights
from frontend import check_model, parse_model
from hwsim import load_hardware, parse, simulate
from hwsim.wq import dequantize, pack_i4, unpack_i4
from tests.backend.helpers import run_backend
from tests.conftest import ROOT

MLP = str(ROOT / "examples" / "mlp.model")


@given(
    arrays(
        np.int8,
        st.tuples(st.integers(1, 6).map(lambda r: 2 * r), st.integers(1, 7)),
        elements=st.integers(-8, 7),
    )
)
def test_int4_packing_round_trips_two_per_byte(q) -> None:
    packed = pack_i4(q)
    assert packed.dtype == np.int8 and packed.shape == (q.shape[0] // 2, q.shape[1])
    assert packed.nbytes * 2 == q.size
    np.testing.assert_array_equal(unpack_i4(packed), q)
    # low nibble = even row, high nibble = odd row
    b = packed.view(np.uint8).astype(np.int16)
    np.testing.assert_array_equal(((b & 0xF) ^ 8) - 8, q[0::2])


@given(arrays(np.int8, st.tuples(st.integers(1, 5), st.integers(1, 5))))
def test_every_byte_unpacks_and_packs_back(packed) -> None:
    np.testing.assert_array_equal(pack_i4(unpack_i4(packed)), packed)


def test_pack_rejects_values_outside_int4() -> None:
    with pytest.raises(ValueError, match="int4 range"):
        pack_i4(np.array([[8], [0]]))
    with pytest.raises(ValueError, match="even number of rows"):
        pack_i4(np.zeros((3, 2)))


@settings(max_examples=30, deadline=None)
@given(
    st.sampled_from([4, 8]),
    st.sampled_from([2, 4, 8]),
    st.integers(1, 4),
    st.integers(1, 5),
    st.integers(0, 2**32 - 1),
)
def test_group_quantization_error_is_at_most_half_a_step(bits, group, groups, n, seed) -> None:
    w = np.random.default_rng(seed).standard_normal((group * groups, n)).astype(np.float32)
    s = group_scales(w, group, bits)
    back = dequantize(quantize_weights(w, group, bits), s, bits, group)
    step = np.repeat(s, group, axis=0)
    assert np.all(np.abs(back - w) <= step / 2 * (1 + 1e-6))


def test_loaddq_dequantizes_a_tile_that_starts_inside_a_group() -> None:
    """Rows 6..13 of int4 weights with groups of 4: scale rows 1..3, phase 2."""
    rng = np.random.default_rng(1)
    q = rng.integers(-8, 8, (16, 3))
    s = (2.0 ** rng.integers(-2, 3, (4, 3))).astype(np.float32)
    text = """\
.input   w  i8 [8, 3]
.input   s  f32 [4, 3]
.output  y  f32 [8, 3]

load        sram@0:3x3:f32 <- s[3:3x3/3]  signal=a
loaddq      sram@64:8x3:f32 <- w[9:4x3/3], sram@0:3x3:f32  bits=4  group=4  phase=2  wait=a  signal=b
store       y[0:8x3/3] <- sram@64:8x3:f32  wait=b
"""
    program = parse(text)
    result = simulate(program, load_hardware("edge"), {"w": pack_i4(q), "s": s})
    want = q[6:14].astype(np.float32) * s[np.arange(6, 14) // 4]
    np.testing.assert_array_equal(result.outputs["y"], want)
    assert result.report.dram_bytes_read == 4 * 3 + 3 * 3 * 4  # packed bytes + scales


def _matmul_wq_model(m: int, k: int, n: int, bits: int, group: int, bf16: bool) -> str:
    x = "cast(x, dtype=bf16)" if bf16 else "x"
    act = ", act=bf16" if bf16 else ""
    return f"""model t {{
  input x: f32[{m}, {k}]
  param wq: i8[{k * bits // 8}, {n}]
  param s: f32[{k // group}, {n}]
  y = matmul_wq({x}, wq, s, group={group}, bits={bits}{act})
  output y
}}"""


@pytest.mark.parametrize(
    ("hw", "m", "k", "n", "bits", "group", "bf16"),
    [
        ("edge", 1, 256, 64, 4, 128, False),
        ("edge", 3, 512, 96, 8, 64, False),
        ("edge", 5, 384, 40, 4, 32, False),
        ("edge", 1, 512, 256, 4, 128, True),
        ("datacenter", 1, 512, 256, 4, 128, False),
        ("datacenter", 2, 256, 128, 8, 128, True),
    ],
)
def test_matmul_wq_simulates_exactly_the_reference(hw, m, k, n, bits, group, bf16) -> None:
    """Exact in f32: small integer activations and power-of-two scales make every
    product and sum exact; with bf16 activations (random data, group scales) bf16
    rounding happens in both alike, and the sums agree to f32 rounding: a one-row
    product splits its columns, and the vector unit's share sums in a tree."""
    graph = check_model(parse_model(_matmul_wq_model(m, k, n, bits, group, bf16)))
    rng = np.random.default_rng(m * k + n)
    w = rng.standard_normal((k, n)).astype(np.float32)
    if bf16:
        x, s = rng.standard_normal((m, k)), group_scales(w, group, bits)
    else:
        x, s = rng.integers(-3, 4, (m, k)), 2.0 ** rng.integers(-3, 2, (k // group, n))
    bindings = {"x": x.astype(np.float32), "wq": quantize_weights(w, group, bits), "s": s}
    bindings["s"] = bindings["s"].astype(np.float32)
    got, report, compiled = run_backend(graph, hw, bindings)
    want = evaluate(graph, bindings)["y"]
    if bf16:  # weights left unrounded to bf16 would be off by about 1e-3 of the scale
        np.testing.assert_allclose(got["y"], want, rtol=0, atol=2e-6 * np.abs(want).max())
    else:
        np.testing.assert_array_equal(got["y"], want)
    # DRAM moves the packed bytes, once (one row block of x: B is read once); with bf16
    # activations a cast kernel reads x and writes its bf16 copy, which the product reads
    packed, scales = k * bits // 8 * n, k // group * n * 4
    x_bytes = m * k * (4 + 2 if bf16 else 4)
    cast = m * k * (4 + 2) if bf16 else 0
    assert report.dram_bytes_written == m * n * 4 + (m * k * 2 if bf16 else 0)
    if any(ins.queue == "vector" for ins in compiled.program.instrs):
        # a split product (each part reads x, once per tile of its columns where its
        # k is tiled): the bytes the cost model prices
        node = next(nd for _, nd in graph if nd.op == "matmul_wq")
        types = [graph.nodes[j].type for j in node.inputs]
        cost = op_cost(load_hardware(hw), node.op, types, node.type, node.attr_dict)
        moved = report.dram_bytes_read + report.dram_bytes_written - cast
        assert moved == cost.dram_bytes >= packed + scales + m * n * 4
        return
    assert report.dram_bytes_read == x_bytes + packed + scales


def test_cost_model_prices_the_packed_bytes() -> None:
    graph = check_model(parse_model(_matmul_wq_model(1, 1024, 512, 4, 128, False)))
    node = next(n for _, n in graph if n.op == "matmul_wq")
    types = [graph.nodes[j].type for j in node.inputs]
    work = kernel_work(node.op, types, node.type, node.attr_dict)
    assert work.bytes_in == 1024 * 4 + 512 * 512 + 8 * 512 * 4  # x, packed int4, scales
    assert (work.b_bits, work.b_group, work.m, work.k, work.n) == (4, 128, 1, 1024, 512)
    hw = load_hardware("edge")
    cost = op_cost(hw, node.op, types, node.type, node.attr_dict)  # what extraction sees
    rng = np.random.default_rng(0)
    bindings = {
        "x": rng.standard_normal((1, 1024)).astype(np.float32),
        "wq": quantize_weights(rng.standard_normal((1024, 512)).astype(np.float32), 128, 4),
        "s": np.ones((8, 512), np.float32),
    }
    _, report, _ = run_backend(graph, "edge", bindings)
    assert cost.dram_bytes == report.dram_bytes_read + report.dram_bytes_written
    # the same product with f32 weights moves 8x the weight bytes
    assert cost.dram_bytes < (1024 * 512 * 4) / 6


def test_optimize_w4a16_reports_kernels_and_sqnr(tmp_path, capsys) -> None:
    out, report = tmp_path / "q.model", tmp_path / "r.json"
    flags = ["-q", "--quantize", "w4a16", "--group-size", "16", "--report", str(report)]
    assert main(["optimize", MLP, *flags, "-o", str(out)]) == 0
    d = json.loads(report.read_text())
    assert d["quantization"]["scheme"] == "w4a16"
    q = d["quantization"]
    assert q["quantizable_matmuls"] == 3  # extraction keeps a product in f32 where cheaper
    assert 0 < q["weight_only_kernels"] <= 3 and d["cost_after"] < d["cost_before"]
    assert d["sqnr_db"]["probs"] >= 20.0
    assert "matmul_wq" in out.read_text()
    assert "w4a16:" in capsys.readouterr().out


def test_simulate_bf16_weights(capsys) -> None:
    assert main(["simulate", MLP, "--quantize", "bf16", "--hw", "edge"]) == 0
    assert "bf16          SQNR vs float model probs" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--group-size", "64"], "--group-size applies to --quantize w4a16, w8a16 or fp8"),
        (["--quantize", "w4a16", "--group-size", "7"], "--group-size must be an even"),
        (["--quantize", "bf16", "--group-size", "64"], "--group-size applies to"),
        (["--quantize", "w8a16", "--calibrate", "c.npz"], "needs no calibration"),
    ],
)
def test_flag_errors(flags, message, capsys) -> None:
    assert main(["optimize", MLP, "-q", *flags]) == 1
    assert message in capsys.readouterr().err


def test_a_precision_the_hardware_file_does_not_declare_is_refused(tmp_path, capsys) -> None:
    hw = tmp_path / "no_int4.toml"
    hw.write_text('base = "edge"\nname = "no-int4"\nweight_dtypes = ["i8", "bf16", "f32"]\n')
    assert main(["optimize", MLP, "-q", "--quantize", "w4a16", "--hw", str(hw)]) == 1
    err = capsys.readouterr().err
    assert str(hw) in err and "does not declare i4 weights" in err
    assert main(["optimize", MLP, "-q", "--quantize", "w8a16", "--hw", str(hw)]) == 0


def test_hardware_file_weight_dtypes_are_checked(tmp_path) -> None:
    from hwsim.hardware import HardwareError

    hw = tmp_path / "bad.toml"
    hw.write_text('base = "edge"\nweight_dtypes = ["i4", "fp4"]\n')
    with pytest.raises(HardwareError, match="unknown weight dtype 'fp4'"):
        load_hardware(str(hw))
    assert load_hardware("edge").weight_dtypes == ("i4", "i8", "bf16", "f32")


@pytest.mark.parametrize(("bits", "bf16"), [(4, False), (8, False), (4, True)])
def test_mlir_dequantizes_like_the_reference(bits, bf16) -> None:
    """The MLIR emitter (backend/mlir/weight_only.py) run by IREE: the dequantized
    product within float rounding of the reference (IREE's vectorized reductions sum in
    another order; a wrong group, scale or nibble is off by far more);
    wq_pack/wq_scales of a given param fold into constants."""
    pytest.importorskip("iree.runtime", reason="IREE is not installed (the [iree] extra)")
    from backend.mlir import emit_mlir
    from backend.mlir.iree import run_iree

    k, n, group = 64, 24, 16
    text = _matmul_wq_model(3, k, n, bits, group, bf16).replace(
        "  output y",
        f"  param w: f32[{k}, {n}]\n  z = matmul_wq(x, wq_pack(w, group={group}, bits={bits}), "
        f"wq_scales(w, group={group}, bits={bits}), group={group}, bits={bits})\n  output y, z",
    )
    graph = check_model(parse_model(text))
    rng = np.random.default_rng(bits)
    w = rng.standard_normal((k, n)).astype(np.float32)
    bindings = {
        "x": rng.integers(-3, 4, (3, k)).astype(np.float32),
        "wq": quantize_weights(w, group, bits),
        "s": group_scales(w, group, bits),
        "w": w,
    }
    run = run_iree(emit_mlir(graph, consts=bindings), bindings)
    want = evaluate(graph, bindings)
    for name in ("y", "z"):
        scale = float(np.max(np.abs(want[name])))
        np.testing.assert_allclose(run.outputs[name], want[name], rtol=0, atol=4e-7 * scale)


def test_e4m3_bytes_decode_as_ml_dtypes_does() -> None:
    import ml_dtypes

    from hwsim.wq import e4m3_value

    every = np.arange(256, dtype=np.uint8)
    want = every.view(ml_dtypes.float8_e4m3fn).astype(np.float32)
    got = e4m3_value(every.view(np.int8))
    np.testing.assert_array_equal(got, want)  # NaN where NaN, -0.0 where -0.0
    assert np.array_equal(np.signbit(got), np.signbit(want))


def _fp8_bindings(m: int, k: int, n: int, group: int, seed: int) -> dict:
    """e4m3 bytes of exponents 6..9 (0.5 to 30), power-of-two scales, small integer x:
    every product and sum is exact in f32."""
    rng = np.random.default_rng(seed)
    exp, mant, sign = (
        rng.integers(6, 10, (k, n)),
        rng.integers(0, 8, (k, n)),
        rng.integers(0, 2, (k, n)),
    )
    wq = ((sign << 7) | (exp << 3) | mant).astype(np.uint8).view(np.int8)
    s = (2.0 ** rng.integers(-1, 2, (k // group, n))).astype(np.float32)
    return {"x": rng.integers(-3, 4, (m, k)).astype(np.float32), "wq": wq, "s": s}


@pytest.mark.parametrize("hw", ["edge", "datacenter"])
def test_fp8_weights_simulate_exactly_the_reference(hw) -> None:
    text = _matmul_wq_model(2, 256, 48, 8, 64, False).replace("bits=8", "bits=8, fmt=e4m3")
    graph = check_model(parse_model(text))
    bindings = _fp8_bindings(2, 256, 48, 64, 3)
    got, report, _ = run_backend(graph, hw, bindings)
    np.testing.assert_array_equal(got["y"], evaluate(graph, bindings)["y"])
    assert report.dram_bytes_read == 2 * 256 * 4 + 256 * 48 + 4 * 48 * 4  # one byte a weight


def test_fp8_needs_a_hardware_that_declares_it(tmp_path, capsys) -> None:
    assert main(["optimize", MLP, "-q", "--quantize", "fp8", "--hw", "edge"]) == 1
    assert "edge.toml does not declare fp8 weights" in capsys.readouterr().err
    gemv = tmp_path / "gemv.model"  # one row: bound by its weight bytes
    gemv.write_text(
        "model gemv {\n  input x: f32[1, 512]\n  param w: f32[512, 1024]\n"
        "  y = matmul(x, w)\n  output y\n}\n"
    )
    report = tmp_path / "r.json"
    flags = ["--quantize", "fp8", "--hw", "datacenter", "--report", str(report)]
    assert main(["simulate", str(gemv), *flags]) == 0
    d = json.loads(report.read_text())
    # e4m3 bytes and (bf16, the default) scales once, and x a whole number of times
    # (more than once where the columns split between two units)
    x_reads, rest = divmod(d["dram_bytes_read"] - (512 * 1024 + 4 * 1024 * 2), 512 * 4)
    assert x_reads >= 1 and rest == 0
    assert d["quantization"]["param_bytes"] == 512 * 1024 + 4 * 1024 * 2
    assert 25.0 < d["sqnr_db"]["y"] < 60.0  # quantized (not the f32 product kept)


def test_mlir_decodes_fp8_like_the_reference() -> None:
    pytest.importorskip("iree.runtime", reason="IREE is not installed (the [iree] extra)")
    from backend.mlir import emit_mlir
    from backend.mlir.iree import run_iree

    text = _matmul_wq_model(2, 128, 16, 8, 32, False).replace("bits=8", "bits=8, fmt=e4m3")
    graph = check_model(parse_model(text))
    bindings = _fp8_bindings(2, 128, 16, 32, 4)
    bindings["wq"][0, :4] = np.array([0x7F, 0xFF, 0x01, 0x80], np.uint8).view(
        np.int8
    )  # NaN, -NaN, 2^-9, -0
    run = run_iree(emit_mlir(graph, consts=bindings), bindings)
    np.testing.assert_array_equal(run.outputs["y"], evaluate(graph, bindings)["y"])


KV_MODEL = """model kv {
  input x: f32[1, 64]
  param wk: f32[64, 48]
  param wv: f32[64, 48]
  k = matmul(x, wk)
  v = matmul(x, wv)
  output k, v
}"""


def test_weight_bits_keeps_the_named_weights_in_int8(tmp_path) -> None:
    """--weight-bits wk=8 under w4a16: wk's product is an int8 matmul_wq (~45 dB on
    Gaussian weights), wv's stays int4 (~20-25 dB: 4 bits); the simulated program
    equals the reference evaluation of the optimized program."""
    from eqsat.commands.compile import graph_for_target
    from eqsat.fidelity import measure_program

    model = tmp_path / "kv.model"
    model.write_text(KV_MODEL)
    flags = ["--quantize", "w4a16", "--group-size", "16", "--hw", "edge", "-q"]
    args = build_parser().parse_args(["simulate", str(model), *flags, "--weight-bits", "wk=8"])
    graph, _, result = graph_for_target(args, check_model(parse_model(KV_MODEL)))
    quant = result.quant
    assert quant.sqnr["k"] > 40.0 > 30.0 > quant.sqnr["v"]
    assert "wk int8" in quant.calibration
    bits = {
        str(graph.nodes[graph.nodes[i].inputs[1]].attr("name")): n.attr("bits")
        for i, n in graph
        if n.op == "matmul_wq"
    }
    assert bits == {"wk.w8": 8, "wv.w4": 4}
    bindings = {**quant.all_params, **quant.eval_inputs[0]}
    got, _, _ = run_backend(graph, "edge", bindings)
    want = evaluate(graph, bindings)
    # the cost model prices each width's kernel as simulated (issue 11: within 10%)
    row = measure_program(graph, load_hardware("edge"), bindings)
    wq = [k for k in row.kernels if k.label.endswith(":matmul_wq")]
    assert len(wq) == 2 and all(abs(k.error) < 0.1 for k in wq)
    for name in ("k", "v"):  # bf16 activations: the split's tree sums agree to f32 rounding
        np.testing.assert_allclose(
            got[name], want[name], rtol=0, atol=2e-6 * np.abs(want[name]).max()
        )


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--quantize", "w4a16", "--weight-bits", "wq=8"], "not the weight of a quantizable"),
        (["--quantize", "w4a16", "--weight-bits", "wk=6"], "expected NAME=4 or NAME=8"),
        (["--quantize", "bf16", "--weight-bits", "wk=8"], "applies to --quantize w4a16 or"),
    ],
)
def test_weight_bits_errors(tmp_path, flags, message, capsys) -> None:
    model = tmp_path / "kv.model"
    model.write_text(KV_MODEL)
    assert main(["optimize", str(model), "-q", *flags]) == 1
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err
