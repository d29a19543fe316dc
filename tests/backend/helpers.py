"""Shared helpers of the backend tests: compile + simulate + compare with the reference."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from backend import compile_graph
from eqsat.interpreter import evaluate, evaluate_nodes
from eqsat.ir.graph import Graph
from hwsim import load_hardware, simulate

WRAPPING_KINDS = ("elementwise", "reduce", "fused", "matmul")


def run_backend(graph: Graph, hw_name: str, bindings: Mapping[str, np.ndarray], races=True):
    """(graph outputs as the simulator computed them, SimReport, CompiledProgram)."""
    hw = load_hardware(hw_name)
    compiled = compile_graph(graph, hw, consts=bindings)  # params known at compile time
    result = simulate(compiled.program, hw, compiled.feeds(bindings), check_races=races)
    return compiled.results(result.outputs), result.report, compiled


def integer_overflow(graph: Graph, bindings: Mapping[str, np.ndarray]) -> bool:
    """Does the reference wrap an integer result (numpy wraps; the machine saturates)?"""
    values = evaluate_nodes(graph, bindings)
    for i, node in graph:
        if values[i] is None or node.is_leaf or node.type.dtype.is_float:
            continue
        if node.opdef.kind.value not in WRAPPING_KINDS:
            continue
        args = [values[j] for j in node.inputs]
        if any(a is None or a.dtype.kind not in "iu" for a in args):
            continue
        if node.op == "pow":  # int64 wraps as well: bound |a| ** b in float64 instead
            if _power_overflows(args[0], args[1], node.type.dtype.np_dtype):
                return True
            continue
        # fused bodies are typed per array (int64 is not an eqsat dtype): widen to i32 there
        wide_t = np.int32 if node.opdef.kind.value == "fused" else np.int64
        with np.errstate(all="ignore"):
            wide = np.asarray(node.opdef.ref([a.astype(wide_t) for a in args], node.attr_dict))
        if not np.array_equal(wide.astype(np.int64), values[i].astype(np.int64)):
            return True
    return False


def _power_overflows(a: np.ndarray, b: np.ndarray, dtype: np.dtype) -> bool:
    with np.errstate(all="ignore"):
        magnitude = np.abs(a.astype(np.float64)) ** np.maximum(b, 0).astype(np.float64)
    return bool(np.any(magnitude > np.iinfo(dtype).max))


def assert_matches(
    graph: Graph,
    got: Mapping[str, np.ndarray],
    want: Mapping[str, np.ndarray],
    bf16_scale: float = 1.0,
    bf16_levels: int = 0,
    f32_scale: float = 1.0,
):
    """f32 to float rounding (scaled by the output's magnitude, and at least 8 ulps of
    `f32_scale`, the largest f32 value computed on the way: a sum taken in another order
    errs by ulps of its terms, which sin of a large value keeps), bf16 to 1e-2 (scaled
    by the output's magnitude and `bf16_scale`: the largest value computed on the way,
    whose rounding a kernel that keeps f32 on chip may differ by), ints exactly.
    `bf16_levels` (bf16_roundings): with more bf16 roundings on one path than 1e-2
    covers, each may be done or skipped (a fused kernel keeps f32 inside), so the bf16
    tolerance is one bf16 half-step, 2^-8, per rounding."""
    bf16_tol = max(1e-2, bf16_levels * 2.0**-8)
    for name, i in graph.outputs:
        dtype = graph.nodes[i].type.dtype
        g = np.asarray(got[name]).astype(np.float64)
        w = np.asarray(want[name]).astype(np.float64)
        assert g.shape == w.shape, name
        if dtype.is_int:
            np.testing.assert_array_equal(g, w, err_msg=name)
            continue
        finite = np.isfinite(w)
        scale = float(np.max(np.abs(w[finite]))) if finite.any() else 1.0
        rtol, atol = (
            (1e-4, max(1e-4 * max(1.0, scale), 2.0**-20 * f32_scale))
            if dtype.value == "f32"
            else (bf16_tol, bf16_tol * max(1.0, scale, bf16_scale))
        )
        np.testing.assert_allclose(g, w, rtol=rtol, atol=atol, equal_nan=True, err_msg=name)


def bf16_magnitude(graph: Graph, bindings) -> float:
    """The largest finite magnitude of any bf16 value the reference computes: one bf16
    rounding of it, kept or not, can reach an output (a fused kernel rounds once)."""
    return magnitude(graph, bindings, "bf16")


def magnitude(graph: Graph, bindings, dtype: str) -> float:
    """The largest finite magnitude (at least 1) of the `dtype` values the reference
    computes."""
    values = evaluate_nodes(graph, bindings)
    top = 1.0
    for i, node in graph:
        v = values[i]
        if v is None or node.type.dtype.value != dtype:
            continue
        a = np.abs(np.asarray(v, dtype=np.float64))
        a = a[np.isfinite(a)]
        if a.size:
            top = max(top, float(a.max()))
    return top


def bf16_roundings(graph: Graph) -> int:
    """The most bf16 roundings the reference does on one path to an output: every op
    of a fused op's composition rounds there (the interpreter evaluates it op by op),
    where the backend's kernel may keep f32 until its result."""

    def ops_in(body) -> int:
        if body is None or isinstance(body, str) or not hasattr(body, "args"):
            return 0
        return 1 + sum(ops_in(a) for a in body.args)

    depth: dict[int, int] = {}
    for i, node in graph:
        own = 0
        if not node.is_leaf and node.type.dtype.value == "bf16":
            own = max(1, ops_in(node.opdef.composition))
        depth[i] = own + max((depth[j] for j in node.inputs), default=0)
    return max((depth[i] for _, i in graph.outputs), default=0)


def reference(graph: Graph, bindings):
    return evaluate(graph, bindings)


def kernel_instrs(compiled, name: str) -> list:
    """The instructions of kernel `name` (from its marker to the next)."""
    from hwsim import Kernel

    out, inside = [], False
    for ins in compiled.program.instrs:
        if isinstance(ins, Kernel):
            inside = ins.name == name
        elif inside:
            out.append(ins)
    return out
