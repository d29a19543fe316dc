"""The ONNX importer reads a file as untrusted data (issue 16): external data may not
leave the model's folder (`..`, absolute paths, symlinks pointing out), and sizes are
bounded before anything is parsed or read."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from frontend.onnx import OnnxImportError, import_onnx, reader
from frontend.onnx.reader import MAX_EXTERNAL_BYTES, MAX_PROTOBUF_BYTES


def _saved(folder: Path, location: str = "w.bin") -> Path:
    """A MatMul model whose weight lives in external data `location` (as written)."""
    w = numpy_helper.from_array(np.arange(9, dtype=np.float32).reshape(3, 3), "w")
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["y"], name="mm")],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])],
        [w],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "m.onnx"
    onnx.save(model, str(path), save_as_external_data=True, location="w.bin", size_threshold=0)
    if location != "w.bin":
        loaded = onnx.load(str(path), load_external_data=False)
        for entry in loaded.graph.initializer[0].external_data:
            if entry.key == "location":
                entry.value = location
        onnx.save(loaded, str(path))
    return path


def test_external_data_next_to_the_model_imports(tmp_path: Path) -> None:
    imported = import_onnx(_saved(tmp_path))
    assert imported.arrays and all(a.shape == (3, 3) for a in imported.arrays.values())


def test_symlinked_external_data_is_refused(tmp_path: Path) -> None:
    secret = tmp_path / "secret.bin"
    secret.write_bytes(np.ones(9, np.float32).tobytes())
    path = _saved(tmp_path / "model")
    (tmp_path / "model" / "w.bin").unlink()
    (tmp_path / "model" / "w.bin").symlink_to(secret)
    with pytest.raises(OnnxImportError, match=r"'w\.bin', outside the model's folder"):
        import_onnx(path)
    # one that stays inside is refused too, by onnx itself: a clean error as well
    (tmp_path / "model" / "w.bin").unlink()
    secret.rename(tmp_path / "model" / "real.bin")
    (tmp_path / "model" / "w.bin").symlink_to(tmp_path / "model" / "real.bin")
    with pytest.raises(OnnxImportError, match="is a symbolic link"):
        import_onnx(path)


@pytest.mark.parametrize("location", ["../w.bin", "/etc/passwd", "sub/../../w.bin", "a\x00b"])
def test_locations_that_leave_the_folder_are_refused(tmp_path: Path, location: str) -> None:
    with pytest.raises(OnnxImportError) as info:
        import_onnx(_saved(tmp_path / "model", location))
    assert "outside the model's folder" in str(info.value) or "bad external data" in str(info.value)
    assert str(info.value).startswith(f"{tmp_path / 'model' / 'm.onnx'}: error: ")


def test_a_protobuf_over_the_limit_is_refused_before_parsing(tmp_path, monkeypatch) -> None:
    path = tmp_path / "m.onnx"
    path.write_bytes(b"\x00" * 1000)
    parsed = []
    monkeypatch.setattr(reader.onnx, "load", lambda *a, **k: parsed.append(a))
    monkeypatch.setenv("EQSAT_ONNX_MAX_BYTES", "999")
    with pytest.raises(OnnxImportError, match="the file is 1,000 bytes, over the limit of 999"):
        import_onnx(path)
    assert parsed == []
    assert MAX_PROTOBUF_BYTES == 2**31 - 1  # protobuf's own limit for one message


def test_external_data_over_the_limit_is_refused_before_reading(tmp_path, monkeypatch) -> None:
    path = _saved(tmp_path)
    monkeypatch.setenv("EQSAT_ONNX_MAX_EXTERNAL_BYTES", "35")  # the weight is 36 bytes
    with pytest.raises(OnnxImportError, match="external data over the limit of 35 bytes"):
        import_onnx(path)
    monkeypatch.setenv("EQSAT_ONNX_MAX_EXTERNAL_BYTES", "lots")
    with pytest.raises(Exception, match="EQSAT_ONNX_MAX_EXTERNAL_BYTES='lots': expected"):
        import_onnx(path)
    assert MAX_EXTERNAL_BYTES == 16 << 30


def test_constant_gather_indices_out_of_range_are_reported_at_the_node() -> None:
    data = numpy_helper.from_array(np.zeros((2, 4), np.int64), "data")
    index = numpy_helper.from_array(np.array([[0, 63501]], np.int64), "index")
    graph = helper.make_graph(
        [
            helper.make_node("GatherElements", ["data", "index"], ["g"], axis=1, name="ge"),
            helper.make_node("Cast", ["g"], ["y"], to=TensorProto.FLOAT, name="c"),
        ],
        "g",
        [],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 2])],
        [data, index],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    with pytest.raises(OnnxImportError, match="index 63501 is out of range for axis 1 of size 4"):
        import_onnx(model)
