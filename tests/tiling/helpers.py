"""Shared pieces of the tiling tests: one-kernel graphs, the tiles a program runs."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from eqsat.ir.graph import Graph, GraphBuilder
from eqsat.ir.types import DType, TensorType
from hwsim.isa import Matmul

ROOT = Path(__file__).resolve().parents[2]
TINY_SRAM = str(ROOT / "tests" / "data" / "tiny_sram.toml")


def f32(*shape: int) -> TensorType:
    return TensorType(DType.F32, tuple(shape))


def one_op(op: str, types: Sequence[TensorType], **attrs) -> Graph:
    """y = op(a, b, ...) on fresh inputs (the first an input, the rest params)."""
    b = GraphBuilder("one_op")
    leaves = [b.leaf("input" if i == 0 else "param", f"v{i}", t) for i, t in enumerate(types)]
    b.output("y", b.add(op, tuple(leaves), attrs))
    return b.graph


def gemm_tiles(program) -> set[tuple[int, int, int]]:
    """(rows, cols, depth) of every Matmul instruction: a is rows x depth, b depth x cols."""
    return {(i.a.rows, i.b.cols, i.a.cols) for i in program.instrs if isinstance(i, Matmul)}


def largest_tile(program) -> tuple[int, int, int]:
    tiles = gemm_tiles(program)
    return max(t[0] for t in tiles), max(t[1] for t in tiles), max(t[2] for t in tiles)
