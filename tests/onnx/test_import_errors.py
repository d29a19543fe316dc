"""One test per kind of mistake an ONNX file can hold: the CLI prints
`FILE.onnx: error: [node NAME (OpType #i): ]MESSAGE` without a traceback, exits 1
and writes nothing."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from eqsat.cli import main
from frontend.onnx import OnnxImportError, import_onnx


def _model(nodes, inputs, outputs, inits=(), opset=17) -> onnx.ModelProto:
    graph = helper.make_graph(nodes, "g", inputs, outputs, list(inits))
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def _vi(name, elem=TensorProto.FLOAT, shape=(2, 3)):
    return helper.make_tensor_value_info(name, elem, list(shape))


def _save(tmp_path: Path, model: onnx.ModelProto, name: str = "m.onnx") -> Path:
    path = tmp_path / name
    onnx.save(model, str(path))
    return path


def _import_fails(tmp_path: Path, path: Path, capsys) -> str:
    out = tmp_path / "out.model"
    assert main(["import", str(path), "-o", str(out)]) == 1
    err = capsys.readouterr().err
    assert "Traceback" not in err
    assert not out.exists() and not (tmp_path / "out.params.npz").exists()
    return err.strip()


def test_unsupported_op(tmp_path, capsys):
    model = _model(
        [helper.make_node("TopK", ["x", "k"], ["v", "i"], name="top")],
        [_vi("x"), _vi("k", TensorProto.INT64, (1,))],
        [_vi("v"), _vi("i", TensorProto.INT64)],
    )
    err = _import_fails(tmp_path, _save(tmp_path, model), capsys)
    assert err.startswith(
        f"{tmp_path / 'm.onnx'}: error: node top (TopK #0): TopK is not supported"
    )
    assert "eqsat import --supported" in err


def test_unsupported_attribute(tmp_path, capsys):
    w = numpy_helper.from_array(np.ones((2, 1, 3, 3), np.float32), "w")
    model = _model(
        [helper.make_node("Conv", ["x", "w"], ["y"], dilations=[2, 2], strides=[2, 2], name="c")],
        [_vi("x", shape=(1, 1, 8, 8))],
        [_vi("y", shape=(1, 2, 2, 2))],
        [w],
    )
    err = _import_fails(tmp_path, _save(tmp_path, model), capsys)
    assert "node c (Conv #0): Conv with both dilations and strides is not supported" in err


def test_not_an_onnx_file(tmp_path, capsys):
    path = tmp_path / "m.onnx"
    path.write_bytes(b"\x08\x07garbage\xff\xfe" * 50)
    err = _import_fails(tmp_path, path, capsys)
    assert f"{path}: error: not a readable ONNX model" in err


def test_missing_file(tmp_path, capsys):
    err = _import_fails(tmp_path, tmp_path / "nope.onnx", capsys)
    assert "nope.onnx: error: cannot read the file" in err


def test_invalid_graph(tmp_path, capsys):
    model = _model([helper.make_node("Relu", ["nowhere"], ["y"])], [_vi("x")], [_vi("y")])
    err = _import_fails(tmp_path, _save(tmp_path, model), capsys)
    assert "does not pass onnx.checker" in err


def _external_model(tmp_path: Path, location: str) -> Path:
    w = numpy_helper.from_array(np.ones((3, 3), np.float32), "w")
    model = _model([helper.make_node("MatMul", ["x", "w"], ["y"])], [_vi("x")], [_vi("y")], [w])
    path = tmp_path / "m.onnx"
    onnx.save(model, str(path), save_as_external_data=True, location="w.bin", size_threshold=0)
    loaded = onnx.load(str(path), load_external_data=False)
    for entry in loaded.graph.initializer[0].external_data:
        if entry.key == "location":
            entry.value = location
    onnx.save(loaded, str(path))
    return path


def test_external_data_outside_the_model_folder(tmp_path, capsys):
    (tmp_path.parent / "secret.bin").write_bytes(b"\0" * 36)
    path = _external_model(tmp_path, "../secret.bin")
    err = _import_fails(tmp_path, path, capsys)
    assert "outside the model's folder" in err


def test_external_data_absolute_path(tmp_path, capsys):
    path = _external_model(tmp_path, "/etc/passwd")
    assert "outside the model's folder" in _import_fails(tmp_path, path, capsys)


def test_missing_external_data(tmp_path, capsys):
    path = _external_model(tmp_path, "gone.bin")
    assert "external data 'gone.bin' is missing" in _import_fails(tmp_path, path, capsys)


def test_unsupported_element_type(tmp_path, capsys):
    model = _model(
        [helper.make_node("Identity", ["x"], ["y"])],
        [_vi("x", TensorProto.STRING)],
        [_vi("y", TensorProto.STRING)],
    )
    err = _import_fails(tmp_path, _save(tmp_path, model), capsys)
    assert "input 'x': element type string is not supported" in err


def test_an_op_older_than_its_converter(tmp_path, capsys):
    model = _model(
        [helper.make_node("Add", ["x", "x"], ["y"], name="a")], [_vi("x")], [_vi("y")], opset=6
    )
    err = _import_fails(tmp_path, _save(tmp_path, model), capsys)
    assert "node a (Add #0): Add-6 (this model's opset) is not supported" in err


def test_an_input_that_must_be_a_constant(tmp_path, capsys):
    model = _model(
        [helper.make_node("Reshape", ["x", "shape"], ["y"], name="r")],
        [_vi("x"), _vi("shape", TensorProto.INT64, (2,))],
        [_vi("y", shape=(3, 2))],
    )
    err = _import_fails(tmp_path, _save(tmp_path, model), capsys)
    assert "node r (Reshape #0): Reshape's shape must be known when the model is compiled" in err


def test_unranked_input():
    """(onnx.checker refuses such a file; a ModelProto given to the library is checked
    by the importer itself.)"""
    model = _model(
        [helper.make_node("Relu", ["x"], ["y"])],
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, None)],
        [_vi("y")],
    )
    with pytest.raises(OnnxImportError, match="input 'x' has no tensor shape"):
        import_onnx(model)


@pytest.mark.parametrize("command", ["run", "check", "optimize", "simulate", "compile"])
def test_every_command_reports_import_errors(tmp_path, capsys, command):
    model = _model(
        [helper.make_node("TopK", ["x", "k"], ["v", "i"], name="top")],
        [_vi("x"), _vi("k", TensorProto.INT64, (1,))],
        [_vi("v"), _vi("i", TensorProto.INT64)],
    )
    path = _save(tmp_path, model)
    assert main([command, str(path)]) == 1
    err = capsys.readouterr().err
    assert "node top (TopK #0)" in err and "Traceback" not in err


def test_names_that_are_not_identifiers(tmp_path, capsys):
    """ONNX names are any strings: they are sanitized, kept in comments, and a name
    holding egglog syntax stays data all the way through the optimizer."""
    x, y = 'in"put (run 1000)', "out/put::0 )) (delete"
    model = _model(
        [
            helper.make_node("Relu", [x], ["a b"], name="relu; (run 9)"),
            helper.make_node("Neg", ["a b"], [y]),
        ],
        [_vi(x)],
        [_vi(y)],
    )
    path = _save(tmp_path, model)
    out = tmp_path / "clean.model"
    assert main(["import", str(path), "-o", str(out)]) == 0
    text = out.read_text()
    assert '# onnx: in"put (run 1000)' in text
    assert main(["optimize", str(path), "-q", "--verify"]) == 0
