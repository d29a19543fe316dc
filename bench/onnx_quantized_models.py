"""The zoo's ResNet-18 and BERT quantized by ONNX Runtime, cached next to the zoo.

`quantized_files(name)` writes (once) three quantized copies of the cached export
~/.cache/eqsat/zoo/NAME-*.onnx into ~/.cache/eqsat/zoo/quantized/: `quantize_static`
in the QDQ and QOperator formats (ORT's defaults: uint8 asymmetric activations, int8
symmetric weights, here per channel) calibrated on a few seeded inputs, and
`quantize_dynamic`. bench/onnx_quantized.py imports and measures them.

Run alone: python bench/onnx_quantized_models.py [NAMES]  (default: resnet18 bert_base)
"""

from __future__ import annotations

import logging
import sys
from pathlib import Path

import numpy as np

ZOO = Path.home() / ".cache" / "eqsat" / "zoo"
OUT = ZOO / "quantized"
FORMATS = ("qdq", "qoperator", "dynamic")
# The sizes the calibration and the comparison run at (dynamic axes).
DIMS = {"resnet18": {"B": 1}, "bert_base": {"B": 1, "S": 16}}


def source_file(name: str) -> Path:
    found = sorted(ZOO.glob(f"{name}-*.onnx"))
    if not found:
        raise FileNotFoundError(f"{name}: no cached export in {ZOO} (run bench/zoo.py)")
    return found[0]


def sample_feeds(model_path: Path, dims: dict[str, int], seed: int) -> dict[str, np.ndarray]:
    """Seeded inputs: floats standard normal; int64 ids in [0, 1000); masks of ones."""
    import onnx

    model = onnx.load(str(model_path), load_external_data=False)
    init = {t.name for t in model.graph.initializer}
    rng = np.random.default_rng(seed)
    feeds = {}
    for vi in model.graph.input:
        if vi.name in init:
            continue
        tt = vi.type.tensor_type
        shape = [d.dim_value or dims.get(d.dim_param, 1) for d in tt.shape.dim]
        if tt.elem_type == onnx.TensorProto.FLOAT:
            feeds[vi.name] = rng.standard_normal(shape).astype(np.float32)
        elif "mask" in vi.name:
            feeds[vi.name] = np.ones(shape, dtype=np.int64)
        else:
            feeds[vi.name] = rng.integers(0, 1000, shape).astype(np.int64)
    return feeds


class _Reader:
    """onnxruntime's CalibrationDataReader protocol over a few seeded samples."""

    def __init__(self, path: Path, dims: dict[str, int], samples: int = 4):
        self._it = iter([sample_feeds(path, dims, 100 + k) for k in range(samples)])

    def get_next(self):
        return next(self._it, None)


def quantized_files(name: str) -> dict[str, Path]:
    """{format: path} of the quantized copies of zoo model NAME (made if missing)."""
    from onnxruntime.quantization import QuantFormat, quantize_dynamic, quantize_static

    logging.getLogger().setLevel(logging.ERROR)
    src = source_file(name)
    OUT.mkdir(parents=True, exist_ok=True)
    out = {f: OUT / f"{src.stem}.{f}.onnx" for f in FORMATS}
    dims = DIMS.get(name, {})
    for fmt in ("qdq", "qoperator"):
        if not out[fmt].exists():
            quant_format = QuantFormat.QDQ if fmt == "qdq" else QuantFormat.QOperator
            quantize_static(
                str(src),
                str(out[fmt]),
                _Reader(src, dims),
                quant_format=quant_format,
                per_channel=True,
            )
    if not out["dynamic"].exists():
        quantize_dynamic(str(src), str(out["dynamic"]))
    return out


if __name__ == "__main__":
    for model_name in sys.argv[1:] or ["resnet18", "bert_base"]:
        for fmt, path in quantized_files(model_name).items():
            print(f"{model_name} {fmt}: {path} ({path.stat().st_size / 1e6:.1f} MB)")
