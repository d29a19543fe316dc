"""A model too large to run here: shapes-only work succeeds, running it says why not."""

from __future__ import annotations

from eqsat.cli import main
from tests.blocks.models import stacked_model


def test_a_model_whose_params_do_not_fit_optimizes_but_is_not_run(tmp_path, capsys, monkeypatch):
    model = tmp_path / "big.model"
    model.write_text(stacked_model(3, d=64, ffn=128))
    monkeypatch.setenv("EQSAT_MAX_MODEL_BYTES", str(64 * 1024))  # "this machine": 64 KiB free
    assert main(["optimize", str(model), "-q", "--no-cache"]) == 0
    capsys.readouterr()
    for command in (["run", str(model)], ["simulate", str(model), "-q", "--no-cache"]):
        assert main(command) == 1
        err = capsys.readouterr().err
        assert "model stack: its inputs and params take 0.0 GiB, more than the 0.0 GiB" in err
        assert "optimize, compile and roofline work from its shapes alone" in err
