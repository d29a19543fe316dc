"""Regenerate the ONNX control-flow test models (needs torch; run with the zoo venv):

    /work/zoovenv/bin/python tests/data/onnx/control/make_control.py

- if_cond.onnx: torch.cond (the dynamo exporter) -> an ONNX If whose condition is data
  (the sign of the input's sum) and whose branches are different small MLPs.
- loop_script.onnx: a torch.jit.script while loop (the TorchScript exporter) -> an ONNX
  Loop with a data-dependent trip count (`i < n and sum(h) < limit`: the `and` becomes
  an If inside the body, and one before the loop).
"""

from __future__ import annotations

from pathlib import Path

import torch

HERE = Path(__file__).parent


class CondNet(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.a = torch.nn.Linear(8, 8)
        self.b = torch.nn.Linear(8, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        def then(x: torch.Tensor) -> torch.Tensor:
            return torch.relu(self.a(x))

        def orelse(x: torch.Tensor) -> torch.Tensor:
            return torch.tanh(self.b(x)) * 2.0

        return torch.cond(x.sum() > 0, then, orelse, (x,))


class LoopNet(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.cell = torch.nn.Linear(8, 8)

    def forward(self, x: torch.Tensor, n: int) -> torch.Tensor:
        h = x
        i = 0
        while i < n and bool(h.sum() < 20.0):
            h = torch.tanh(self.cell(h)) + h
            i += 1
        return h


def main() -> None:
    torch.manual_seed(0)
    x = torch.randn(2, 8)
    torch.onnx.export(
        CondNet().eval(), (x,), str(HERE / "if_cond.onnx"), dynamo=True, external_data=False
    )
    torch.onnx.export(
        torch.jit.script(LoopNet().eval()),
        (x, torch.tensor(5)),
        str(HERE / "loop_script.onnx"),
        dynamo=False,
        input_names=["x", "n"],
        output_names=["h"],
    )


if __name__ == "__main__":
    main()
