"""ONNX If, Loop and Scan import to regions and match ONNX Runtime: If and Loop from
PyTorch (tests/data/onnx/control/make_control.py: torch.cond with the dynamo exporter,
a scripted while loop with the TorchScript exporter), Scan and a constant If built
here with onnx.helper. The imported programs also compile and simulate."""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from onnx import TensorProto as T
from onnx import helper as oh
from onnx import numpy_helper

from backend.control import compile_control
from eqsat.control.check import check_control_model
from eqsat.control.interpret import run_control
from eqsat.control.program import IfRegion, LoopRegion
from frontend import ast, parse_model, print_model
from frontend.onnx import import_onnx
from hwsim.hardware import load_hardware
from tests.control.helpers import ONNX_DIR

EDGE = load_hardware("edge")


def imported(source):
    imp = import_onnx(source, symbolic=False)
    program = check_control_model(imp.model, None, imp.arrays)
    return imp, program


def ours(imp, program, feeds):
    values = imp.feeds(feeds)
    values.update({k: v for k, v in imp.arrays.items() if k in program.params})
    got, trace = run_control(program, values)
    return imp.results(got), trace, values


def ort(model, feeds):
    data = model if isinstance(model, bytes) else str(model)
    session = onnxruntime.InferenceSession(data, providers=["CPUExecutionProvider"])
    names = [o.name for o in session.get_outputs()]
    return dict(zip(names, session.run(names, feeds), strict=True))


IF_COND = ONNX_DIR / "if_cond.onnx"
LOOP = ONNX_DIR / "loop_script.onnx"


def test_test_models_are_small() -> None:
    for path in (IF_COND, LOOP):
        assert path.stat().st_size < 200_000


@settings(max_examples=10)
@given(seed=st.integers(0, 2**16), shift=st.sampled_from([-2.0, 2.0]))
def test_torch_cond_if_matches_onnxruntime(seed: int, shift: float) -> None:
    """`shift` moves the input's sum to either side of 0: both branches are taken."""
    imp, program = imported(IF_COND)
    assert [type(s) for s in program.steps][-1] is IfRegion
    x = (np.random.default_rng(seed).standard_normal((2, 8)) + shift).astype(np.float32)
    want = ort(IF_COND, {"x": x})
    got, trace, values = ours(imp, program, {"x": x})
    assert trace.branches[0][1] == (x.sum() > 0)
    for name, w in want.items():
        np.testing.assert_allclose(got[name], w, rtol=1e-5, atol=1e-6)
    sim, report = compile_control(program, EDGE).run(values)
    assert report.branches[0][1] == (x.sum() > 0)
    for name, w in want.items():
        np.testing.assert_allclose(imp.results(sim)[name], w, rtol=1e-5, atol=1e-5)


@settings(max_examples=10)
@given(seed=st.integers(0, 2**16), n=st.integers(0, 7), scale=st.sampled_from([0.5, 3.0]))
def test_scripted_loop_matches_onnxruntime(seed: int, n: int, scale: float) -> None:
    """Trip count min(n, first trip whose sum reaches the limit): data-dependent."""
    imp, program = imported(LOOP)
    assert any(isinstance(s, LoopRegion) for s in program.steps)
    x = (np.random.default_rng(seed).standard_normal((2, 8)) * scale).astype(np.float32)
    feeds = {"x": x, "n": np.array(n, dtype=np.int64)}
    want = ort(LOOP, feeds)
    got, trace, values = ours(imp, program, feeds)
    np.testing.assert_allclose(got["h"], want["h"], rtol=1e-5, atol=1e-5)
    [(_, trips)] = trace.trips
    assert trips <= n
    sim, report = compile_control(program, EDGE).run(values)
    assert report.trips == [trips]
    np.testing.assert_allclose(imp.results(sim)["h"], want["h"], rtol=1e-4, atol=1e-4)


def test_scripted_loop_takes_several_trip_counts() -> None:
    imp, program = imported(LOOP)
    x = np.full((2, 8), 0.1, dtype=np.float32)
    seen = set()
    for n in range(5):
        _, trace, _ = ours(imp, program, {"x": x, "n": np.array(n, dtype=np.int64)})
        seen.add(trace.trips[0][1])
    assert seen == {0, 1, 2, 3, 4}


def test_the_and_inside_the_loop_body_is_predicated() -> None:
    """TorchScript's `i < n and ...` is an If inside the body: regions do not nest, so
    the import computes both sides and picks with `where`."""
    imp, _ = imported(LOOP)
    [loop] = [
        i
        for i in imp.model.items
        if isinstance(i, ast.RegionAssign) and isinstance(i.region, ast.LoopRegion)
    ]
    ops = [item.expr.op for item in loop.region.body.items if isinstance(item.expr, ast.Call)]
    assert "where" in ops
    assert parse_model(print_model(imp.model)) == imp.model


def scan_model() -> onnx.ModelProto:
    """An RNN as a Scan: s' = tanh(s @ W + x_t), stacking every s'."""
    w = (np.random.default_rng(0).standard_normal((4, 4)) * 0.5).astype(np.float32)
    body = oh.make_graph(
        [
            oh.make_node("MatMul", ["s_in", "W"], ["m"]),
            oh.make_node("Add", ["m", "x_t"], ["a"]),
            oh.make_node("Tanh", ["a"], ["s_out"]),
            oh.make_node("Identity", ["s_out"], ["y_t"]),
        ],
        "body",
        [
            oh.make_tensor_value_info("s_in", T.FLOAT, [1, 4]),
            oh.make_tensor_value_info("x_t", T.FLOAT, [1, 4]),
        ],
        [
            oh.make_tensor_value_info("s_out", T.FLOAT, [1, 4]),
            oh.make_tensor_value_info("y_t", T.FLOAT, [1, 4]),
        ],
    )
    graph = oh.make_graph(
        [oh.make_node("Scan", ["s0", "xs"], ["s_final", "ys"], body=body, num_scan_inputs=1)],
        "scan_rnn",
        [
            oh.make_tensor_value_info("s0", T.FLOAT, [1, 4]),
            oh.make_tensor_value_info("xs", T.FLOAT, [5, 1, 4]),
        ],
        [
            oh.make_tensor_value_info("s_final", T.FLOAT, [1, 4]),
            oh.make_tensor_value_info("ys", T.FLOAT, [5, 1, 4]),
        ],
        [numpy_helper.from_array(w, "W")],
    )
    model = oh.make_model(graph, opset_imports=[oh.make_opsetid("", 17)])
    onnx.checker.check_model(model)
    return model


@pytest.mark.parametrize("seed", [0, 1])
def test_scan_matches_onnxruntime(seed: int) -> None:
    model = scan_model()
    imp, program = imported(model)
    [loop] = [s for s in program.steps if isinstance(s, LoopRegion)]
    assert loop.index is not None
    rng = np.random.default_rng(seed)
    feeds = {
        "s0": rng.standard_normal((1, 4)).astype(np.float32),
        "xs": rng.standard_normal((5, 1, 4)).astype(np.float32),
    }
    want = ort(model.SerializeToString(), feeds)
    got, trace, values = ours(imp, program, feeds)
    assert trace.trips == [(program.steps.index(loop), 5)]
    for name, w in want.items():
        np.testing.assert_allclose(got[name], w, rtol=1e-5, atol=1e-6)
    sim, _ = compile_control(program, EDGE).run(values)
    for name, w in want.items():
        np.testing.assert_allclose(imp.results(sim)[name], w, rtol=1e-5, atol=1e-5)


def folded_if_model() -> onnx.ModelProto:
    """An If on an initializer (false): relu or neg of x."""
    branch = [oh.make_tensor_value_info("out", T.FLOAT, [3])]
    then = oh.make_graph([oh.make_node("Relu", ["x"], ["out"])], "then", [], branch)
    orelse = oh.make_graph([oh.make_node("Neg", ["x"], ["out"])], "else", [], branch)
    graph = oh.make_graph(
        [oh.make_node("If", ["flag"], ["y"], then_branch=then, else_branch=orelse)],
        "folded",
        [oh.make_tensor_value_info("x", T.FLOAT, [3])],
        [oh.make_tensor_value_info("y", T.FLOAT, [3])],
        [numpy_helper.from_array(np.array(False), "flag")],
    )
    return oh.make_model(graph, opset_imports=[oh.make_opsetid("", 17)])


def test_an_if_on_an_initializer_folds_at_import() -> None:
    model = folded_if_model()
    imp = import_onnx(model)
    assert not any(isinstance(i, ast.RegionAssign) for i in imp.model.items)
    assert any("folded to its else branch" in note for note in imp.notes)
    x = np.array([-1.0, 0.5, 2.0], dtype=np.float32)
    want = ort(model.SerializeToString(), {"x": x})
    program = check_control_model(imp.model)
    got, _ = run_control(program, imp.feeds({"x": x}))
    np.testing.assert_array_equal(imp.results(got)["y"], want["y"])


def test_the_region_check_reads_op_types_without_loading_the_model(tmp_path) -> None:
    from eqsat.control.load import file_has_regions, onnx_op_types

    for path in [*sorted(ONNX_DIR.parent.glob("*.onnx")), IF_COND, LOOP]:
        assert onnx_op_types(path) == {n.op_type for n in onnx.load(str(path)).graph.node}
    assert file_has_regions(IF_COND) and file_has_regions(LOOP)
    assert not file_has_regions(ONNX_DIR.parent / "resnet18_ts.onnx")
    broken = tmp_path / "broken.onnx"
    broken.write_bytes(IF_COND.read_bytes()[:100])
    assert not file_has_regions(broken)  # the static path reports what is wrong
