"""cumsum through the backend: simulated == reference on both presets (rows that fit
one tile and rows carried across many, exclusive and reverse, every dtype, axes that
are not the last, inputs that are not row-major), both tile programs (walk and
Hillis-Steele tree) in both layouts, no instruction reading what it writes, the plan
counting exactly the instructions the backend emits, and the cost model against the
simulated cycles."""

from __future__ import annotations

import itertools
from collections import Counter

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import backend.scan
from backend import compile_graph
from eqsat.costs import op_cost
from eqsat.interpreter import random_bindings
from eqsat.ir.graph import GraphBuilder
from eqsat.ir.types import DType, TensorType
from eqsat.scan_plan import (
    COLS,
    LANE_OP,
    ROWS,
    TREE,
    WALK,
    ScanPlan,
    op_counts,
    scan_loop,
    scan_plan,
    scan_shape,
    tile_ops,
)
from hwsim import Kernel, Load, Store, load_hardware, simulate
from hwsim.isa import tile_written, tiles_read
from tests.backend.helpers import assert_matches, integer_overflow, reference, run_backend
from tests.strategies import op_cases, scaled, single_op_graph

F32, BF16, I8, I32 = DType.F32, DType.BF16, DType.I8, DType.I32
MODES = list(itertools.product([False, True], [False, True]))  # (exclusive, reverse)


def _graph(t: TensorType, attrs: dict, transpose: tuple[int, ...] = (), consumer=False):
    b = GraphBuilder("scan")
    x = b.leaf("input", "a0", t)
    if transpose:  # the scan reads a view that is not row-major
        x = b.add("transpose", [x], {"perm": transpose})
    node = b.add("cumsum", [x], attrs, "out")
    if consumer:  # the kernel writes a scratch value, as inside a model
        node = b.add("relu", [node], {}, "r")
    b.output("y", node)
    return b.graph


def _bindings(graph, seed: int) -> dict[str, np.ndarray]:
    """Normal floats; small integers (i8: -1, 0, 1) so that running sums stay in range."""
    out = random_bindings(graph, seed)
    rng = np.random.default_rng(seed)
    for _, node in graph.inputs:
        if node.type.dtype.is_int:
            top = 1 if node.type.dtype is I8 else 3
            values = rng.integers(-top, top + 1, node.type.shape)
            out[str(node.attr("name"))] = values.astype(node.type.dtype.np_dtype)
    return out


def _check(graph, hw: str, seed: int = 1):
    bindings = _bindings(graph, seed)
    assert not integer_overflow(graph, bindings)
    got, report, compiled = run_backend(graph, hw, bindings)
    assert_matches(graph, got, reference(graph, bindings))
    return report, compiled


@settings(max_examples=scaled(60), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    case=op_cases("cumsum"), seed=st.integers(0, 2**16), hw=st.sampled_from(["edge", "datacenter"])
)
def test_simulated_equals_reference(case, seed, hw):
    graph = single_op_graph(case)
    bindings = _bindings(graph, seed)
    assume(not integer_overflow(graph, bindings))
    got, report, _ = run_backend(graph, hw, bindings)
    assert_matches(graph, got, reference(graph, bindings))
    assert report.cycles >= report.roofline_cycles


# Rows that fit one tile, and rows longer than a tile (on edge, 70000 f32 are more than
# the whole SRAM) carried chunk to chunk; axes that are not the last; bf16 and i8.
CASES = [
    (TensorType(F32, (3, 7)), 1, {"edge": False, "datacenter": False}),
    (TensorType(I32, (8, 512)), 1, {"edge": True, "datacenter": False}),
    (TensorType(F32, (2, 70000)), 1, {"edge": True, "datacenter": True}),
    (TensorType(I32, (1, 12000)), 1, {"edge": True, "datacenter": True}),
    (TensorType(BF16, (4, 3000)), -1, {"edge": True, "datacenter": False}),
    (TensorType(I8, (5, 700, 3)), 1, {"edge": True, "datacenter": False}),
    (TensorType(F32, (2, 9, 40)), 0, {"edge": False, "datacenter": False}),
]


@pytest.mark.parametrize(("exclusive", "reverse"), MODES)
@pytest.mark.parametrize("hw", ["edge", "datacenter"])
@pytest.mark.parametrize(("t", "axis", "chunked"), CASES, ids=[str(c[0]) for c in CASES])
def test_hand_picked_cases_simulate_like_the_reference(t, axis, chunked, hw, exclusive, reverse):
    attrs = {"axis": axis, "exclusive": exclusive, "reverse": reverse}
    plan = scan_plan(load_hardware(hw), scan_shape(t, attrs))
    assert (plan.steps < t.shape[axis]) == chunked[hw], plan  # the case is what it says
    _check(_graph(t, attrs, consumer=True), hw)


@pytest.mark.parametrize(("exclusive", "reverse"), MODES)
def test_views_that_are_not_row_major_are_scanned(exclusive, reverse):
    """A transposed input ([5, 6, 4] with strides [4, 20, 1]): along axis 1 its DMA
    rows are strided and its columns contiguous, so it is scanned in place; along
    axes 0 and 2 the other axes do not merge into one stride, so it is copied first."""
    t = TensorType(F32, (6, 5, 4))
    for axis in (0, 1, 2):
        attrs = {"axis": axis, "exclusive": exclusive, "reverse": reverse}
        _, compiled = _check(_graph(t, attrs, transpose=(1, 0, 2)), "edge")
        copies = [k.name for k in compiled.kernels if k.name.startswith("copy.")]
        assert bool(copies) == (axis != 1), copies


def test_an_axis_of_one_needs_no_kernel():
    t = TensorType(F32, (4, 1, 3))
    for exclusive in (False, True):
        graph = _graph(t, {"axis": 1, "exclusive": exclusive}, consumer=True)
        _, compiled = _check(graph, "edge")
        assert not any(k.name.startswith("cumsum") for k in compiled.kernels)


def test_position_ids_simulate_like_the_reference():
    """cumsum(mask, axis=1) * mask + padding_idx on a padded batch, both presets."""
    b = GraphBuilder("positions")
    mask = b.leaf("input", "mask", TensorType(I32, (4, 128)))
    pad = b.const(1.0, TensorType(I32, ()), "pad")
    ids = b.add("add", [b.add("mul", [b.add("cumsum", [mask], {"axis": 1}), mask]), pad])
    b.output("ids", ids)
    lengths = np.array([128, 100, 7, 1])
    values = (np.arange(128)[None, :] < lengths[:, None]).astype(np.int32)
    for hw in ("edge", "datacenter"):
        got, _, _ = run_backend(b.graph, hw, {"mask": values})
        want = np.cumsum(values, axis=1) * values + 1
        np.testing.assert_array_equal(got["ids"], want)


# ------------------------------------------------------- both programs, both layouts

FORCED = [
    ScanPlan(COLS, 3, 5, TREE),  # 3 lanes, chunks of 5: carries and a short last chunk
    ScanPlan(COLS, 2, 8, WALK),
    ScanPlan(COLS, 4, 3, TREE),  # a tree of two rounds
    ScanPlan(ROWS, 3, 6, TREE),
    ScanPlan(ROWS, 5, 4, WALK),
    ScanPlan(ROWS, 2, 2, TREE),  # two positions: the walk runs
]


def _forced(monkeypatch, plan: ScanPlan) -> None:
    monkeypatch.setattr(backend.scan, "scan_plan", lambda hw, s: plan)


@pytest.mark.parametrize("dtype", [F32, BF16, I8, I32])
@pytest.mark.parametrize("plan", FORCED, ids=str)
def test_each_program_in_each_layout(monkeypatch, plan, dtype):
    _forced(monkeypatch, plan)
    shape, axis = ((7, 13), 1) if plan.along == COLS else ((2, 13, 7), 1)
    for exclusive, reverse in MODES:
        attrs = {"axis": axis, "exclusive": exclusive, "reverse": reverse}
        _check(_graph(TensorType(dtype, shape), attrs, consumer=True), "edge", seed=7)


def _bytes(t) -> set[int]:
    return {
        t.addr + (r * t.row_stride + c) * t.itemsize + k
        for r in range(t.rows)
        for c in range(t.cols)
        for k in range(t.itemsize)
    }


@pytest.mark.parametrize("plan", FORCED, ids=str)
def test_no_instruction_reads_what_it_writes(monkeypatch, plan):
    """The tree alternates scratch tiles; the walk and the carry read other positions."""
    _forced(monkeypatch, plan)
    shape = (7, 13) if plan.along == COLS else (2, 13, 7)
    for exclusive, reverse in MODES:
        attrs = {"axis": 1, "exclusive": exclusive, "reverse": reverse}
        compiled = compile_graph(_graph(TensorType(F32, shape), attrs), load_hardware("edge"))
        for ins in compiled.program.instrs:
            if ins.queue != "compute" or isinstance(ins, Kernel):
                continue
            written = _bytes(tile_written(ins))
            assert all(not written & _bytes(t) for t in tiles_read(ins)), ins


# ------------------------------------------------------------------ one plan


def test_the_priced_counts_are_the_tile_programs():
    """op_counts (what the cost model prices, a walk in closed form) counts exactly the
    instructions of tile_ops (what the backend emits)."""
    flags = list(itertools.product([False, True], repeat=4))
    for n, method, (first, last, exclusive, narrow) in itertools.product(
        [*range(1, 40), 64, 100, 1000], [WALK, TREE], flags
    ):
        if exclusive and first and n < 2:
            continue  # no plan has a first chunk of one position (scan_plan._candidates)
        ops = tile_ops(n, method, first, last, exclusive, narrow)
        listed = Counter((LANE_OP[o.op], o.dst.length) for o in ops)
        assert Counter(dict(op_counts(n, method, first, last, exclusive, narrow))) == listed


@pytest.mark.parametrize("hw_name", ["edge", "datacenter"])
@pytest.mark.parametrize(
    ("t", "attrs"),
    [
        (TensorType(F32, (64, 4096)), {"axis": 1, "exclusive": True}),
        (TensorType(BF16, (4, 128, 768)), {"axis": 1, "reverse": True}),
        (TensorType(I32, (2, 30000)), {"axis": 1, "exclusive": True, "reverse": True}),
    ],
)
def test_the_plan_counts_the_instructions_the_backend_emits(hw_name, t, attrs):
    """The cost model prices scan_loop; the backend emits exactly its loads, stores and
    vector cycles."""
    hw = load_hardware(hw_name)
    graph = _graph(t, {"exclusive": False, "reverse": False, **attrs})
    compiled = compile_graph(graph, hw)
    assert [k.name for k in compiled.kernels] == ["cumsum.out"]  # its buffer is the output
    result = simulate(compiled.program, hw, compiled.feeds(random_bindings(graph, 0)))
    node = graph.nodes[-1]
    s = scan_shape(t, node.attr_dict)
    loop = scan_loop(hw, s, scan_plan(hw, s))
    instrs = compiled.program.instrs
    assert sum(isinstance(i, Load) for i in instrs) == loop.loads
    assert sum(isinstance(i, Store) for i in instrs) == loop.stores
    assert result.report.busy["vector"] == loop.compute
    assert result.report.busy["load"] == loop.load_cycles


# ------------------------------------------------------------------ cost model

# Position ids (a batch of masks), long rows carried across tiles, BERT-sized
# activations scanned along the last and a middle axis, bf16, exclusive and reverse.
FIDELITY = [
    (TensorType(I32, (8, 512)), {"axis": 1}),
    (TensorType(I32, (1, 128)), {"axis": 1}),
    (TensorType(I8, (16, 2048)), {"axis": 1}),
    (TensorType(F32, (512, 768)), {"axis": 1}),
    (TensorType(F32, (512, 768)), {"axis": 0}),
    (TensorType(BF16, (4, 128, 768)), {"axis": 1, "reverse": True}),
    (TensorType(F32, (64, 4096)), {"axis": -1, "exclusive": True}),
    (TensorType(F32, (1, 16384)), {"axis": -1}),
    (TensorType(I32, (2, 30000)), {"axis": 1, "exclusive": True, "reverse": True}),
    (TensorType(F32, (1000, 7)), {"axis": 1}),
]
TOLERANCE = 0.15  # |model - sim| / sim


def fidelity(hw_name: str, t: TensorType, attrs: dict) -> tuple[int, int]:
    hw = load_hardware(hw_name)
    graph = _graph(t, attrs, consumer=True)
    compiled = compile_graph(graph, hw)
    feeds = compiled.feeds(random_bindings(graph, 0))
    result = simulate(compiled.program, hw, feeds, check_races=False)
    spans = {k.name: k.cycles for k in result.report.kernels}
    node = next(i for i, n in graph if n.name == "out")
    sim = sum(spans[k.name] for k in compiled.kernels if k.node == node)
    n = graph.nodes[node]
    return op_cost(hw, "cumsum", [t], n.type, n.attr_dict).cycles, sim


@pytest.mark.parametrize("hw_name", ["edge", "datacenter"])
@pytest.mark.parametrize(
    ("t", "attrs"), FIDELITY, ids=[f"{c[0]}-{k}" for k, c in enumerate(FIDELITY)]
)
def test_cost_model_predicts_the_simulated_cycles(hw_name, t, attrs):
    model, sim = fidelity(hw_name, t, attrs)
    error = (model - sim) / sim
    assert abs(error) <= TOLERANCE, f"model {model}, simulated {sim}: {error:+.1%}"


def test_an_axis_of_one_costs_nothing():
    t = TensorType(F32, (4, 1))
    attrs = {"axis": 1, "exclusive": True, "reverse": False}
    assert op_cost(load_hardware("edge"), "cumsum", [t], t, attrs) is None


def test_bf16_sums_run_in_f32_across_chunks():
    """3000 ones in bf16, carried across chunks on edge: every partial sum is an exact
    f32 integer, rounded to bf16 once, as the reference does (a bf16 running total
    would stop at 256)."""
    t = TensorType(BF16, (2, 3000))
    graph = _graph(t, {"axis": 1})
    assert (
        scan_plan(load_hardware("edge"), scan_shape(t, {"axis": 1, "exclusive": False})).steps
        < 3000
    )
    ones = {"a0": np.ones(t.shape, np.float32)}
    got, _, _ = run_backend(graph, "edge", ones)
    np.testing.assert_array_equal(got["y"], reference(graph, ones)["y"])


def test_i32_running_sums_near_the_range_are_exact():
    """Every running sum fits i32 but sums of windows do not (2**31 - 1, then its
    negation twice): a saturating tree would be off, the i32 walk is exact."""
    big = 2**31 - 1
    row = np.array([big, 0, -big, -big, big, 5, -5, 0] * 4, np.int32)
    graph = _graph(TensorType(I32, (3, row.size)), {"axis": 1})
    values = {"a0": np.stack([row, -row, row[::-1]])}
    assert not integer_overflow(graph, values)
    for hw in ("edge", "datacenter"):
        got, _, _ = run_backend(graph, hw, values)
        np.testing.assert_array_equal(got["y"], reference(graph, values)["y"])
