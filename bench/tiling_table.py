"""Tiling chosen by extraction vs every tile tried on the simulator, per BERT-base matmul.

Run: /work/venv/bin/python bench/tiling_table.py [edge] [datacenter] [--seq 128] [--jobs 2]

The BERT-base layer (examples/bert_layer.model) is optimized with the default rules
(tiling.rules included) for each preset. Every matrix kernel of the result (a matmul,
or a fused kernel around one) is then compiled on its own - the same op, operand types
and attributes, fresh inputs - once with the tile extraction chose and once with every
tile of the exhaustive set, and simulated. The exhaustive set is every [TM, TN, TK]
with each size a power-of-two multiple of the array (or the whole dimension) that the
backend can fit (SRAM with at least one output slot, the accumulator); the backend
emits exactly the node's tile. Prints, per kernel: the chosen tile and its simulated
cycles, the best tile found and its cycles, and the gap (acceptance: within 10%).
"""

from __future__ import annotations

import argparse
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from backend import compile_graph  # noqa: E402
from backend.gemm import Gemm, sram_need  # noqa: E402
from backend.gemm_kernel import MARGIN  # noqa: E402
from eqsat.costs import kernel_work  # noqa: E402
from eqsat.interpreter import random_bindings  # noqa: E402
from eqsat.ir.graph import Graph, GraphBuilder  # noqa: E402
from eqsat.ir.types import TensorType  # noqa: E402
from eqsat.ops import REGISTRY  # noqa: E402
from eqsat.pipeline import optimize  # noqa: E402
from eqsat.rulesets import DEFAULT_RULES_DIR, compile_rule_paths  # noqa: E402
from eqsat.tiling import node_tile  # noqa: E402
from frontend import load_model  # noqa: E402
from hwsim import load_hardware, simulate  # noqa: E402
from hwsim.costmodel import pow2_multiples  # noqa: E402
from hwsim.dtypes import ITEMSIZE  # noqa: E402
from hwsim.hardware import Hardware  # noqa: E402

TOLERANCE = 0.10


@dataclass(frozen=True)
class Kernel:
    """One matrix kernel of an optimized graph: op, operand types, attributes."""

    op: str
    in_types: tuple[TensorType, ...]
    attrs: tuple[tuple[str, object], ...]  # without the tile
    tile: tuple[int, int, int] | None  # what extraction chose (None: the backend's)
    count: int = 1  # how many nodes of the graph are this kernel

    @property
    def label(self) -> str:
        shapes = " x ".join("[" + ",".join(map(str, t.shape)) + "]" for t in self.in_types[:2])
        return f"{self.op} {shapes}"

    def gemm(self) -> tuple[int, int, int, int]:
        """(batch, M, N, K) as the cost model sees it."""
        out = REGISTRY[self.op].type_of(self.in_types, dict(self.attrs))
        w = kernel_work(self.op, self.in_types, out, dict(self.attrs))
        assert w is not None
        return w.batch, w.m, w.n, w.k


def matrix_kernels(graph: Graph) -> list[Kernel]:
    """The graph's kernels with a GEMM loop, one entry per distinct kernel."""
    found: dict[tuple, Kernel] = {}
    for _, node in graph:
        if node.opdef.attr_spec("tile") is None:
            continue
        ins = tuple(graph.nodes[j].type for j in node.inputs)
        rest = tuple((k, v) for k, v in node.attrs if k != "tile")
        key = (node.op, ins, rest, node_tile(node.attr_dict))
        k = found.get(key)
        found[key] = Kernel(node.op, ins, rest, key[3], 1 if k is None else k.count + 1)
    return list(found.values())


def kernel_graph(k: Kernel, tile: tuple[int, int, int] | None) -> Graph:
    b = GraphBuilder("kernel")
    leaves = [
        b.leaf("input" if i == 0 else "param", name, t)
        for i, (name, t) in enumerate(zip(REGISTRY[k.op].operands, k.in_types, strict=True))
    ]
    attrs = dict(k.attrs)
    if tile is not None:
        attrs["tile"] = tile
    b.output("y", b.add(k.op, tuple(leaves), attrs))
    return b.graph


def simulated_cycles(hw: Hardware, k: Kernel, tile: tuple[int, int, int] | None) -> int:
    graph = kernel_graph(k, tile)
    compiled = compile_graph(graph, hw)
    feeds = compiled.feeds(random_bindings(graph, 0))
    return simulate(compiled.program, hw, feeds, check_races=False).report.cycles


def exhaustive_tiles(hw: Hardware, k: Kernel) -> list[tuple[int, int, int]]:
    """Every power-of-two multiple of the array (or the whole dimension) per tile size
    that fits the accumulator and SRAM with one output slot (the backend's minimum).
    Conv kernels are tiled per image, as the backend runs them."""
    _, m, n, kk = k.gemm()
    if k.op.startswith("conv"):
        out = REGISTRY[k.op].type_of(k.in_types, dict(k.attrs))
        m = out.shape[2] * out.shape[3]
    s = ITEMSIZE[k.in_types[0].dtype.value]
    so = 4 if k.in_types[0].dtype.value == "i8" else s
    g = Gemm((), m, n, kk, k.in_types[0].dtype.value, "f32")
    tiles = []
    for tm in pow2_multiples(hw.array_rows, m):
        for tn in pow2_multiples(hw.array_cols, n):
            if 4 * tm * tn > hw.acc_bytes:
                continue
            for tk in pow2_multiples(hw.array_rows, kk):
                if sram_need(g, (tm, tn, tk), (s, s, so, 0), "nn", 1) + MARGIN <= hw.sram_bytes:
                    tiles.append((tm, tn, tk))
    return tiles


@dataclass(frozen=True)
class Row:
    kernel: Kernel
    chosen: tuple[int, int, int] | None
    chosen_cycles: int
    best: tuple[int, int, int] | None
    best_cycles: int
    tried: int

    @property
    def gap(self) -> float:
        return self.chosen_cycles / self.best_cycles - 1


def _job(args) -> tuple[tuple[int, int, int] | None, int]:
    spec, k, tile = args  # a preset name or TOML path: Hardware does not pickle
    return tile, simulated_cycles(load_hardware(spec), k, tile)


def compare(spec: str, k: Kernel, tiles=None, jobs: int = 1) -> Row:
    """Simulate the chosen tile and every tile of `tiles` (default: the exhaustive set)
    on hardware `spec` (a preset name or a TOML path)."""
    hw = load_hardware(spec)
    tiles = exhaustive_tiles(hw, k) if tiles is None else tiles
    work = [(spec, k, t) for t in tiles]
    if jobs > 1:
        with ProcessPoolExecutor(jobs) as pool:
            results = dict(pool.map(_job, work, chunksize=4))
    else:
        results = dict(map(_job, work))
    chosen = simulated_cycles(hw, k, k.tile)
    results.setdefault(k.tile, chosen)
    best = min(results, key=lambda t: (results[t], t is None, t or ()))
    return Row(k, k.tile, chosen, best, results[best], len(tiles))


def optimized_bert(hw: Hardware, seq: int) -> Graph:
    _, graph = load_model(ROOT / "examples" / "bert_layer.model", {"S": seq})
    return optimize(graph, compile_rule_paths([DEFAULT_RULES_DIR]), hw).graph


def _fmt(tile) -> str:
    return "backend" if tile is None else "[" + ", ".join(map(str, tile)) + "]"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("presets", nargs="*", default=["edge", "datacenter"])
    ap.add_argument("--seq", type=int, default=128)
    ap.add_argument("--jobs", type=int, default=2)
    args = ap.parse_args()
    worst = 0.0
    for name in args.presets:
        hw = load_hardware(name)
        t0 = time.perf_counter()
        graph = optimized_bert(hw, args.seq)
        print(f"\n{name}: BERT-base layer, S={args.seq}")
        header = f"{'kernel':52} {'n':>2} {'chosen tile':>18} {'cycles':>10} "
        header += f"{'best of tried':>18} {'cycles':>10} {'tried':>5} {'gap':>6}"
        print(header)
        for k in matrix_kernels(graph):
            row = compare(name, k, jobs=args.jobs)
            worst = max(worst, row.gap)
            print(
                f"{k.label:52} {k.count:>2} {_fmt(row.chosen):>18} {row.chosen_cycles:>10,} "
                f"{_fmt(row.best):>18} {row.best_cycles:>10,} {row.tried:>5} {row.gap:>6.1%}"
            )
        print(f"({time.perf_counter() - t0:.0f} s)")
    verdict = "within" if worst <= TOLERANCE else "NOT within"
    print(f"\nworst gap {worst:.1%}: {verdict} {TOLERANCE:.0%} of the best tile tried")
    sys.exit(0 if worst <= TOLERANCE else 1)


if __name__ == "__main__":
    main()
