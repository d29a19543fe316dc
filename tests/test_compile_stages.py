"""`eqsat compile --emit model|egglog|egraph-json`: each stage's output is what the
next stage reads (the model text loads and computes the same outputs, the egglog
program replays in a fresh egglog e-graph and extracts a fused program, the e-graph
JSON extracts), and stages that need the optimizer refuse --no-optimize."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from eqsat.cli import main
from eqsat.interpreter import evaluate
from eqsat.loading import load_model

MLP = Path(__file__).resolve().parents[1] / "examples" / "mlp.model"


def test_emit_model_loads_and_computes_the_same(tmp_path, capsys):
    assert main(["compile", str(MLP), "--emit", "model", "-q"]) == 0
    text = capsys.readouterr().out
    assert "matmul_bias_relu" in text  # the optimized program, not the model as written
    path = tmp_path / "opt.model"
    path.write_text(text)
    original = load_model(MLP)
    bindings = original.bindings(3)
    got = evaluate(load_model(path).graph, bindings)["probs"]
    want = evaluate(original.graph, bindings)["probs"]
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_emit_egglog_replays_in_egglog(tmp_path):
    from egglog.bindings import EGraph

    from eqsat.egraph.saturate import run_commands

    out = tmp_path / "mlp.egg"
    assert main(["compile", str(MLP), "--emit", "egglog", "--iter-limit", "3", "-o", str(out)]) == 0
    text = out.read_text()
    assert ";; ---- the rules" in text and "(repeat 3 (seq (run algebra)" in text
    egraph = EGraph()
    results = run_commands(egraph, text)
    extracted = str(results[-1])
    # egglog's own extraction (smallest term) takes the fused kernels, the rules' work
    assert extracted.startswith("(Softmax (") and "(MatmulBiasRelu (Input" in extracted


def test_emit_egraph_json_is_extractable(tmp_path, capsys):
    out = tmp_path / "eg.json"
    assert main(["compile", str(MLP), "--emit", "egraph-json", "-q", "-o", str(out)]) == 0
    data = json.loads(out.read_text())
    assert data["root_eclasses"] and data["nodes"]
    capsys.readouterr()
    assert main(["extract", str(out)]) == 0
    assert "cost:" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--emit", "egglog", "--no-optimize"], "drop --no-optimize"),
        (["--emit", "egraph-json", "--no-optimize"], "drop --no-optimize"),
        (["--emit", "egglog", "--quantize", "int8"], "drop --quantize"),
    ],
)
def test_stage_flag_errors(flags, message, capsys):
    assert main(["compile", str(MLP), *flags]) == 1
    assert message in capsys.readouterr().err
