"""hwsim: an accelerator machine — hardware descriptions, ISA, simulator, cost model.

A machine, not a compiler: nothing here imports eqsat, frontend or backend.
"""

from .asm import AsmError, format_instr, format_program, parse
from .costmodel import KernelCost, KernelWork, kernel_cycles, program_cycles, roofline_cycles
from .hardware import Hardware, HardwareError, load_hardware
from .isa import (
    Binary,
    Buffer,
    Custom,
    DramRef,
    Fma,
    Gather,
    Instr,
    Kernel,
    Load,
    Matmul,
    Move,
    Program,
    Reduce,
    Requantize,
    Select,
    Store,
    Tile,
    Transpose,
    Unary,
)
from .report import Event, KernelSpan, SimReport, SimResult, SimulationError
from .simulator import simulate

__all__ = [
    "AsmError",
    "Binary",
    "Buffer",
    "Custom",
    "DramRef",
    "Event",
    "Fma",
    "Gather",
    "Hardware",
    "HardwareError",
    "Instr",
    "Kernel",
    "KernelCost",
    "KernelSpan",
    "KernelWork",
    "Load",
    "Matmul",
    "Move",
    "Program",
    "Reduce",
    "Requantize",
    "Select",
    "SimReport",
    "SimResult",
    "SimulationError",
    "Store",
    "Tile",
    "Transpose",
    "Unary",
    "format_instr",
    "format_program",
    "kernel_cycles",
    "load_hardware",
    "parse",
    "program_cycles",
    "roofline_cycles",
    "simulate",
]
