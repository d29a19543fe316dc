"""The analytic cost model: formulas pinned to hand-computed numbers, and its invariants."""

import dataclasses

import pytest
from hwsim_tiny import TINY
from hypothesis import given, settings
from hypothesis import strategies as st

from hwsim import KernelWork, kernel_cycles, load_hardware, program_cycles, roofline_cycles
from hwsim.costmodel import matmul_tiling_cost

MM8 = KernelWork("matmul", "i8", macs=512, m=8, n=8, k=8, bytes_in=128, bytes_out=64)


def test_roofline():
    # matrix 1600/16 + 40/4 = 110; vector 40/4 = 10; dram 100/4 = 25
    assert roofline_cycles(TINY, {"i8": 1600, "f32": 40}, 40, 100) == 110
    assert roofline_cycles(TINY, {}, 0, 401) == 101


def test_matmul_one_tile():
    # tile 8x8x8: matmul 1 + 4 folds * 8 + 8 = 41; move 1 + 64/4 = 17
    # dma = max(channel 192/4 = 48, load queue 2 + 32, engines (3*10 + 48) / 2 = 39) = 48
    # total = launch 100 + max(58, 48) + 2*10 + hidden 48 / 1 step
    c = matmul_tiling_cost(TINY, MM8, (8, 8, 8), replay=False)  # the closed form
    assert (c.compute_cycles, c.matrix_cycles, c.vector_cycles) == (58, 41, 17)
    assert (c.dma_cycles, c.dram_bytes, c.cycles) == (48, 192, 226)


def test_matmul_rereads_operands():
    # 2x2x2 tiles of 4: A read nN = 2 times, B read nM = 2 times
    c = matmul_tiling_cost(TINY, MM8, (4, 4, 4), replay=False)
    assert c.dram_bytes == 128 + 64 + 64 + 64
    # 8 matmuls of 1 + 4 + 8 = 13; 4 moves of 1 + 4
    assert (c.matrix_cycles, c.compute_cycles) == (104, 124)
    # 16 loads + 4 stores: engines bound (20*10 + 80) / 2 = 140
    assert c.dma_cycles == 140
    assert c.cycles == 100 + 140 + 20 + 16  # ceil(124 / 8 steps) rounded with the rest


def test_matmul_picks_the_cheapest_tile():
    # closed form (4,8,8): 2 matmuls of 25, 2 moves of 9 -> 68; dma (5*10 + 48)/2 = 49 -> 213
    assert matmul_tiling_cost(TINY, MM8, (4, 8, 8), replay=False).cycles == 213
    # replayed on the queues (hwsim/gemm_queues.py): A0 load 0-9 (lands 19), B 9-26
    # (36), A1 26-35 (45); matmul 36-61, move 61-70, store 70-79 (lands 89); matmul
    # 70-95, move 95-104, store 104-113 (lands 123): launch 100 + 123
    assert matmul_tiling_cost(TINY, MM8, (4, 8, 8)).cycles == 223
    # (8, 4, 8) starts sooner: its first K step in two pieces (first_pieces), A's and
    # B's first halves land at 19 and 24, the first piece's product runs 24-41 while the
    # second halves land (38, 43), the second's 43-60; move 60-69, store 69-78; the next
    # output tile's B loads 41-50 (lands 60): matmul 69-94, move 94-103, store 103-112
    # (lands 122): launch 100 + 122
    c = kernel_cycles(TINY, MM8)
    assert c.tile == (8, 4, 8) and c.cycles == 222 and c.feasible
    assert c.cycles < matmul_tiling_cost(TINY, MM8, (8, 8, 8)).cycles


def test_vector_kernel():
    # 64 f32 in and out, 4 ops per element, rows of 16 bytes: 2 chunks of 256 bytes
    w = KernelWork(
        "vector", "f32", vector_ops=256, bytes_in=256, bytes_out=256, working_set_bytes=16
    )
    c = kernel_cycles(TINY, w)
    assert c.compute_cycles == 64 + 2 * 4  # ceil(256/4) + issue per instruction
    assert c.dma_cycles == 128
    assert c.cycles == 100 + 128 + 20 + 36


def test_spill_makes_overflowing_fusion_lose():
    hw = load_hardware("edge")
    m, n, k = 128, 4096, 64
    mm = KernelWork(
        "matmul",
        "f32",
        macs=m * n * k,
        m=m,
        n=n,
        k=k,
        bytes_in=(m * k + k * n) * 4,
        bytes_out=m * n * 4,
    )
    softmax = KernelWork(
        "vector",
        "f32",
        vector_ops=m * n * 10,
        bytes_in=m * n * 4,
        bytes_out=m * n * 4,
        working_set_bytes=n * 4,
    )
    unfused = program_cycles(hw, [mm, softmax])
    # fused: the whole 16-row block of scores must stay in SRAM: 256 KiB, too big
    fused = dataclasses.replace(mm, vector_ops=m * n * 10, working_set_bytes=16 * n * 4)
    cost = kernel_cycles(hw, fused)
    assert not cost.feasible and cost.spill_bytes > 0
    assert cost.cycles > unfused
    # the same fusion with short rows fits and wins
    small = dataclasses.replace(fused, working_set_bytes=16 * 256 * 4)
    assert kernel_cycles(hw, small).feasible


def test_vector_spill():
    w = KernelWork(
        "vector", "f32", vector_ops=4096, bytes_in=4096, bytes_out=4096, working_set_bytes=2048
    )
    c = kernel_cycles(TINY, w)
    assert not c.feasible and c.spill_bytes == 2 * 2 * (4096 + 4096 + 2048)


def test_bad_work():
    with pytest.raises(ValueError, match="unknown kernel kind"):
        kernel_cycles(TINY, KernelWork("gemm", "f32"))
    with pytest.raises(ValueError, match="positive m, n, k"):
        kernel_cycles(TINY, KernelWork("matmul", "f32", macs=10))
    with pytest.raises(ValueError, match="matrix unit"):
        kernel_cycles(TINY, KernelWork("matmul", "i32", m=1, n=1, k=1))


dims = st.integers(1, 300)


@settings(max_examples=60, deadline=None)
@given(
    dims,
    dims,
    dims,
    st.integers(1, 4),
    st.sampled_from(["i8", "bf16", "f32"]),
    st.integers(0, 10**6),
    st.sampled_from(["edge", "datacenter"]),
)
def test_never_below_roofline(m, n, k, batch, dtype, vops, hw_name):
    hw = load_hardware(hw_name)
    s = {"i8": 1, "bf16": 2, "f32": 4}[dtype]
    macs = m * n * k * batch
    w = KernelWork(
        "matmul",
        dtype,
        macs=macs,
        m=m,
        n=n,
        k=k,
        batch=batch,
        vector_ops=vops,
        bytes_in=(m * k + k * n) * s * batch,
        bytes_out=m * n * s * batch,
    )
    c = kernel_cycles(hw, w)
    assert c.cycles >= roofline_cycles(hw, {dtype: macs}, vops, w.bytes_in + w.bytes_out)
    assert c.dram_bytes >= w.bytes_in + w.bytes_out


def test_conv_is_an_implicit_gemm_with_unbatched_weights():
    # 3x3 conv, 8 -> 16 channels, 2 images of 16x16 output: M = 2*256, N = 16, K = 72
    m, n, k = 2 * 256, 16, 72
    weights = k * n * 2
    w = KernelWork("conv", "bf16", macs=m * n * k, m=m, n=n, k=k,
                   bytes_in=2 * 18 * 18 * 8 * 2 + weights, bytes_out=m * n * 2)  # fmt: skip
    c = kernel_cycles(load_hardware("edge"), w)
    assert c.feasible and c.matrix_cycles > 0
    assert c.dram_bytes >= w.bytes_in + w.bytes_out
