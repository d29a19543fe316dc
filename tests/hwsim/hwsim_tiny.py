"""A tiny machine whose numbers are easy to compute by hand in tests."""

from hwsim.hardware import Hardware

TINY = Hardware(
    name="tiny",
    clock_ghz=1.0,
    array_rows=4,
    array_cols=4,
    macs_per_cycle={"i8": 16, "bf16": 8, "f32": 4},
    vector_lanes=4,
    sram_bytes=1024,
    acc_bytes=256,
    dram_bytes_per_cycle=4,
    dram_latency_cycles=10,
    dma_engines=2,
    launch_cycles=100,
    issue_cycles=1,
)
