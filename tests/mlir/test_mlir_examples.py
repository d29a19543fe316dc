"""Every bundled example, as written and optimized: the emitted MLIR is read by xDSL
and by IREE's MLIR, compiles with IREE for the CPU and computes what the reference
interpreter computes (normwise relative error below 1e-4)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from backend.mlir import emit_mlir, statement_locations
from backend.mlir.iree import run_iree
from eqsat.interpreter import evaluate
from eqsat.loading import load_model
from tests.conftest import EXAMPLES as STATIC_EXAMPLES
from tests.mlir.helpers import normwise_error, parse_with_iree, parse_with_xdsl
from tests.optimize_helpers import optimized_example

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = [p.stem for p in STATIC_EXAMPLES]  # models with if/loop regions: tests/control


def _check(graph, bindings, text_of=None):
    module = emit_mlir(graph) if text_of is None else text_of
    parse_with_xdsl(module.text)
    parse_with_iree(module.text)
    run = run_iree(module, bindings)
    want = evaluate(graph, bindings)
    assert list(run.outputs) == [name for name, _ in graph.outputs]
    for name, value in want.items():
        assert run.outputs[name].shape == value.shape
        assert normwise_error(run.outputs[name], value) < 1e-4, name
    return module


@pytest.mark.parametrize("name", EXAMPLES)
def test_example_as_written_runs_on_iree(name):
    path = ROOT / "examples" / f"{name}.model"
    loaded = load_model(path)
    module = emit_mlir(loaded.graph, locations=statement_locations(loaded.model), source=str(path))
    _check(loaded.graph, loaded.bindings(0), module)
    # arguments are the model's inputs then params, by name
    assert [a for a, _, _ in module.args] == list(loaded.graph.bound_names())
    assert f'loc("{path}":' in module.text


@pytest.mark.parametrize("name", ["bottleneck", "gpt2_block", "rmsnorm_block"])
def test_model_not_in_examples_runs_on_iree(name):
    """Blocks of the issue that are not bundled examples (tests/mlir/models)."""
    loaded = load_model(Path(__file__).parent / "models" / f"{name}.model")
    _check(loaded.graph, loaded.bindings(0))


@pytest.mark.parametrize("name", ["bert_layer", "resnet_block"])
def test_optimized_example_runs_on_iree(name):
    result = optimized_example(name)
    loaded = load_model(ROOT / "examples" / f"{name}.model")
    fused = {n.op for _, n in result.graph if n.opdef.kind.value == "fused"}
    assert fused, "the optimizer fused nothing: this test would not test fused kernels"
    module = _check(result.graph, loaded.bindings(0))
    # against the original program too (what `eqsat run` computes)
    run = run_iree(module, loaded.bindings(0))
    for out, value in evaluate(loaded.graph, loaded.bindings(0)).items():
        assert normwise_error(run.outputs[out], value) < 1e-4


@pytest.mark.parametrize("name", ["mlp"])
def test_int8_program_runs_on_iree_exactly(name):
    """The quantized program (what `eqsat compile --quantize int8 --emit mlir` writes):
    the i8/i32 arithmetic is exact, so IREE and the interpreter agree to f32 rounding
    of the float epilogues and exactly on every integer value."""
    from eqsat.interpreter import evaluate_nodes
    from tests.quant.helpers import model, quantized

    result, bindings = quantized(model(name))
    graph = result.graph
    assert any(n.type.dtype.value == "i8" for _, n in graph), "nothing was quantized"
    params = result.quant.all_params
    feeds = {**bindings, **params}
    module = emit_mlir(graph, consts=params)
    parse_with_xdsl(module.text)
    parse_with_iree(module.text)
    assert "arith.extsi" in module.text or "linalg.quantized_matmul" in module.text
    run = run_iree(module, feeds)
    for out, value in evaluate(graph, feeds).items():
        assert normwise_error(run.outputs[out], value) < 1e-6, out
    # every integer value exactly: expose the int8 nodes as outputs
    values = evaluate_nodes(graph, feeds)
    ints = [i for i, n in graph if not n.is_leaf and n.type.dtype.is_int]
    probe = type(graph)(
        graph.name, graph.nodes, [(f"v{i}", i) for i in ints], graph.dims, graph.constants
    )
    got = run_iree(emit_mlir(probe, consts=params), feeds).outputs
    for i in ints:
        assert np.array_equal(got[f"v{i}"], values[i]), graph.nodes[i].op
