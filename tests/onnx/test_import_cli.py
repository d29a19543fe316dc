"""`eqsat import` and the other commands on .onnx files: files written (model text and
params), params picked up without a flag, --check against ONNX Runtime, --dim
defaults, --static, --supported, and the Python entry points."""

from __future__ import annotations

import numpy as np
import pytest

from eqsat.cli import main
from eqsat.fileio import load_arrays
from frontend.onnx import import_onnx
from tests.onnx.helpers import MODEL_FILES, eqsat_run

pytestmark = pytest.mark.filterwarnings("ignore")
BERT = next(p for p in MODEL_FILES if p.stem == "bert_base_ts")
RESNET = next(p for p in MODEL_FILES if p.stem == "resnet18_ts")


def _outputs(path) -> dict:
    return load_arrays(path)


def test_import_writes_model_and_params_that_run_like_the_onnx_file(tmp_path, capsys):
    out = tmp_path / "bert.model"
    assert main(["import", str(BERT), "-o", str(out), "--dim", "S=9", "--dim", "B=2"]) == 0
    printed = capsys.readouterr().out
    assert "symbolic dimensions: B = 2, S = 9" in printed
    assert out.exists() and (tmp_path / "bert.params.npz").exists()
    text = out.read_text()
    assert "dim S = 9" in text and "input input_ids: i32[B, S]" in text
    # The params file next to the model is found without a flag.
    assert main(["run", str(out), "-o", str(tmp_path / "a.npz")]) == 0
    assert (
        main(["run", str(BERT), "--dim", "S=9", "--dim", "B=2", "-o", str(tmp_path / "b.npz")]) == 0
    )
    # The text model names outputs as statements; the ONNX file keeps ONNX names.
    (a,), (b,) = _outputs(tmp_path / "a.npz").values(), _outputs(tmp_path / "b.npz").values()
    np.testing.assert_array_equal(a, b)


def test_imported_text_binds_other_sizes(tmp_path):
    out = tmp_path / "bert.model"
    assert main(["import", str(BERT), "-o", str(out)]) == 0
    assert (
        main(["run", str(out), "--dim", "S=5", "--dim", "B=3", "-o", str(tmp_path / "o.npz")]) == 0
    )
    (value,) = _outputs(tmp_path / "o.npz").values()
    assert value.shape == (3, 5, 32)


def test_static_binds_every_dimension(tmp_path):
    out = tmp_path / "r.model"
    assert main(["import", str(RESNET), "--static", "--dim", "B=4", "-o", str(out)]) == 0
    text = out.read_text()
    assert "input input_: f32[4, 3, 32, 32]  # onnx: input" in text


def test_check_against_onnxruntime(tmp_path, capsys):
    pytest.importorskip("onnxruntime")
    assert main(["import", str(RESNET), "--check"]) == 0
    assert "vs ONNX Runtime" in capsys.readouterr().out
    out = tmp_path / "r.model"
    assert main(["import", str(RESNET), "--check", "--check-tol", "1e-30", "-o", str(out)]) == 1
    assert "differs from ONNX Runtime" in capsys.readouterr().err
    assert not out.exists()


def test_supported_lists_the_ops(capsys):
    assert main(["import", "--supported"]) == 0
    out = capsys.readouterr().out
    assert "ai.onnx (" in out and "LayerNormalization" in out and "com.microsoft (" in out


def test_optimize_onnx_writes_a_model_with_its_params(tmp_path):
    out = tmp_path / "opt.model"
    assert main(["optimize", str(BERT), "-q", "--verify", "-o", str(out)]) == 0
    assert (tmp_path / "opt.params.npz").exists()
    assert main(["run", str(out), "-o", str(tmp_path / "a.npz")]) == 0
    assert main(["run", str(BERT), "-o", str(tmp_path / "b.npz")]) == 0
    (a,), (b,) = _outputs(tmp_path / "a.npz").values(), _outputs(tmp_path / "b.npz").values()
    np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("command", [["check"], ["compile", "-q"]])
def test_other_commands_take_onnx(command, tmp_path, capsys):
    args = [*command, str(RESNET)]
    if command[0] == "compile":
        args += ["-o", str(tmp_path / "r.asm")]
    assert main(args) == 0


def test_unknown_dim_is_an_error(capsys):
    assert main(["run", str(RESNET), "--dim", "Q=3"]) == 1
    assert "has no dimension 'Q'" in capsys.readouterr().err


def test_import_onnx_api_and_save(tmp_path):
    import eqsat

    imported = eqsat.import_onnx(str(RESNET))
    assert (imported.inputs[0].onnx_name, imported.inputs[0].name) == ("input", "input_")
    written = imported.save(tmp_path / "r.model")
    assert written == tmp_path / "r.params.npz"
    assert (tmp_path / "r.model").read_text().startswith("model ")


def test_from_torch(tmp_path):
    torch = pytest.importorskip("torch", reason="from_torch needs torch (the [zoo] extra)")
    import eqsat

    class Block(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = torch.nn.Linear(8, 4)

        def forward(self, x):
            return torch.nn.functional.gelu(self.fc(x)).softmax(-1)

    block = Block().eval()
    x = torch.randn(3, 8)
    imported = eqsat.from_torch(block, (x,), dynamic={"x": {0: "B"}})
    assert imported.dims == {"B": 3}
    imported.save(tmp_path / "block.model")
    np.savez(tmp_path / "in.npz", x=x.numpy())
    args = ["run", str(tmp_path / "block.model"), "--inputs", str(tmp_path / "in.npz")]
    assert main([*args, "-o", str(tmp_path / "o.npz")]) == 0
    (got,) = _outputs(tmp_path / "o.npz").values()
    with torch.no_grad():
        want = block(x).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize(("exporter", "opset"), [("torchscript", 13), ("dynamo", 18)])
def test_export_onnx_opset(tmp_path, exporter, opset):
    torch = pytest.importorskip("torch", reason="export_onnx needs torch (the [zoo] extra)")
    import onnx

    from frontend.torch_export import export_onnx

    layer = torch.nn.Linear(16, 8).eval()
    path = export_onnx(layer, (torch.randn(2, 16),), tmp_path / "fc.onnx", None, exporter, opset)
    model = onnx.load(str(path))
    assert {o.version for o in model.opset_import if o.domain in ("", "ai.onnx")} == {opset}


@pytest.mark.parametrize("limit", [0, 1 << 30])
def test_export_onnx_keeps_large_weights_external(tmp_path, monkeypatch, limit):
    """Weights over the inline limit stay in the exporter's external data file next to
    the model, which the import reads; under it they move into the one file."""
    torch = pytest.importorskip("torch", reason="export_onnx needs torch (the [zoo] extra)")
    import onnx
    from onnx import external_data_helper

    from frontend import torch_export

    monkeypatch.setattr(torch_export, "INLINE_LIMIT", limit)
    layer = torch.nn.Linear(64, 32).eval()
    path = torch_export.export_onnx(
        layer, (torch.randn(2, 64),), tmp_path / "fc.onnx", None, "dynamo"
    )
    model = onnx.load(str(path), load_external_data=False)
    external = any(external_data_helper.uses_external_data(t) for t in model.graph.initializer)
    assert external == (limit == 0)
    assert (tmp_path / "fc.onnx.data").exists() == external
    x = np.random.default_rng(0).normal(size=(2, 64)).astype(np.float32)
    (got,) = eqsat_run(import_onnx(path), {"input": x}).values()
    with torch.no_grad():
        want = layer(torch.from_numpy(x)).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_import_pt2(tmp_path):
    torch = pytest.importorskip("torch", reason="reading .pt2 needs torch (the [zoo] extra)")

    class Tiny(torch.nn.Module):
        def forward(self, x):
            return torch.relu(x) * 2.0

    program = torch.export.export(Tiny(), (torch.randn(2, 5),))
    path = tmp_path / "tiny.pt2"
    torch.export.save(program, str(path))
    out = tmp_path / "tiny.model"
    assert main(["import", str(path), "-o", str(out)]) == 1  # pickle: not without consent
    assert not out.exists()
    assert main(["import", str(path), "-o", str(out), "--trust-pickle"]) == 0
    assert "relu" in out.read_text()
