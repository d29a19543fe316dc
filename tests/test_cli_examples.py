"""`eqsat check` and `eqsat run` on every example in examples/ (a new example is
covered automatically)."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

from eqsat.cli import main
from eqsat.fileio import load_arrays, save_arrays
from frontend import ast, check_model, parse_model_file
from tests.conftest import EXAMPLES, ROOT

ids = [p.stem for p in EXAMPLES]


def _declared_dims(model: ast.Model) -> dict[str, int | None]:
    return {it.name: it.default for it in model.items if isinstance(it, ast.DimDecl)}


def test_there_are_examples():
    assert len(EXAMPLES) >= 5


@pytest.mark.parametrize("path", EXAMPLES, ids=ids)
def test_check_prints_summary(path, capsys):
    assert main(["check", str(path)]) == 0
    out = capsys.readouterr()
    assert out.err == ""
    graph = check_model(parse_model_file(path))
    lines = out.out.splitlines()
    assert lines[0] == f"model {graph.name}"
    for name, i in graph.outputs:
        assert f"  output {name}: {graph.nodes[i].type}" in lines
    for _, node in graph.inputs:
        assert f"  input  {node.attr('name')}: {node.type}" in lines
    n_ops = sum(1 for i, n in graph if graph.live()[i] and not n.is_leaf)
    assert f"ops: {n_ops}" in lines
    assert any(line.startswith("parameters: ") for line in lines)
    assert any(line.startswith("FLOPs: ") for line in lines)
    assert any(line.startswith("bytes moved, unfused: ") for line in lines)


@pytest.mark.parametrize("path", EXAMPLES, ids=ids)
def test_run_writes_outputs_and_inputs_reproduce(path, tmp_path, capsys):
    graph = check_model(parse_model_file(path))
    out1, saved, out2 = tmp_path / "o1.npz", tmp_path / "in.npz", tmp_path / "o2.npz"

    assert main(["run", str(path), "-o", str(out1), "--save-inputs", str(saved)]) == 0
    stdout = capsys.readouterr().out
    assert stdout.startswith(f"model {graph.name}: {len(graph.outputs)} output")
    first = load_arrays(out1)
    assert sorted(first) == sorted(name for name, _ in graph.outputs)
    for name, i in graph.outputs:
        assert first[name].shape == graph.nodes[i].type.shape
        assert first[name].dtype == graph.nodes[i].type.dtype.np_dtype
        assert np.isfinite(first[name].astype(np.float64)).all()
    inputs = load_arrays(saved)
    assert sorted(inputs) == sorted(graph.bound_names())

    # Another seed, but every value comes from --inputs: the outputs are identical.
    assert main(["run", str(path), "--inputs", str(saved), "--seed", "7", "-o", str(out2)]) == 0
    second = load_arrays(out2)
    assert sorted(second) == sorted(first)
    for name in first:
        np.testing.assert_array_equal(second[name], first[name])


def test_seed_changes_outputs(tmp_path):
    path = ROOT / "examples" / "mlp.model"
    a, b = tmp_path / "a.npz", tmp_path / "b.npz"
    assert main(["run", str(path), "-o", str(a), "--seed", "1"]) == 0
    assert main(["run", str(path), "-o", str(b), "--seed", "2"]) == 0
    assert not np.array_equal(load_arrays(a)["probs"], load_arrays(b)["probs"])


def test_partial_inputs_override_only_what_they_name(tmp_path, capsys):
    path = ROOT / "examples" / "mlp.model"
    saved, o1, o2 = tmp_path / "in.npz", tmp_path / "o1.npz", tmp_path / "o2.npz"
    assert main(["run", str(path), "--save-inputs", str(saved), "-o", str(o1)]) == 0
    values = load_arrays(saved)
    save_arrays(saved, {"x": values["x"] * 2})  # only the input; params from the seed
    assert main(["run", str(path), "--inputs", str(saved), "-o", str(o2)]) == 0
    assert not np.array_equal(load_arrays(o1)["probs"], load_arrays(o2)["probs"])
    capsys.readouterr()


def test_inputs_of_the_wrong_shape_are_an_error(tmp_path, capsys):
    path = ROOT / "examples" / "mlp.model"
    bad = tmp_path / "bad.npz"
    save_arrays(bad, {"x": np.zeros((8, 783), np.float32)})
    assert main(["run", str(path), "--inputs", str(bad)]) == 1
    err = capsys.readouterr().err
    assert "'x' must have shape [8, 784], got [8, 783]" in err


@pytest.mark.parametrize("path", EXAMPLES, ids=ids)
def test_dim_overrides_change_output_shapes(path, tmp_path, capsys):
    model = parse_model_file(path)
    dims = _declared_dims(model)
    assert dims, "every example declares its batch dimension"
    # Small values keep the run cheap and differ from every example's defaults.
    override = {name: 3 if default != 3 else 2 for name, default in dims.items()}
    default_graph = check_model(model)
    graph = check_model(model, override)
    flags = [arg for name, v in override.items() for arg in ("--dim", f"{name}={v}")]
    out = tmp_path / "o.npz"
    assert main(["run", str(path), *flags, "-o", str(out)]) == 0
    outputs = load_arrays(out)
    for name, i in graph.outputs:
        assert outputs[name].shape == graph.nodes[i].type.shape
    assert [graph.nodes[i].type for _, i in graph.outputs] != [
        default_graph.nodes[i].type for _, i in default_graph.outputs
    ]
    capsys.readouterr()
    assert main(["check", str(path), *flags]) == 0
    summary = capsys.readouterr().out
    for name, i in graph.outputs:
        assert f"  output {name}: {graph.nodes[i].type}" in summary


def test_bert_layer_sequence_length(tmp_path, capsys):
    path = ROOT / "examples" / "bert_layer.model"
    out = tmp_path / "o.npz"
    assert main(["run", str(path), "--dim", "S=16", "-o", str(out)]) == 0
    assert load_arrays(out)["y"].shape == (1, 16, 768)
    assert "y: f32[1, 16, 768]" in capsys.readouterr().out


@pytest.mark.parametrize("command", ["check", "run"])
def test_unknown_dim_name_is_an_error(command, tmp_path, capsys):
    path = ROOT / "examples" / "bert_layer.model"
    out = tmp_path / "o.npz"
    extra = ["-o", str(out)] if command == "run" else []
    assert main([command, str(path), "--dim", "T=16", *extra]) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.splitlines() == [
        f"eqsat {command}: error: --dim T: model 'bert_layer' has no dimension 'T' "
        "(its dimensions: B, S)"
    ]
    assert not out.exists()


def test_malformed_dim_flag_is_a_usage_error(capsys):
    with pytest.raises(SystemExit) as info:
        main(["check", str(ROOT / "examples" / "mlp.model"), "--dim", "B=0"])
    assert info.value.code == 2
    assert "expected NAME=POSITIVE_INT, got 'B=0'" in capsys.readouterr().err


def test_dim_without_default_needs_the_flag(tmp_path, capsys):
    path = tmp_path / "m.model"
    path.write_text("model m {\n  dim B\n  input x: f32[B, 4]\n  y = relu(x)\n  output y\n}\n")
    assert main(["check", str(path)]) == 1
    assert "pass --dim B=N" in capsys.readouterr().err
    assert main(["check", str(path), "--dim", "B=5"]) == 0
    assert "output y: f32[5, 4]" in capsys.readouterr().out


def test_ops_lists_every_callable_op(capsys):
    from eqsat.ops import REGISTRY, OpKind

    assert main(["ops"]) == 0
    out = capsys.readouterr().out
    for name, op in REGISTRY.items():
        if op.kind is not OpKind.LEAF:
            assert f"  {name}(" in out


def test_subprocess_check_example():
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.run(
        [sys.executable, "-m", "eqsat", "check", "examples/mlp.model"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("model mlp\n")
    assert proc.stderr == ""
