"""The spatial ops through the backend: simulated == reference for gather (negative and
out-of-range indices), pad, pooling (padding, ceil mode, dilation), rmsnorm, depthwise
and grouped convolutions (fused epilogues too); how they lower (the vector unit for
depthwise, one GEMM per group, an indexed DMA reading only the gathered rows); and the
cost model against the simulated cycles (the `gather` instruction itself:
tests/hwsim/test_hwsim_gather.py)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from backend import compile_graph
from eqsat import spatial_plan as plan
from eqsat.costs import op_cost
from eqsat.interpreter import random_bindings
from eqsat.ir.graph import GraphBuilder
from eqsat.ir.types import DType, TensorType
from eqsat.ops import REGISTRY
from eqsat.ops.spatial import pad_widths, window2d
from eqsat.window_plan import window_kernels
from hwsim import Gather, Kernel, Load, Matmul, Store, load_hardware, simulate
from tests.backend.helpers import assert_matches, reference, run_backend
from tests.strategies import op_cases, scaled, single_op_graph

F32, I32 = DType.F32, DType.I32
SPATIAL_OPS = [
    "gather",
    "pad",
    "max_pool2d",
    "avg_pool2d",
    "rmsnorm",
    "conv2d",
    "conv2d_bias",
    "conv2d_bias_relu",
    "conv2d_bias_add_relu",
]


def _graph(op: str, types, attrs, params=(), consumer: bool = False):
    b = GraphBuilder(op)
    args = [b.leaf("param" if k in params else "input", f"a{k}", t) for k, t in enumerate(types)]
    node = b.add(op, args, attrs, "out")
    if consumer:  # the kernel writes a scratch value, as inside a model
        node = b.add("relu", [node], {}, "r")
    b.output("y", node)
    return b.graph


def _bindings(graph, seed: int) -> dict[str, np.ndarray]:
    """Random values; i32 inputs (gather indices) around the table's size, so that
    in-range, negative and out-of-range indices all come up."""
    rng = np.random.default_rng(seed)
    out = random_bindings(graph, seed)
    for _, node in graph.inputs + graph.params:
        if node.type.dtype is I32:
            out[str(node.attr("name"))] = rng.integers(-12, 12, node.type.shape).astype(np.int32)
    return out


@pytest.mark.parametrize("op", SPATIAL_OPS)
def test_simulated_equals_reference(op):
    @settings(max_examples=scaled(25), deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(
        case=op_cases(op), seed=st.integers(0, 2**16), hw=st.sampled_from(["edge", "datacenter"])
    )
    def check(case, seed, hw) -> None:
        graph = single_op_graph(case)
        bindings = _bindings(graph, seed)
        got, report, _ = run_backend(graph, hw, bindings)
        assert_matches(graph, got, reference(graph, bindings))
        assert report.cycles >= report.roofline_cycles

    check()


CASES = [
    ("gather", [TensorType(F32, (10, 8)), TensorType(I32, (3, 2))], {"axis": 0}),
    ("gather", [TensorType(DType.I8, (4, 10, 3)), TensorType(I32, (5,))], {"axis": -2}),
    ("gather", [TensorType(DType.BF16, (4, 10)), TensorType(I32, ())], {"axis": 1}),
    ("gather", [TensorType(F32, (100,)), TensorType(I32, (20000,))], {"axis": 0}),
    ("pad", [TensorType(F32, (2, 3, 4))], {"pads": [1, 0, 2, 0, 3, 1], "value": -1.5}),
    ("pad", [TensorType(DType.I8, (3, 4))], {"pads": [1, 1, 1, 1], "value": 300.0}),
    ("max_pool2d", [TensorType(F32, (2, 3, 7, 7))], {"kernel": [3, 3], "stride": [2, 2], "padding": [1, 1, 1, 1]}),
    ("max_pool2d", [TensorType(DType.I8, (1, 2, 5, 6))], {"kernel": [2, 3], "stride": [2, 2], "ceil_mode": True, "dilation": [2, 1]}),
    ("max_pool2d", [TensorType(F32, (1, 1, 2, 2))], {"kernel": [1, 1], "stride": [3, 3], "padding": [0, 0, 2, 2], "ceil_mode": True}),
    ("avg_pool2d", [TensorType(F32, (2, 3, 7, 7))], {"kernel": [3, 3], "stride": [2, 2], "padding": [1, 1, 1, 1]}),
    ("avg_pool2d", [TensorType(DType.BF16, (2, 3, 7, 7))], {"kernel": [3, 2], "stride": [2, 3], "padding": [1, 0, 2, 1], "ceil_mode": True, "count_include_pad": True}),
    ("avg_pool2d", [TensorType(F32, (1, 4, 6, 6))], {"kernel": [3, 3], "dilation": [2, 2], "padding": [2, 1, 0, 2]}),
    ("rmsnorm", [TensorType(F32, (4, 16)), TensorType(F32, (16,))], {"eps": 1e-6}),
    ("conv2d", [TensorType(F32, (2, 4, 6, 6)), TensorType(F32, (8, 1, 3, 3))], {"groups": 4, "stride": [2, 2], "padding": [1, 1]}),
    ("conv2d", [TensorType(F32, (2, 4, 6, 6)), TensorType(F32, (6, 2, 3, 3))], {"groups": 2, "padding": [1, 1]}),
    ("conv2d_bias_add_relu", [TensorType(F32, (2, 6, 6, 6)), TensorType(F32, (6, 1, 3, 3)), TensorType(F32, (6, 1, 1)), TensorType(F32, (2, 6, 6, 6))], {"groups": 6, "padding": [1, 1]}),
    ("conv2d_bias_relu", [TensorType(DType.BF16, (2, 6, 5, 5)), TensorType(DType.BF16, (9, 2, 3, 3)), TensorType(DType.BF16, (9, 1, 1))], {"groups": 3, "stride": [1, 2]}),
]  # fmt: skip


@pytest.mark.parametrize(
    ("op", "types", "attrs"), CASES, ids=[f"{c[0]}-{k}" for k, c in enumerate(CASES)]
)
@pytest.mark.parametrize("hw", ["edge", "datacenter"])
@pytest.mark.parametrize("params", [(), (1,)])
def test_hand_picked_cases_simulate_like_the_reference(op, types, attrs, hw, params):
    graph = _graph(op, types, attrs, params=params, consumer=bool(params))
    bindings = _bindings(graph, 1)
    got, _, _ = run_backend(graph, hw, bindings)
    assert_matches(graph, got, reference(graph, bindings))


def _instrs(compiled):
    """(kernel name, instruction) for every instruction."""
    name = None
    for ins in compiled.program.instrs:
        if isinstance(ins, Kernel):
            name = ins.name
            continue
        yield name, ins


def test_depthwise_runs_on_the_vector_unit_and_groups_run_one_gemm_each():
    hw = load_hardware("edge")
    x, dw = TensorType(F32, (1, 8, 6, 6)), TensorType(F32, (8, 1, 3, 3))
    depthwise = compile_graph(_graph("conv2d", [x, dw], {"groups": 8, "padding": [1, 1]}), hw)
    assert not any(isinstance(ins, Matmul) for _, ins in _instrs(depthwise))
    grouped = _graph("conv2d", [x, TensorType(F32, (12, 2, 3, 3))], {"groups": 4})
    compiled = compile_graph(grouped, hw)
    with_matmul = {name for name, ins in _instrs(compiled) if isinstance(ins, Matmul)}
    assert with_matmul == {f"conv2d.out.g{j}" for j in range(4)}


def test_gather_reads_only_the_gathered_rows_and_clamps():
    table, idx = TensorType(F32, (1000, 64)), TensorType(I32, (2, 8))
    graph = _graph("gather", [table, idx], {"axis": 0}, params=(0,))
    indices = np.array([[0, 999, -1, -1000, 1000, 5000, -5000, 3]] * 2, np.int32)
    bindings = {"a0": np.random.default_rng(0).standard_normal((1000, 64)).astype(np.float32)}
    bindings["a1"] = indices
    got, report, compiled = run_backend(graph, "edge", bindings)
    assert_matches(graph, got, reference(graph, bindings))
    rows = bindings["a0"][[0, 999, 999, 0, 999, 999, 0, 3] * 2]
    np.testing.assert_array_equal(got["y"].reshape(16, 64), rows)
    gathers = [ins for _, ins in _instrs(compiled) if isinstance(ins, Gather)]
    assert gathers and all(g.src.buffer == "a0" for g in gathers)
    # the index bytes and the 16 rows, nothing else of the 256 KB table
    assert report.dram_bytes_read == 16 * 4 + 16 * 64 * 4
    assert op_cost(
        load_hardware("edge"), "gather", [table, idx], graph.nodes[2].type, {"axis": 0}
    ).dram_bytes == (16 * 4 + 2 * 16 * 64 * 4)


# ------------------------------------------------------------------ cost model

# Representative layers: a ResNet stem pool, 2x2 pools, global average pooling, a
# ceil-mode pool with uneven windows, MobileNet depthwise layers (stride 1 and 2, fused
# bias and relu), grouped convolutions (ResNeXt-like), an embedding lookup, padding.
FIDELITY = [
    ("max_pool2d", [TensorType(F32, (4, 64, 56, 56))], {"kernel": [3, 3], "stride": [2, 2], "padding": [1, 1, 1, 1]}, ()),
    ("max_pool2d", [TensorType(F32, (4, 64, 28, 28))], {"kernel": [2, 2], "stride": [2, 2]}, ()),
    ("avg_pool2d", [TensorType(F32, (4, 64, 28, 28))], {"kernel": [3, 3], "padding": [1, 1, 1, 1]}, ()),
    ("avg_pool2d", [TensorType(F32, (4, 256, 7, 7))], {"kernel": [7, 7]}, ()),
    ("avg_pool2d", [TensorType(F32, (2, 32, 15, 15))], {"kernel": [3, 3], "stride": [2, 2], "ceil_mode": True}, ()),
    ("conv2d", [TensorType(F32, (4, 64, 28, 28)), TensorType(F32, (64, 1, 3, 3))], {"groups": 64, "padding": [1, 1]}, (1,)),
    ("conv2d", [TensorType(F32, (4, 64, 28, 28)), TensorType(F32, (64, 1, 3, 3))], {"groups": 64, "padding": [1, 1], "stride": [2, 2]}, (1,)),
    ("conv2d_bias_relu", [TensorType(F32, (4, 96, 14, 14)), TensorType(F32, (96, 1, 3, 3)), TensorType(F32, (96, 1, 1))], {"groups": 96, "padding": [1, 1]}, (1, 2)),
    ("conv2d", [TensorType(F32, (4, 64, 28, 28)), TensorType(F32, (64, 16, 3, 3))], {"groups": 4, "padding": [1, 1]}, (1,)),
    ("conv2d", [TensorType(F32, (4, 32, 28, 28)), TensorType(F32, (64, 16, 3, 3))], {"groups": 2, "padding": [1, 1]}, (1,)),
    ("gather", [TensorType(F32, (1000, 64)), TensorType(I32, (4, 128))], {"axis": 0}, (0,)),
    ("gather", [TensorType(F32, (30522, 768)), TensorType(I32, (1, 128))], {"axis": 0}, (0,)),
    ("gather", [TensorType(F32, (8, 100, 16)), TensorType(I32, (50,))], {"axis": 1}, (0,)),
    ("pad", [TensorType(F32, (4, 64, 28, 28))], {"pads": [0, 0, 1, 1, 0, 0, 1, 1]}, ()),
    ("pad", [TensorType(F32, (8, 128, 256))], {"pads": [0, 2, 0, 0, 3, 0], "value": -1.0}, ()),
    ("rmsnorm", [TensorType(F32, (512, 768)), TensorType(F32, (768,))], {}, (1,)),
]  # fmt: skip
# Bounds on |model - sim| / sim: the window, gather and pad kernels are priced
# instruction by instruction; a grouped convolution's GEMMs by the GEMM model.
TOLERANCE = {"conv2d": 0.2, "default": 0.16}


def fidelity(hw_name: str, op: str, types, attrs, params) -> tuple[int, int]:
    hw = load_hardware(hw_name)
    graph = _graph(op, types, attrs, params=params, consumer=True)
    compiled = compile_graph(graph, hw)
    result = simulate(
        compiled.program, hw, compiled.feeds(random_bindings(graph, 0)), check_races=False
    )
    spans = {k.name: k.cycles for k in result.report.kernels}
    node = next(i for i, n in graph if n.name == "out")
    sim = sum(spans[k.name] for k in compiled.kernels if k.node == node)
    n = graph.nodes[node]
    return op_cost(hw, op, types, n.type, n.attr_dict).cycles, sim


@pytest.mark.parametrize("hw_name", ["edge", "datacenter"])
@pytest.mark.parametrize(
    ("op", "types", "attrs", "params"),
    FIDELITY,
    ids=[f"{c[0]}-{k}" for k, c in enumerate(FIDELITY)],
)
def test_cost_model_predicts_the_simulated_cycles(hw_name, op, types, attrs, params):
    model, sim = fidelity(hw_name, op, types, attrs, params)
    error = (model - sim) / sim
    bound = (
        TOLERANCE["conv2d"]
        if op == "conv2d" and attrs["groups"] < types[0].shape[1]
        else TOLERANCE["default"]
    )
    assert abs(error) <= bound, f"model {model}, simulated {sim}: {error:+.1%}"


def _main_stores(compiled, name: str) -> int:
    return sum(1 for k, ins in _instrs(compiled) if k == name and isinstance(ins, Store))


@pytest.mark.parametrize(
    ("op", "x", "attrs"),
    [
        (
            "max_pool2d",
            (2, 16, 13, 13),
            {"kernel": [3, 3], "stride": [2, 2], "padding": [1, 1, 1, 1]},
        ),
        ("max_pool2d", (2, 16, 12, 12), {"kernel": [2, 2]}),
        ("avg_pool2d", (2, 40, 9, 9), {"kernel": [3, 3], "stride": [2, 2], "ceil_mode": True}),
        ("pad", (3, 5, 7), {"pads": [0, 1, 2, 1, 0, 3]}),
        ("pad", (4, 32, 28, 28), {"pads": [0, 0, 1, 1, 0, 0, 1, 1]}),
        ("pad", (8, 64, 96), {"pads": [0, 2, 0, 0, 3, 0]}),
    ],
)
@pytest.mark.parametrize("hw_name", ["edge", "datacenter"])
def test_the_plan_counts_the_tiles_the_backend_emits(op, x, attrs, hw_name):
    """The cost model's restatement of the streaming kernel's tiling (spatial_plan)
    gives the same number of tiles (one store each) as the backend's."""
    hw = load_hardware(hw_name)
    t = TensorType(F32, x)
    compiled = compile_graph(_graph(op, [t], attrs, consumer=True), hw)
    if op == "pad":
        widths = pad_widths("pad", t, attrs["pads"])
        streams = plan.pad_streams(t, widths, plan.pad_fills_first(hw, t, widths))
        planned = sum(plan.stream_loop(hw, s).steps for s in streams)
    else:
        bound = REGISTRY[op].bind_attrs(attrs)
        out = REGISTRY[op].type_of([t], bound)
        planned = window_kernels(hw, op, [t], out, bound).main_steps(hw)  # type: ignore[union-attr]
    assert _main_stores(compiled, f"{op}.out") == planned


# ------------------------------------------------------------------ fitting SRAM

TINY_SRAM = str(Path(__file__).resolve().parents[1] / "data" / "tiny_sram.toml")
# Outputs x taps one example may have on each machine: enough for a thousand channels
# of a small image, few enough instructions that an example simulates in a blink.
WORK = {"edge": 2**18, TINY_SRAM: 2**15}


@st.composite
def window_cases(draw, hw_name: str):
    """(op, input types, attributes) of a depthwise convolution (groups = C > 1) or a
    pooling over 1..1024 channels of a 1..9 square image, kernel 1..7, stride 1..2,
    padding 0..3 (pooling: at most half the kernel), batch 1..2; the channels bounded
    by WORK."""
    op = draw(st.sampled_from(["conv2d", "max_pool2d", "avg_pool2d"]))
    k, s, p = draw(st.integers(1, 7)), draw(st.integers(1, 2)), draw(st.integers(0, 3))
    if op != "conv2d":
        p = min(p, k // 2)
    side = draw(st.integers(max(1, k - 2 * p), 9))
    n = draw(st.integers(1, 2))
    out = (side + 2 * p - k) // s + 1
    low = 2 if op == "conv2d" else 1
    c = draw(st.integers(low, max(low, min(1024, WORK[hw_name] // (n * out * out * k * k)))))
    x = TensorType(F32, (n, c, side, side))
    if op == "conv2d":
        attrs = {"groups": c, "stride": [s, s], "padding": [p, p]}
        return op, [x, TensorType(F32, (c, 1, k, k))], attrs
    attrs = {"kernel": [k, k], "stride": [s, s], "padding": [p, p, p, p]}
    if op == "avg_pool2d":
        attrs["count_include_pad"] = draw(st.booleans())
    return op, [x], attrs


def planned_stores(hw, op: str, types, attrs) -> dict[str, int]:
    """Tiles (one store each) the plan counts in each kernel of a window op, by
    kernel-name suffix: the main kernel, the prep, the count map."""
    x = types[0]
    bound = REGISTRY[op].bind_attrs(attrs)
    counts = []
    if op.startswith("conv2d"):
        g, kind = plan.conv_window(x, types[1], bound), "dw"
        prep = plan.window_layout(g, types[1].shape[0] // x.shape[1]) == plan.NHWC
    else:
        g, kind = window2d(op, x, bound), "max" if op == "max_pool2d" else "avg"
        include_pad = bool(bound.get("count_include_pad"))
        if kind == "avg" and g.counts(include_pad).min() != g.counts(include_pad).max():
            counts = plan.count_streams(g, include_pad)
        prep = plan.window_layout(g) == plan.NHWC
    out = REGISTRY[op].type_of(types, bound)
    kernels = window_kernels(hw, op, types, out, bound)
    assert kernels is not None
    stores = {"": kernels.main_steps(hw)}
    prep = prep and not (kernels.block is not None and kernels.block.direct)
    if counts:
        stores[".count"] = sum(plan.stream_loop(hw, s).steps for s in counts)
    if prep:  # the padded NHWC image (unless the main kernel reads x itself)
        pads, side = (g.pads[0], g.pads[1]), (g.rows, g.cols)
        isz = x.dtype.itemsize
        stores[".prep"] = plan.image_prep_stores(hw, x.shape, isz, pads, side, 1, kind == "max")
    return stores


def check_window_kernel(hw_name: str, op: str, types, attrs, seed: int = 0) -> None:
    """Compiles; simulates like the reference; each kernel stores the tiles the plan
    counts; the cost model within the fidelity tolerance of the simulated cycles."""
    hw = load_hardware(hw_name)
    params = tuple(range(1, min(3, len(types)))) if op.startswith("conv2d") else ()
    graph = _graph(op, types, attrs, params=params, consumer=True)
    bindings = _bindings(graph, seed)
    got, report, compiled = run_backend(graph, hw_name, bindings, races=False)
    assert_matches(graph, got, reference(graph, bindings))
    node = next(i for i, n in graph if n.name == "out")
    names = [k.name for k in compiled.kernels if k.node == node]
    stores = {name.removeprefix(f"{op}.out"): _main_stores(compiled, name) for name in names}
    assert stores == planned_stores(hw, op, types, attrs)
    spans = {k.name: k.cycles for k in report.kernels}
    sim = sum(spans[name] for name in names)
    n = graph.nodes[node]
    model = op_cost(hw, op, types, n.type, n.attr_dict).cycles
    assert abs(model - sim) <= TOLERANCE["default"] * sim, f"model {model}, simulated {sim}"


@pytest.mark.parametrize("hw_name", ["edge", TINY_SRAM], ids=["edge", "tiny_sram"])
def test_window_kernels_fit_any_sram_and_cost_what_they_simulate(hw_name):
    """Many channels of a small image (EfficientNet-B0 at 32x32: 672 channels of 2x2
    under a 5x5 depthwise kernel) once overflowed SRAM in the prep kernel: its border
    fills ran whole padded rows of C elements through a zero tile of one row more than
    the tile budget counted."""

    @settings(max_examples=scaled(8), deadline=None)
    @given(case=window_cases(hw_name), seed=st.integers(0, 2**16))
    @example(
        case=(
            "conv2d",
            [TensorType(F32, (2, 672, 2, 2)), TensorType(F32, (672, 1, 5, 5))],
            {"groups": 672, "padding": [2, 2]},
        ),
        seed=0,
    )
    @example(
        case=(
            "conv2d",
            [TensorType(F32, (1, 64, 1, 1)), TensorType(F32, (64, 1, 1, 1))],
            {"groups": 64, "padding": [3, 3]},
        ),
        seed=0,
    )
    @example(
        case=(
            "max_pool2d",
            [TensorType(F32, (1, 672, 2, 2))],
            {"kernel": [7, 7], "padding": [3, 3, 3, 3]},
        ),
        seed=0,
    )
    @example(
        case=(
            "avg_pool2d",
            [TensorType(F32, (1, 1024, 1, 1))],
            {"kernel": [3, 3], "stride": [2, 2], "padding": [1, 1, 1, 1]},
        ),
        seed=0,
    )
    def check(case, seed) -> None:
        check_window_kernel(hw_name, *case, seed=seed)

    check()


@st.composite
def block_cases(draw):
    """(op, input types, attributes) the row-block kernel runs with an epilogue or a
    narrow type: a depthwise convolution with bias and relu (a channel row) or bias, a
    residual (an NCHW operand loaded transposed) and relu, f32 or bf16, channel
    multiplier 1..3; or a pooling with dilation, ceil mode, uneven padding. Kernel 1..5, stride 1..2, batch 1..2, 2..48
    channels of a 1..9 square image."""
    op = draw(
        st.sampled_from(["conv2d_bias_relu", "conv2d_bias_add_relu", "max_pool2d", "avg_pool2d"])
    )
    dtype = draw(st.sampled_from([F32, DType.BF16]))
    k, s, p = draw(st.integers(1, 5)), draw(st.integers(1, 2)), draw(st.integers(0, 2))
    n, c = draw(st.integers(1, 2)), draw(st.integers(2, 48))
    if op.startswith("conv2d"):
        side = draw(st.integers(max(1, k - 2 * p), 9))
        out, m = (side + 2 * p - k) // s + 1, draw(st.sampled_from([1, 1, 2, 3]))
        x = TensorType(dtype, (n, c, side, side))
        types = [x, TensorType(dtype, (c * m, 1, k, k)), TensorType(dtype, (c * m, 1, 1))]
        if op == "conv2d_bias_add_relu":
            types.append(TensorType(dtype, (n, c * m, out, out)))
        return op, types, {"groups": c, "stride": [s, s], "padding": [p, p]}
    d = draw(st.integers(1, 2))
    ext = (k - 1) * d + 1
    pads = [min(draw(st.integers(0, 2)), k // 2) for _ in range(4)]
    side = draw(st.integers(max(1, ext - pads[0] - pads[2], ext - pads[1] - pads[3]), 9))
    attrs = {"kernel": [k, k], "stride": [s, s], "padding": pads, "dilation": [d, d]}
    attrs["ceil_mode"] = draw(st.booleans())
    if op == "avg_pool2d":
        attrs["count_include_pad"] = draw(st.booleans())
    return op, [TensorType(dtype, (n, c, side, side))], attrs


def test_row_block_kernels_simulate_like_the_reference_and_cost_what_they_simulate():
    """The row-block kernel's epilogues (bias, residual, relu; an average's division),
    bf16 sums kept in f32 until the last tap or the epilogue's root, dilated and
    ceil-mode pooling windows: simulated like the reference, the tiles the plan counts,
    the price within the fidelity tolerance."""

    @settings(max_examples=scaled(6), deadline=None)
    @given(case=block_cases(), seed=st.integers(0, 2**16))
    def check(case, seed) -> None:
        check_window_kernel("edge", *case, seed=seed)

    check()


def test_the_row_block_kernel_reads_the_image_about_once():
    """A MobileNetV2 depthwise layer (3x3, 56x56x144, bias and ReLU6) is one kernel,
    no prep: it loads x's rows once plus the halo rows of its blocks (at most twice
    here), not once per tap; the price matches the simulated cycles."""
    hw = load_hardware("edge")
    x = TensorType(F32, (1, 144, 56, 56))
    types = [x, TensorType(F32, (144, 1, 3, 3)), TensorType(F32, (144, 1, 1))]
    attrs = {"groups": 144, "padding": [1, 1], "min": 0.0, "max": 6.0}
    graph = _graph("conv2d_bias_clip", types, attrs, params=(1, 2), consumer=True)
    compiled = compile_graph(graph, hw)
    ours = [k.name for k in compiled.kernels if k.name.startswith("conv2d_bias_clip")]
    assert ours == ["conv2d_bias_clip.out"]
    loaded = sum(
        ins.src.rows * ins.src.cols * 4
        for name, ins in _instrs(compiled)
        if name == "conv2d_bias_clip.out" and isinstance(ins, Load)
    )
    image = 56 * 56 * 144 * 4
    assert image <= loaded <= 2 * image
    result = simulate(
        compiled.program, hw, compiled.feeds(random_bindings(graph, 0)), check_races=False
    )
    sim = next(k.cycles for k in result.report.kernels if k.name == "conv2d_bias_clip.out")
    n = graph.nodes[next(i for i, n in graph if n.name == "out")]
    kernels = window_kernels(hw, n.op, types, n.type, n.attr_dict)
    main = kernels.cost(hw).cycles - sum(k.cycles for k in kernels.before)  # type: ignore[union-attr]
    assert abs(main - sim) <= 0.02 * sim, f"model {main}, simulated {sim}"


@pytest.mark.parametrize("hw_name", ["edge", "datacenter"])
def test_a_window_kernel_whose_input_is_another_ones_nhwc_output_preps_it(hw_name):
    """A depthwise convolution reading a max pool's output (an NHWC buffer seen as
    NCHW: its channel planes are not row-major) cannot load x's rows per channel:
    its row-block kernel reads the padded image a prep kernel writes, and a second
    depthwise convolution after it as well; all simulate like the reference."""
    x = TensorType(F32, (2, 24, 9, 9))
    w = TensorType(F32, (24, 1, 3, 3))
    b = GraphBuilder("chain")
    xa, wa = b.leaf("input", "x", x), b.leaf("param", "w", w)
    w2 = b.leaf("param", "w2", TensorType(F32, (24, 1, 5, 5)))
    pool = b.add("max_pool2d", [xa], {"kernel": [3, 3], "stride": [2, 2], "padding": [1] * 4})
    dw = b.add("conv2d", [pool, wa], {"groups": 24, "padding": [1, 1]}, "dw")
    dw2 = b.add("conv2d", [dw, w2], {"groups": 24, "padding": [2, 2], "stride": [2, 2]}, "dw2")
    b.output("y", b.add("relu", [dw2], {}, "r"))
    graph = b.graph
    bindings = _bindings(graph, 3)
    got, _, compiled = run_backend(graph, hw_name, bindings, races=True)
    assert_matches(graph, got, reference(graph, bindings))
    names = {k.name for k in compiled.kernels}
    assert {"conv2d.dw.prep", "conv2d.dw", "conv2d.dw2.prep", "conv2d.dw2"} <= names
    assert not any(n.startswith("max_pool2d") and n.endswith(".prep") for n in names)
    for name in ("conv2d.dw", "conv2d.dw2"):  # a block and the weights a step, not 2 x 9 taps
        loads = sum(1 for k, ins in _instrs(compiled) if k == name and isinstance(ins, Load))
        assert loads == 2 * _main_stores(compiled, name)


NARROW = [
    ("conv2d", (1, 672, 2, 2), DType.BF16, 5, 2),
    ("max_pool2d", (1, 1024, 1, 1), DType.I8, 7, 3),
    ("max_pool2d", (1, 96, 7, 7), DType.BF16, 7, 3),
    ("avg_pool2d", (1, 672, 2, 2), DType.BF16, 5, 2),
]


@pytest.mark.parametrize(
    ("op", "x", "dtype", "k", "pad"), NARROW, ids=[f"{c[0]}-{c[2].value}" for c in NARROW]
)
def test_narrow_window_kernels_fit_a_small_sram(op, x, dtype, k, pad):
    """bf16 and i8 window kernels keep their f32/i32 intermediates in tiles of their
    own, one per op but the root: fitted like the rest (they overflowed 16 KiB by the
    64-byte alignment of a few hundred tiles)."""
    xt = TensorType(dtype, x)
    if op == "conv2d":
        types = [xt, TensorType(dtype, (x[1], 1, k, k))]
        attrs = {"groups": x[1], "padding": [pad, pad]}
    else:
        types, attrs = [xt], {"kernel": [k, k], "padding": [pad] * 4}
    check_window_kernel(TINY_SRAM, op, types, attrs)


GROUPED = [
    ("edge", (1, 672, 2, 2), 2, 1, 3),
    ("edge", (1, 672, 4, 4), 42, 3, 3),
    (TINY_SRAM, (1, 64, 4, 4), 4, 1, 3),
    (TINY_SRAM, (2, 256, 4, 4), 16, 3, 1),
]


@pytest.mark.parametrize(
    ("hw_name", "x", "groups", "k", "pad"),
    GROUPED,
    ids=[f"{Path(h).stem}-{x[1]}ch-g{g}" for h, x, g, _, _ in GROUPED],
)
def test_grouped_convolutions_prepare_many_channels_within_sram(hw_name, x, groups, k, pad):
    """The group-major image of a grouped convolution (the same prep as the window
    kernels', C/G channels a pixel) fits SRAM, stores the tiles the plan counts and
    costs what it simulates; the whole convolution simulates like the reference."""
    hw = load_hardware(hw_name)
    c = x[1]
    xt, wt = TensorType(F32, x), TensorType(F32, (c, c // groups, k, k))
    attrs = {"groups": groups, "padding": [pad, pad]}
    graph = _graph("conv2d", [xt, wt], attrs, params=(1,), consumer=True)
    bindings = _bindings(graph, 0)
    got, report, compiled = run_backend(graph, hw_name, bindings, races=False)
    assert_matches(graph, got, reference(graph, bindings))
    side = (x[2] + 2 * pad, x[3] + 2 * pad)
    stores = plan.image_prep_stores(hw, x, 4, (pad, pad), side, groups)
    assert _main_stores(compiled, "conv2d.out.prep") == stores
    sim = next(k.cycles for k in report.kernels if k.name == "conv2d.out.prep")
    model = plan.grouped_prep_cost(hw, xt, REGISTRY["conv2d"].bind_attrs(attrs)).cycles
    assert abs(model - sim) <= TOLERANCE["default"] * sim, f"model {model}, simulated {sim}"


def test_a_window_kernel_no_tile_of_which_fits_is_priced_out():
    """bf16 7x7 depthwise on a 16 KiB SRAM: over a 1500-column image not even one
    channel of the row-block kernel's seven rows fits, and its streaming form's one
    element per tile of 49 tap slots is still too much, so the price carries the
    unrunnable penalty and extraction takes any other form. Over a 14x14 image (also
    with a channel multiplier) the row-block kernel's rows fit."""
    from eqsat.costs import UNRUNNABLE_CYCLES

    tiny, edge = load_hardware(TINY_SRAM), load_hardware("edge")
    attrs = {"stride": [1, 1], "padding": [3, 3], "groups": 8}
    wide, w = TensorType(DType.BF16, (1, 8, 4, 1500)), TensorType(DType.BF16, (8, 1, 7, 7))
    small = op_cost(tiny, "conv2d", [wide, w], wide, attrs)
    assert not small.feasible and small.cycles >= UNRUNNABLE_CYCLES
    assert op_cost(edge, "conv2d", [wide, w], wide, attrs).cycles < UNRUNNABLE_CYCLES
    x = TensorType(DType.BF16, (1, 8, 14, 14))
    for m in (1, 2):
        w = TensorType(DType.BF16, (8 * m, 1, 7, 7))
        out = TensorType(DType.BF16, (1, 8 * m, 14, 14))
        block = op_cost(tiny, "conv2d", [x, w], out, attrs)
        assert block.feasible and block.cycles < UNRUNNABLE_CYCLES
