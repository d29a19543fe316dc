"""Per-instruction cycle formulas, pinned to hand-computed numbers on the tiny machine."""

from hwsim_tiny import TINY

from hwsim import timing
from hwsim.isa import Binary, DramRef, Kernel, Load, Matmul, Reduce, Store, Tile, Unary


def test_dma():
    assert timing.dma_transfer_cycles(TINY, 10) == 3  # ceil(10 / 4)
    assert timing.dma_transfer_cycles(TINY, 0) == 1
    assert timing.dma_cycles(TINY, 10) == 1 + 3


def test_matmul_native_rate():
    # i8: 1 fold, stream max(8 rows, 4) + fill/drain 4+4, issue 1
    assert timing.matmul_cycles(TINY, "i8", 8, 4, 4) == 1 + 8 + 8
    # fewer rows than the array: preload of the weights dominates each fold
    assert timing.matmul_cycles(TINY, "i8", 2, 4, 4) == 1 + 4 + 8


def test_matmul_folds_and_padding():
    # f32 at 1/4 rate (4 passes), K=8 and N=6 pad to 2x2 folds
    assert timing.matmul_folds(TINY, 6, 8) == 4
    assert timing.matmul_cycles(TINY, "f32", 8, 6, 8) == 1 + 4 * (8 * 4) + 8
    assert timing.matmul_cycles(TINY, "bf16", 3, 4, 5) == 1 + 2 * max(3 * 2, 4) + 8


def test_vector_and_reduce():
    assert timing.vector_cycles(TINY, 10, "add") == 1 + 3
    assert timing.vector_cycles(TINY, 10, "exp") == 1 + 10  # 4 passes: ceil(40 / 4)
    assert timing.reduce_cycles(TINY, 3, 5) == 1 + 4 + 2  # ceil(15/4) + log2(4)


def test_instruction_cost_units():
    t = Tile("sram", 0, 4, 4, "f32")
    acc = Tile("acc", 0, 4, 4, "f32")
    ref = DramRef("x", 0, 3, 4, 4)
    assert timing.instruction_cost(TINY, Load(dst=t, src=ref)) == ("load", 1 + 12)
    assert timing.instruction_cost(TINY, Store(dst=ref, src=t)) == ("store", 1 + 12)
    assert timing.instruction_cost(TINY, Matmul(acc=acc, a=t, b=t)) == ("matrix", 1 + 16 + 8)
    assert timing.instruction_cost(TINY, Unary(op="gelu", dst=t, src=t)) == ("vector", 1 + 24)
    assert timing.instruction_cost(TINY, Binary(op="add", dst=t, a=t, imm=1.0)) == ("vector", 5)
    col = Tile("sram", 64, 4, 1, "f32")
    assert timing.instruction_cost(TINY, Reduce(op="sum", dst=col, src=t)) == ("vector", 7)
    assert timing.instruction_cost(TINY, Kernel(name="k")) == ("launch", 100)
