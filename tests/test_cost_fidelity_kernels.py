"""The cost model prices the kernels the backend emits: for each cause of disagreement
found by bench/cost_fidelity.py and fixed, a small kernel whose estimate equals its
simulated cycles (or stays within a stated bound, with the reason)."""

from __future__ import annotations

from collections import Counter
from dataclasses import replace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from backend import compile_graph
from eqsat.body_ops import body_ops
from eqsat.fidelity import ProgramRow, measure_program
from eqsat.interpreter import random_bindings
from eqsat.ir.graph import Graph, GraphBuilder
from eqsat.ir.types import DType, TensorType
from eqsat.loading import load_model
from eqsat.ops import REGISTRY, OpKind
from eqsat.verify.opcases import accepts_first
from frontend.checker import check_model
from frontend.parser import parse_model
from hwsim import load_hardware, timing
from hwsim.isa import Load, Store
from hwsim.timing import vector_op
from tests.strategies import op_cases

PRESETS = ("edge", "datacenter")
F32 = DType.F32


def _graph(op: str, leaves: list[tuple[str, DType, tuple[int, ...]]], **attrs) -> Graph:
    """y = op(leaves...), each leaf (kind, dtype, shape): input, param."""
    b = GraphBuilder("one_kernel")
    nodes = [b.leaf(kind, f"v{i}", TensorType(dt, s)) for i, (kind, dt, s) in enumerate(leaves)]
    b.output("y", b.add(op, tuple(nodes), attrs))
    return b.graph


def _measure(graph: Graph, preset: str, params=None) -> ProgramRow:
    bindings = random_bindings(graph, 0)
    return measure_program(graph, load_hardware(preset), bindings, params)


def _model(tmp_path, text: str, preset: str) -> ProgramRow:
    path = tmp_path / "m.model"
    path.write_text(text)
    loaded = load_model(path)
    return measure_program(loaded.graph, load_hardware(preset), loaded.bindings(0))


CONCAT = """
model cat {
  input past: f32[1, 4, 24, 32]
  input new: f32[1, 4, 1, 32]
  input mask: f32[1, 1, 1, 24]
  const own: f32[1, 1, 1, 1] = 0.0
  y = concat(past, new, axis=2)
  z = concat(mask, own, axis=3)
  output y
  output z
}
"""


@pytest.mark.parametrize("preset", PRESETS)
def test_concat_is_a_copy_per_piece(tmp_path, preset):
    # one streaming pass per input into its slice, fenced (backend lower_concat); a
    # one-element constant piece is a fill. As one layout kernel it was 26-32% low.
    row = _model(tmp_path, CONCAT, preset)
    assert len(row.kernels) == 2
    for kernel in row.kernels:
        assert kernel.predicted == kernel.simulated, kernel.label


ELEMENTWISE = """
model ew {
  input x: f32[24, 200]
  input y: f32[24, 200]
  const c: f32[] = 0.35
  a = silu(x)
  b = gelu(x)
  d = erf(x)
  e = clip(x, min=0.0, max=6.0)
  f = hard_swish(x)
  g = mul(x, c)
  h = div(x, c)
  i = logical_and(less(x, y), less(y, x))
  output a
  output b
  output d
  output e
  output f
  output g
  output h
  output i
}
"""


@pytest.mark.parametrize("preset", PRESETS)
def test_elementwise_kernels_are_priced_by_their_instructions(tmp_path, preset):
    # the streaming kernel's tiles and instructions (spatial_plan.stream_plan), not
    # FLOPs through the generic chunk formula: that was up to 20% off on edge for
    # unary math, fused silu and a scalar constant folded into an immediate
    row = _model(tmp_path, ELEMENTWISE, preset)
    exact = {"silu", "gelu", "erf", "clip", "hard_swish", "mul", "div", "logical_and"}
    checked = [k for k in row.kernels if k.op in exact]
    assert {k.op for k in checked} == exact
    for kernel in checked:
        assert kernel.predicted == kernel.simulated, kernel.label


def test_per_channel_requantize_counts_one_instruction_per_channel():
    # the epilogue requantizes each output column with its own multiplier: one
    # instruction per channel of every tile (backend/tileexpr.py _requant_channels).
    # Within 5%, not exact: the epilogue's other instructions are counted from its
    # lane work per output (gemm_queues.epilogue), not instruction by instruction.
    # Without the per-channel instructions the estimate was 13% low.
    rng = np.random.default_rng(0)
    m, k, n = 8, 256, 128
    graph = _graph(
        "qmatmul_bias_requant",
        [
            ("input", DType.I8, (m, k)),
            ("param", DType.I8, (k, n)),
            ("param", DType.I32, (1, n)),
            ("param", DType.F32, (1, n)),
        ],
        a_zero=-128,
        scale=0.0125,
        zero_point=-128,
        relu=True,
    )
    params = {
        "v1": rng.integers(-127, 128, (k, n)).astype(np.int8),
        "v2": rng.integers(-500, 500, (1, n)).astype(np.int32),
        "v3": rng.uniform(0.5e-4, 2e-4, (1, n)).astype(np.float32),
    }
    bindings = {"v0": rng.integers(-128, 128, (m, k)).astype(np.int8)}
    row = measure_program(graph, load_hardware("edge"), bindings, params)
    (kernel,) = row.kernels
    assert abs(kernel.error) < 0.05


# ---------------------------------------------- fused kernels with integer edges


# The registry's fused elementwise ops with an i8 operand or result and no contraction:
# ONNX Runtime's QLinear* and QDQ patterns, eqsat's own quantized elementwise kernels.
def _elementwise_body(body) -> bool:
    if isinstance(body, str):
        return True
    kind = REGISTRY[body.op].kind
    return kind in (OpKind.ELEMENTWISE, OpKind.QUANT) and all(map(_elementwise_body, body.args))


INT_EDGE_FUSED = sorted(
    n
    for n, op in REGISTRY.items()
    if op.kind is OpKind.FUSED
    and op.composition is not None
    and _elementwise_body(op.composition)
    and accepts_first(n, TensorType(DType.I8, (4, 8)))
)


def _one_kernel_program(case) -> Graph:
    """The case's op with its one-element operands as constants (immediates in the kernel,
    as an imported model's scales and zero points are) and its tensors as inputs."""
    b = GraphBuilder("one_kernel")
    rng = np.random.default_rng(0)
    args = []
    for i, t in enumerate(case.in_types):
        if t.numel == 1:
            value = float(rng.uniform(0.5, 2.0)) if t.dtype.is_float else int(rng.integers(-9, 9))
            attrs = {"value": value, "shape": t.shape, "dtype": t.dtype.value}
            args.append(b.add("const", (), attrs))
        else:
            args.append(b.leaf("input", f"v{i}", t))
    b.output("y", b.add(case.op, tuple(args), case.attrs))
    return b.graph


@pytest.mark.parametrize("preset", PRESETS)
@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_fused_integer_kernels_are_priced_instruction_by_instruction(preset, data):
    # eqsat/body_ops.py builds the backend's tile expression of the body: the same
    # vector instructions per tile, so the estimate is the simulated cycles. Priced by
    # their FLOPs, ORT's QDQ erf-GELU was 44% low (52 lane passes an element, not ~30).
    op = data.draw(st.sampled_from(INT_EDGE_FUSED))
    first = TensorType(DType.I8, data.draw(st.sampled_from([(8, 40), (3, 16, 50), (64, 300)])))
    case = data.draw(op_cases(op, first))
    # the other tensors at the full shape: a broadcast operand's own subexpression runs
    # on its row or column alone (backend/tileexpr.py), which the Stream prices as full
    # tiles (an overestimate, left as is: imported models broadcast scalars, immediates)
    types = tuple(t if t.numel == 1 else TensorType(t.dtype, first.shape) for t in case.in_types)
    graph = _one_kernel_program(replace(case, in_types=types))
    y = next(n for n in graph.nodes if n.op == op)
    body = body_ops(op, [graph.nodes[j].type for j in y.inputs], y.type, y.attr_dict)
    if body is None:  # a body the module does not model (a select, a compile-time value)
        return
    hw = load_hardware(preset)
    compiled = compile_graph(graph, hw)
    emitted = Counter(
        vector_op(ins)
        for ins in compiled.program.instrs
        if timing.instruction_cost(hw, ins)[0] == "vector"
    )
    tiles = sum(isinstance(ins, Store) for ins in compiled.program.instrs)
    assert emitted == Counter({k: v * tiles for k, v in Counter(body.ops).items()})
    row = measure_program(graph, hw, random_bindings(graph, 0))
    assert row.predicted == pytest.approx(row.simulated, rel=0.02), (op, case)


# A product of one weight matrix over batch axes ([..., M, K] @ [K, N]: ConvNeXt's
# channels-last MLP on [1, H, W, C], a transformer at batch > 1): the batch's rows are
# one M, so the weights are read once. It was read once per batch index by the backend
# while priced once (ConvNeXt-tiny's last MLP on edge: 1.20 M estimated, 3.57 M
# simulated).
@pytest.mark.parametrize(
    ("op", "extra"),
    [
        ("matmul_bias_gelu", [("param", (64,))]),
        ("matmul_bias_gelu_matmul_bias", [("param", (64,)), ("param", (64, 32)), ("param", (32,))]),
        ("matmul_swiglu", [("param", (32, 64))]),
    ],
)
@pytest.mark.parametrize("batch", [(1, 3, 3), (2, 5), (3,)])
def test_shared_weights_over_batch_axes_are_read_once(op, extra, batch, preset="edge") -> None:
    leaves = [("input", F32, (*batch, 32)), ("param", F32, (32, 64))]
    leaves += [(kind, F32, shape) for kind, shape in extra]
    attrs = {"approximate": "none"} if "gelu" in op else {}
    graph = _graph(op, leaves, **attrs)
    row = _measure(graph, preset)
    flat = _measure(
        _graph(op, [("input", F32, (int(np.prod(batch)), 32)), *leaves[1:]], **attrs), preset
    )
    # the same kernel as the 2-D product's, priced the same, within issue 11's 10%
    assert (row.simulated, row.predicted) == (flat.simulated, flat.predicted)
    assert abs(row.predicted - row.simulated) <= 0.1 * row.simulated


# A reshape of a strided view is a copy kernel in the backend (backend/views.py
# View.reshape): grouped-query attention's K/V repeat (a broadcast merged into the head
# axis) and ShuffleNet's channel shuffle (a transpose of a reshaped concat). They were
# priced free: BLOOM's and Mistral's estimates were 10-13% low on datacenter,
# ShuffleNet's 50%.
GQA_REPEAT = """
model gqa {
  input k: f32[1, 2, 1, 32, 64]
  input q: f32[1, 4, 32, 64]
  e = broadcast(k, shape=[1, 2, 2, 32, 64])
  r = reshape(e, shape=[1, 4, 32, 64])
  y = add(r, q)
  output y
}
"""
SHUFFLE = """
model shuffle {
  input a: f32[1, 24, 14, 14]
  input b: f32[1, 24, 14, 14]
  c = concat(a, b, axis=1)
  g = reshape(c, shape=[1, 2, 24, 14, 14])
  t = transpose(g, perm=[0, 2, 1, 3, 4])
  y = reshape(t, shape=[1, 48, 14, 14])
  z = relu(y)
  output z
}
"""


# and not where the backend needs none: BERT's attention output, a product stored
# transposed through a reshape to its own shape (backend/layouts.py)
HEADS_BACK = """
model heads {
  input p: f32[1, 4, 32, 32]
  input v: f32[1, 4, 32, 16]
  m = matmul(p, v)
  r = reshape(m, shape=[1, 4, 32, 16])
  t = transpose(r, perm=[0, 2, 1, 3])
  y = reshape(t, shape=[1, 32, 64])
  z = relu(y)
  output z
}
"""


@pytest.mark.parametrize("preset", PRESETS)
@pytest.mark.parametrize(
    "text", [GQA_REPEAT, SHUFFLE, HEADS_BACK], ids=["gqa-repeat", "shuffle", "heads-back"]
)
def test_a_reshape_of_a_view_is_priced_as_the_backend_runs_it(tmp_path, text, preset) -> None:
    row = _model(tmp_path, text, preset)  # the copy is priced with the program
    assert abs(row.predicted - row.simulated) <= 0.05 * row.simulated


# A window kernel stores its result channels-last; a second one reading it cannot read
# x's channel planes directly and preps the padded image by a strided walk (GoogLeNet's
# stacked max pools: 40-75% low when priced as a direct read), and a pointwise
# convolution run as weights @ x turns x's tiles on chip (GoogLeNet's pool branches,
# MobileNetV2's projections: 10-14% low). ConvNeXt's block reads
# the NCHW view of a layernorm's [N, H, W, C] rows the same way, and its layernorm
# copies the transposed view of a convolution's NCHW result first (priced on the
# transpose before, 46% low on the norm, and the view the depthwise convolution reads
# through priced as a copy that never ran).
STACKED_POOLS = """
model pools {
  input x: f32[1, 48, 12, 12]
  param w: f32[16, 48, 1, 1]
  a = max_pool2d(x, kernel=[3, 3], stride=[2, 2], padding=[1, 1, 1, 1])
  b = max_pool2d(a, kernel=[3, 3], stride=[1, 1], padding=[1, 1, 1, 1])
  c = avg_pool2d(b, kernel=[3, 3], stride=[1, 1], padding=[1, 1, 1, 1])
  d = relu(conv2d(b, w))
  output c
  output d
}
"""

CONVNEXT_STEM = """
model stem {
  input x: f32[1, 3, 32, 32]
  param w: f32[32, 3, 4, 4]
  param gamma: f32[32]
  param beta: f32[32]
  param dw: f32[32, 1, 7, 7]
  param db: f32[32, 1, 1]
  s = conv2d(x, w, stride=[4, 4])
  n = layernorm(transpose(s, perm=[0, 2, 3, 1]), gamma, beta, eps=0.000001)
  t = transpose(n, perm=[0, 3, 1, 2])
  d = add(conv2d(t, dw, padding=[3, 3], groups=32), db)
  y = add(d, t)
  output y
}
"""


@pytest.mark.parametrize("preset", PRESETS)
@pytest.mark.parametrize("text", [STACKED_POOLS, CONVNEXT_STEM], ids=["pools", "convnext"])
def test_channels_last_operands_are_priced_as_the_backend_reads_them(tmp_path, text, preset):
    row = _model(tmp_path, text, preset)
    for kernel in row.kernels:
        assert abs(kernel.error) <= 0.02, (kernel.label, kernel.predicted, kernel.simulated)
    assert abs(row.predicted - row.simulated) <= 0.02 * row.simulated


# A 3x3 convolution after a max pool (ResNet's stem): every form it can take reads the
# pool's channels-last result: the implicit GEMM's prep and Winograd's input transform
# copy it into the padded image by a strided walk, the one-kernel Winograd convolution
# copies it to NCHW first (ResNet-18's first 3x3 convolution on datacenter: 28% under).
POOL_THEN_CONV = """
model stem {
  input x: f32[1, 32, 24, 24]
  param w: f32[32, 32, 3, 3]
  param b: f32[32, 1, 1]
  a = max_pool2d(x, kernel=[3, 3], stride=[2, 2], padding=[1, 1, 1, 1])
  y = relu(add(conv2d(a, w, padding=[1, 1]), b))
  output y
}
"""


@pytest.mark.parametrize("preset", PRESETS)
def test_a_convolution_after_a_pool_in_every_form(tmp_path, preset):
    from eqsat.pipeline import optimize
    from tests.optimize_helpers import default_rules

    path = tmp_path / "m.model"
    path.write_text(POOL_THEN_CONV)
    loaded = load_model(path)
    hw = load_hardware(preset)
    graphs = [loaded.graph, optimize(loaded.graph, default_rules(), hw).graph]
    for graph in graphs:  # as written (implicit GEMM) and optimized (Winograd's forms)
        row = measure_program(graph, hw, loaded.bindings(0))
        for kernel in row.kernels:
            assert abs(kernel.error) <= 0.01, (kernel.label, kernel.predicted, kernel.simulated)


# Rotary embedding on a head-split view: the halves are slices of a transposed view,
# read strided by the neg and copied strided by the concat (LLaMA on datacenter: the
# neg 50% and the concat 36% under when priced as row-major reads).
ROTARY = """
model rotary {
  input q: f32[1, 32, 512]
  input cos: f32[1, 1, 32, 64]
  t = transpose(reshape(q, shape=[1, 32, 8, 64]), perm=[0, 2, 1, 3])
  a = slice(t, starts=[0], ends=[32], axes=[3])
  b = slice(t, starts=[32], ends=[64], axes=[3])
  r = concat(neg(b), a, axis=3)
  y = add(mul(r, cos), mul(t, cos))
  output y
}
"""


@pytest.mark.parametrize("preset", PRESETS)
def test_slices_of_views_are_read_with_their_strides(tmp_path, preset):
    row = _model(tmp_path, ROTARY, preset)
    for kernel in row.kernels:
        if kernel.op in ("neg", "concat"):
            assert kernel.predicted == kernel.simulated, kernel.label
        assert abs(kernel.error) <= 0.05, (kernel.label, kernel.predicted, kernel.simulated)


# Swin's attention as exported: the q of each window is a slice of the transposed qkv
# projection, reshaped (a view: the strides allow it) and scaled by an elementwise
# kernel (as written on datacenter: 52-71% under when priced as a row-major read).
WINDOWS = """
model windows {
  input qkv: f32[4, 16, 144]
  const c: f32[] = 0.17
  t = transpose(reshape(qkv, shape=[4, 16, 3, 3, 16]), perm=[2, 0, 3, 1, 4])
  q = reshape(slice(t, starts=[0], ends=[1], axes=[0]), shape=[4, 3, 16, 16])
  y = mul(q, c)
  output y
}
"""


@pytest.mark.parametrize("preset", PRESETS)
def test_reshapes_of_views_are_read_with_their_strides(tmp_path, preset):
    row = _model(tmp_path, WINDOWS, preset)
    for kernel in row.kernels:
        assert abs(kernel.error) <= 0.01, (kernel.label, kernel.predicted, kernel.simulated)


# A fused elementwise kernel with a scalar constant (an instruction immediate) and an
# operand broadcast over the outer rows (Swin-T's scores scaled and their relative
# position bias added: on edge its tiles are one row, the bias loaded with each; priced
# by the closed form, as if the bias were read once, it was 27% under).
SCALED_BIAS = """
model scaled {
  input x: f32[9, 3, 49, 49]
  param b: f32[1, 3, 49, 49]
  const c: f32[] = 0.17
  y = mul_add(x, c, b)
  output y
}
"""


@pytest.mark.parametrize("preset", PRESETS)
def test_fused_kernels_with_immediates_are_streamed(tmp_path, preset):
    row = _model(tmp_path, SCALED_BIAS, preset)
    (kernel,) = row.kernels
    assert kernel.predicted == kernel.simulated, (kernel.predicted, kernel.simulated)


# Swin's unpadded window reverse as a residual: the 4 x 4 map's rows are runs of 4
# pixels 7 apart in the 7 x 7 window buffer, a view no [rows, channels] reshape
# expresses. The GEMM still folds its batch rows into one product (its weights loaded
# once, not once per image row), the residual loaded run by run (on datacenter it ran
# as four products of 4 rows: 64% under).
WINDOW_RESIDUAL = """
model window_residual {
  input x: f32[1, 4, 4, 256]
  param w: f32[256, 128]
  param b: f32[128]
  input win: f32[1, 7, 7, 128]
  r = slice(win, starts=[0, 0], ends=[4, 4], axes=[1, 2])
  y = matmul_bias_add(x, w, b, r)
  output y
}
"""


@pytest.mark.parametrize("preset", PRESETS)
def test_a_strided_residual_keeps_the_gemm_folded(tmp_path, preset):
    row = _model(tmp_path, WINDOW_RESIDUAL, preset)
    (kernel,) = row.kernels
    assert kernel.predicted == kernel.simulated
    path = tmp_path / "w.model"
    path.write_text(WINDOW_RESIDUAL)
    compiled = compile_graph(load_model(path).graph, load_hardware(preset))
    loads = [i for i in compiled.program.instrs if isinstance(i, Load)]
    weights = sum(i.src.rows * i.src.cols for i in loads if i.src.buffer == "w")
    assert weights == 256 * 128  # one product: the weights read once
    window = [i.src for i in loads if i.src.buffer == "win"]
    assert all(r.rows <= 4 for r in window)  # a run: one image row of the window
    assert sum(r.rows * r.cols for r in window) == 16 * 128


# ORT's QLinearMul on BERT's q as imported: an int8 elementwise kernel reading the
# heads' transposed view of the projection (on datacenter priced as a row-major read,
# 55% under: the integer-edged kernels ignored their operands' strides).
INT8_HEADS = """
model qmul {
  input x: i8[1, 16, 768]
  input r: f32[]
  t = transpose(reshape(x, shape=[1, 16, 12, 64]), perm=[0, 2, 1, 3])
  y = dequantize_mul_quantize(t, r, x_scale=0.05, x_zero=3, scale=0.04, zero_point=-2)
  output y
}
"""


@pytest.mark.parametrize("preset", PRESETS)
def test_integer_kernels_read_views_with_their_strides(tmp_path, preset):
    (kernel,) = _model(tmp_path, INT8_HEADS, preset).kernels
    assert abs(kernel.error) <= 0.01, (kernel.predicted, kernel.simulated)


# A graph output gets its own buffer: the backend copies an input, a param, a slice,
# a transposed view or a buffer another output took (backend/compiler.py outputs); the
# program's estimate had no such kernels (an output transpose of an input priced 0).
OUTPUT_FORMS = {
    "input": "x",
    "param": "w",
    "slice": "slice(a, starts=[1], ends=[3], axes=[0])",
    "transpose of an input": "transpose(x, perm=[1, 0, 2])",
    "reversed input": "transpose(x, perm=[])",
    "reshape of a result": "reshape(a, shape=[32, 16])",
    "a transposed result": "transpose(a, perm=[0, 2, 1])",
    "the result": "a",
}


@settings(max_examples=16, deadline=None)
@given(
    forms=st.lists(st.sampled_from(sorted(OUTPUT_FORMS)), min_size=1, max_size=3, unique=True),
    preset=st.sampled_from(PRESETS),
)
def test_output_copies_are_priced(forms, preset):
    body = []
    for k, form in enumerate(forms):
        expr = OUTPUT_FORMS[form]
        if expr in ("x", "w", "a"):
            body.append(f"output {expr}")
        else:
            body += [f"y{k} = {expr}", f"output y{k}"]
    head = ["model outs {", "input x: f32[4, 8, 16]", "param w: f32[4, 8, 16]", "a = relu(x)"]
    text = "\n  ".join([*head, *body])
    graph = check_model(parse_model(text + "\n}\n"))
    row = measure_program(graph, load_hardware(preset), random_bindings(graph, 0))
    assert row.predicted == pytest.approx(row.simulated, rel=0.05), (forms, row)


# Segformer's Mix-FFN and efficient attention: tokens [N, HW, C] turned into an NCHW
# image by a reshape of their transpose, read by a depthwise convolution and by a
# strided "sequence reduction" convolution. The view is channels-last as stored; the
# convolutions' preps walk it (it was priced as a row-major image, 42% under, and the
# transpose as a kernel of its own).
MIX_FFN = """
model mixffn {
  input t: f32[1, 256, 64]
  param w0: f32[64, 128]
  param w: f32[128, 1, 3, 3]
  param b: f32[128]
  param wr: f32[64, 64, 2, 2]
  a = matmul(t, w0)
  v = reshape(transpose(a, perm=[0, 2, 1]), shape=[1, 128, 16, 16])
  c = add(conv2d(v, w, stride=[1, 1], padding=[1, 1], groups=128), reshape(b, shape=[128, 1, 1]))
  y = transpose(reshape(c, shape=[1, 128, 256]), perm=[0, 2, 1])
  s = reshape(transpose(t, perm=[0, 2, 1]), shape=[1, 64, 16, 16])
  r = conv2d(relu(s), wr, stride=[2, 2], padding=[0, 0])
  output y
  output r
}
"""


@pytest.mark.parametrize("preset", PRESETS)
def test_an_nchw_view_of_tokens_is_read_channels_last(tmp_path, preset):
    row = _model(tmp_path, MIX_FFN, preset)
    convs = [k for k in row.kernels if k.op == "conv2d"]
    assert len(convs) == 2 and all(abs(k.error) <= 0.03 for k in convs), convs
    assert abs(row.error) <= 0.03, row


# A nearest upsample by two as the ONNX import writes it (frontend/onnx/convert/
# resize.py): the innermost axis repeated, then the rows. The copy of the row repeat
# had tiles of two rows (the broadcast axis between rows and columns was taken as the
# row axis: 1,053,806 cycles on datacenter for a 64 x 32 x 32 map); the first reads a
# max pool's channels-last result, priced as if row-major (4.7x under).
UPSAMPLE = """
model up {
  input x: f32[1, 64, 32, 32]
  p = max_pool2d(x, kernel=[3, 3], stride=[1, 1], padding=[1, 1, 1, 1])
  w = reshape(broadcast(reshape(p, shape=[1, 64, 32, 32, 1]), shape=[1, 64, 32, 32, 2]),
              shape=[1, 64, 32, 64])
  h = reshape(broadcast(reshape(w, shape=[1, 64, 32, 1, 64]), shape=[1, 64, 32, 2, 64]),
              shape=[1, 64, 64, 64])
  y = relu(h)
  output y
}
"""


@pytest.mark.parametrize("preset", PRESETS)
def test_an_upsample_copies_whole_rows(tmp_path, preset):
    row = _model(tmp_path, UPSAMPLE, preset)
    assert abs(row.error) <= 0.01, row
    path = tmp_path / "up.model"
    path.write_text(UPSAMPLE)
    compiled = compile_graph(load_model(path).graph, load_hardware(preset))
    stores = [i for i in compiled.program.instrs if isinstance(i, Store)]
    copied = [s for s in stores if s.dst.cols == 64 and s.dst.rows > 2]
    assert copied, "the row repeat stores tiles of whole rows, many at a time"
