"""Where int8 noise enters a model: end-to-end SQNR with its matmul/conv inputs and
weights quantized by chosen schemes, one part at a time (fake quantization: the
quantized numbers in f32, the rest of the model exact), on the seed-0 input.

Run: python bench/quant_noise.py MODEL CONFIG... (CONFIG = ACT/WEIGHT, or k:ACT/WEIGHT for
the same per layer kind: layer names with digits masked, each kind alone and all but it)

ACT: none; minmax, mse (per tensor, asymmetric, calibrated on 4 seeded samples as
`--quantize int8`); row (dynamic symmetric per row); self (per tensor from this very
tensor); rot + one of these (Hadamard-rotated input, H^T w weights, as `--rotate`).
WEIGHT: none; ch (symmetric per output channel, as `--quantize int8`); chmse (the
per-channel clip with the least squared error); gN (a scale per N rows per column).
"""

from __future__ import annotations

import collections
import math
import re
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from eqsat.interpreter import _evaluate_node, evaluate_nodes, narrow
from eqsat.loading import load_model
from eqsat.ops.rotation import hadamard, hadamard_rows
from eqsat.quant.calibrate import calibration_samples, observed_values
from eqsat.quant.calibration_methods import choose_range
from eqsat.quant.passes import quantizable_convs, quantizable_matmuls
from eqsat.quant.qparams import activation_qparams


def qdq(x: np.ndarray, s, z) -> np.ndarray:
    return ((np.clip(np.rint(x / s) + z, -128, 127) - z) * s).astype(np.float32)


def symmetric(x: np.ndarray, m: np.ndarray) -> np.ndarray:
    s = np.where(m > 0, m / 127, 1)
    return (np.clip(np.rint(x / s), -127, 127) * s).astype(np.float32)


class Noise:
    def __init__(self, path: str) -> None:
        loaded = load_model(path)
        g = self.g = loaded.graph
        self.bindings = loaded.bindings(0)
        names = {str(n.attr("name")) for _, n in g.params}
        params = {k: v for k, v in self.bindings.items() if k in names}
        self.layers = sorted(quantizable_matmuls(g, params) + quantizable_convs(g, params))
        acts = sorted({g.nodes[i].inputs[0] for i in self.layers})
        values = observed_values(g, acts, calibration_samples(g, None), params)
        self.ranges = {
            m: {j: choose_range(values[j].reshape(-1), m, 99.99) for j in acts}
            for m in ("minmax", "mse")
        }
        del values
        self.ref = evaluate_nodes(g, self.bindings)

    def act(self, j: int, x: np.ndarray, mode: str) -> np.ndarray:
        if mode == "none":
            return x
        if mode in ("minmax", "mse"):
            return qdq(x, *activation_qparams(*self.ranges[mode][j]))
        if mode == "self":
            return qdq(x, *activation_qparams(float(x.min()), float(x.max())))
        if mode == "row":
            return symmetric(x, np.abs(x).max(axis=-1, keepdims=True))
        raise SystemExit(f"unknown activation scheme {mode}")

    @staticmethod
    def weight(w: np.ndarray, conv: bool, mode: str) -> np.ndarray:
        w = np.asarray(w, dtype=np.float32)
        if mode == "none":
            return w
        if conv or mode == "ch":
            axes = (1, 2, 3) if conv else (0,)
            return symmetric(w, np.abs(w).max(axis=axes, keepdims=True))
        if mode == "chmse":
            m = np.abs(w).max(axis=0, keepdims=True)
            best, err = w, np.full(m.shape, np.inf)
            for f in np.linspace(0.6, 1.0, 21):
                q = symmetric(w, m * f)
                e = ((q - w) ** 2).sum(axis=0, keepdims=True)
                best, err = np.where(e < err, q, best), np.minimum(e, err)
            return best
        if mode.startswith("g"):
            k, n = w.shape
            group = int(mode[1:]) if k % int(mode[1:]) == 0 else k
            r = w.reshape(k // group, group, n)
            return symmetric(r, np.abs(r).max(axis=1, keepdims=True)).reshape(k, n)
        raise SystemExit(f"unknown weight scheme {mode}")

    def sqnr(self, amode: str, wmode: str, only=None) -> list[float]:
        g, values = self.g, list(self.ref)
        chosen = set(self.layers if only is None else only)
        for i, node in g:
            if node.op in ("param", "input", "const"):
                continue
            if i not in chosen:
                values[i] = _evaluate_node(node, values, self.bindings, g.constants)
                continue
            j = node.inputs[0]
            x, w = values[j], np.asarray(values[node.inputs[1]], dtype=np.float32)
            mode = amode
            if mode.startswith("rot"):
                block = 128
                while x.shape[-1] % block:
                    block //= 2
                x, w, mode = hadamard(x, block), hadamard_rows(w, block), mode[3:]
            ins = [self.act(j, x, mode), self.weight(w, node.op == "conv2d", wmode)]
            values[i] = narrow(node.opdef.ref(ins, node.attr_dict), node.type.dtype)
        out = []
        for _, o in g.outputs:
            r = np.asarray(self.ref[o], np.float64)
            e = float(((r - np.asarray(values[o], np.float64)) ** 2).sum())
            out.append(math.inf if e == 0 else round(10 * math.log10(float((r * r).sum()) / e), 2))
        return out

    def kinds(self, amode: str, wmode: str) -> None:
        by = collections.defaultdict(list)
        for i in self.layers:
            by[re.sub(r"\d+", "#", self.g.nodes[i].name or "%")].append(i)
        print(f"by kind, act={amode} weight={wmode}: all {self.sqnr(amode, wmode)} dB")
        for kind, members in by.items():
            rest = [i for i in self.layers if i not in members]
            print(
                f"  {kind:60s} n={len(members):3d}: alone {self.sqnr(amode, wmode, members)}, "
                f"all but it {self.sqnr(amode, wmode, rest)}",
                flush=True,
            )


def main() -> int:
    if len(sys.argv) < 3:
        print(__doc__)
        return 2
    noise = Noise(sys.argv[1])
    for config in sys.argv[2:]:
        by_kind = config.startswith("k:")
        amode, wmode = config.removeprefix("k:").split("/")
        t = time.perf_counter()
        if by_kind:
            noise.kinds(amode, wmode)
        else:
            print(f"act={amode:10s} weight={wmode:6s}: {noise.sqnr(amode, wmode)} dB", flush=True)
        print(f"  ({time.perf_counter() - t:.0f} s)", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
