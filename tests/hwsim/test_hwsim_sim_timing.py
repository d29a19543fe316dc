"""Simulator timing pinned to hand-computed cycles on the tiny machine (see hwsim_tiny)."""

import numpy as np
from hwsim_tiny import TINY

from hwsim import parse, simulate

X = {"x": np.arange(16, dtype=np.float32).reshape(4, 4)}


def run(text, inputs=None):
    head = ".input x f32 [4, 4]\n.input b i8 [1, 12]\n.output y f32 [8, 4]\n"
    feeds = {"x": X["x"], "b": np.zeros((1, 12), np.int8), **(inputs or {})}
    return simulate(parse(head + text, "t.asm"), TINY, feeds, check_outputs=False)


def test_single_dma():
    # 64 bytes: issue 1 + 64/4 = 17 cycles on the queue, data ready 10 cycles later
    r = run("load sram@0:4x4:f32 <- x[0:4x4/4]\n").report
    assert r.cycles == 17 + 10
    assert r.busy["load"] == 17 and r.dram_bytes_read == 64


def test_single_matmul_fold():
    text = """
    load   sram@0:1x4:i8 <- b[0:1x4/4]  signal=t
    load   sram@4:4x4:i8 <- b[0:4x4/0]  signal=t
    matmul acc@0:1x4:i32 <- sram@0:1x4:i8, sram@4:4x4:i8  wait=t,t
    """
    r = run(text).report
    # loads: [0,2) ready 12 and [2,7) ready 17 (issue 1 + 4/4, then 1 + 16/4)
    # matmul: issue 1 + 1 fold * max(1 row, 4) + fill/drain 4 + 4 = 13 -> 17 + 13
    assert r.cycles == 30 and r.busy["matrix"] == 13
    assert r.macs == {"i8": 16}


def test_double_buffered_overlap():
    text = """
    load       sram@0:4x4:f32 <- x[0:4x4/4]  signal=l0
    load       sram@64:4x4:f32 <- x[0:4x4/4]  signal=l1
    unary.exp  sram@128:4x4:f32 <- sram@0:4x4:f32  wait=l0  signal=c0
    unary.exp  sram@192:4x4:f32 <- sram@64:4x4:f32  wait=l1  signal=c1
    store      y[0:4x4/4] <- sram@128:4x4:f32  wait=c0
    store      y[16:4x4/4] <- sram@192:4x4:f32  wait=c1
    """
    r = run(text).report
    # L0 [0,17) ready 27; L1 [17,34) ready 44; C0 [27,44); C1 [44,61);
    # S0 [44,61) ready 71; S1 [61,78) ready 88
    assert r.cycles == 88
    assert r.busy == {"load": 34, "store": 34, "matrix": 0, "vector": 34, "launch": 0}
    assert r.cycles < sum(r.busy.values()) + 4 * TINY.dram_latency_cycles
    assert r.dram_bytes_written == 128 and r.vector_ops == 2 * 16 * 4


def test_dma_engines_limit_in_flight_transfers():
    text = "\n".join(f"load sram@{4 * i}:1x4:i8 <- b[{4 * i}:1x4/4]" for i in range(3))
    # each: issue 1 + 1 cycle; the third waits for the first to land (2 engines)
    # L0 [0,2) ready 12; L1 [2,4) ready 14; L2 [12,14) ready 24
    assert run(text).report.cycles == 24


def test_store_and_load_share_the_dram_channel():
    text = """
    load   sram@0:4x4:f32 <- x[0:4x4/4]  signal=a
    store  y[0:4x4/4] <- sram@0:4x4:f32  wait=a
    load   sram@64:4x4:f32 <- x[0:4x4/4]
    """
    # L0 [0,17) ready 27; L1 [17,34) ready 44; S [33,50) ready 60: the store waits for
    # the channel (its issue cycle may overlap the previous transfer)
    r = run(text).report
    assert r.cycles == 60


def test_kernels_are_barriers_with_launch_cost():
    text = """
    kernel one
    load sram@0:1x4:i8 <- b[0:1x4/4]
    kernel two
    load sram@4:1x4:i8 <- b[4:1x4/4]
    """
    r = run(text).report
    assert [(k.name, k.start, k.end) for k in r.kernels] == [("one", 0, 112), ("two", 112, 224)]
    assert r.cycles == 224 and r.busy["launch"] == 200


def test_report_counts_and_roofline():
    text = """
    load       sram@0:4x4:f32 <- x[0:4x4/4]  signal=l
    unary.gelu sram@64:4x4:f32 <- sram@0:4x4:f32  wait=l
    """
    r = run(text).report
    assert r.instr_counts == {"load": 1, "unary": 1}
    assert r.vector_ops == 16 * 6 and r.roofline_cycles == max(96 // 4, 64 // 4)
    assert r.peak_sram_bytes == 128 and r.peak_acc_bytes == 0
    assert "cycles" in r.summary()
