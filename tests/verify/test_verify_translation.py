"""`--verify`: translation validation of optimize and simulate results against the
original model. A correct result passes; an injected miscompilation (a wrong graph
from the optimizer, a fused kernel lowered without its epilogue) exits 1 with a clear
message and writes nothing."""

from __future__ import annotations

from dataclasses import replace

import pytest

from eqsat.cli import main
from eqsat.ir.graph import Graph
from eqsat.verify.translation import VerificationError, validate_graph
from frontend import check_model, parse_model_file
from tests.conftest import ROOT

MLP = str(ROOT / "examples" / "mlp.model")


def _drop_relu(graph: Graph) -> Graph:
    """The same graph with its first relu-carrying op computing without the relu."""
    nodes = list(graph.nodes)
    for i, node in enumerate(nodes):
        if node.op == "matmul_bias_relu":
            nodes[i] = replace(node, op="matmul_bias")
            break
        if node.op == "relu":
            nodes[i] = replace(node, op="neg")
            break
    else:  # pragma: no cover - the mlp has relus
        raise AssertionError("no relu to break")
    return Graph(graph.name, nodes, list(graph.outputs), dict(graph.dims))


def test_validate_graph_accepts_the_model_itself():
    graph = check_model(parse_model_file(MLP))
    v = validate_graph(graph, graph, (0, 1))
    assert v.worst == 0.0 and v.seeds == (0, 1)


def test_validate_graph_rejects_a_wrong_graph():
    graph = check_model(parse_model_file(MLP))
    with pytest.raises(VerificationError, match=r"output 'probs'.*differs from the original"):
        validate_graph(graph, _drop_relu(graph), (0,))


def test_optimize_verify_passes_and_writes(tmp_path, capsys):
    out = tmp_path / "o.model"
    assert main(["optimize", MLP, "-q", "--verify", "-o", str(out)]) == 0
    text = capsys.readouterr().out
    assert "verified: the optimized model matches the original model on seeds 0, 1, 2" in text
    assert out.exists()


def test_optimize_verify_catches_a_wrong_graph(tmp_path, capsys, monkeypatch):
    import eqsat.commands.optimize as command

    real = command.optimize

    def miscompile(graph, *args, **kwargs):
        result = real(graph, *args, **kwargs)
        result.graph = _drop_relu(result.graph)
        return result

    monkeypatch.setattr(command, "optimize", miscompile)
    out, report = tmp_path / "o.model", tmp_path / "r.json"
    code = main(["optimize", MLP, "-q", "--verify", "-o", str(out), "--report", str(report)])
    assert code == 1
    err = capsys.readouterr().err
    assert "verification failed: output 'probs' of the optimized model differs" in err
    assert "nothing was written" in err
    assert not out.exists() and not report.exists()


def test_simulate_verify_passes(capsys):
    assert main(["simulate", MLP, "-q", "--verify"]) == 0
    assert "verified: the simulated program matches" in capsys.readouterr().out


def test_simulate_verify_catches_a_wrong_kernel_lowering(tmp_path, capsys, monkeypatch):
    from backend import lowering

    wrong = lowering.LOWER["neg"]

    def relu_as_neg(c, i, node):  # lowers relu(x) as -x
        return wrong(c, i, replace(node, op="neg"))

    monkeypatch.setitem(lowering.LOWER, "relu", relu_as_neg)
    out = tmp_path / "out.npz"
    # the model as written: its relu kernels (optimized, they run in product epilogues)
    code = main(["simulate", MLP, "-q", "--no-optimize", "--verify", "-o", str(out)])
    assert code == 1
    err = capsys.readouterr().err
    assert "verification failed: output 'probs' of the simulated program differs" in err
    assert not out.exists()


def test_verify_tolerance_flag_is_used(capsys, monkeypatch):
    import eqsat.commands.optimize as command

    real = command.optimize

    def miscompile(graph, *args, **kwargs):
        result = real(graph, *args, **kwargs)
        result.graph = _drop_relu(result.graph)
        return result

    monkeypatch.setattr(command, "optimize", miscompile)
    # a tolerance of 100% lets the wrong graph through: the flag reaches the check
    assert main(["optimize", MLP, "-q", "--verify", "--verify-tol", "1e9"]) == 0
    assert "tolerance 1e+09" in capsys.readouterr().out
