"""The instruction set: a small Gemmini/VTA-style accelerator ISA as frozen dataclasses.

Memories. DRAM holds named buffers declared by the program (shape, dtype, role);
instructions address a buffer as a flat array of elements: offset, rows x cols, and a
row stride in elements (`DramRef`). SRAM (scratchpad) and the accumulator are flat
byte-addressed spaces; a `Tile` is a rows x cols region of one dtype starting at a
byte address (aligned to its item size), rows `stride` elements apart (dense when None).
The accumulator holds 4-byte entries (i32 for int8 products, f32 otherwise).

Queues. Load and Store run on their own queues (DMA); everything else on the compute
queue, except a vector-unit instruction (Binary, Fma, Move, Unary, Reduce, Transpose)
marked `vector_queue`, which runs on the vector queue: beside the compute queue's
matmuls (an NPU's cube and vector pipelines: the vector unit takes its instructions
from a stream of its own, whatever they compute), ordered with them only by tokens, and
never on the vector unit at the same time as a vector-unit instruction of the compute
queue. Each queue executes in order. `wait` names tokens (counting semaphores) that
must have been signalled before the instruction starts and consumes one count of each;
`signal` adds one count to each named token when the instruction completes. That is
how a double-buffered loop overlaps transfer with compute (VTA's dependence queues).

`Kernel` marks the start of a kernel: a barrier across all queues that costs the
machine's launch overhead; the simulator reports cycles per kernel.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field

from .dtypes import ITEMSIZE

SPACES = ("sram", "acc")
ROLES = ("input", "output", "scratch")
UNARY_OPS = (
    "copy",
    "relu",
    "gelu",
    "exp",
    "neg",
    "sqrt",
    "rsqrt",
    "reciprocal",
    "sigmoid",
    "tanh",
    "scale",
    "abs",
    "erf",
    "gelu_erf",
    "log",
    "sin",
    "cos",
    "floor",
    "ceil",
    "trunc",
    "not",
    "isnan",
)
# eq..ge compare and and/or/xor combine (nonzero is true) into 0/1 of the operands' kind
BINARY_OPS = (
    "add",
    "sub",
    "mul",
    "div",
    "max",
    "min",
    "pow",
    "eq",
    "lt",
    "le",
    "gt",
    "ge",
    "and",
    "or",
    "xor",
)
REDUCE_OPS = ("sum", "max")
ACTS = ("none", "relu")
MODES = ("overwrite", "accumulate")
BCASTS = ("none", "row", "col")
ROUNDINGS = ("even", "away")
QUEUES = ("load", "compute", "store", "vector")
VECTOR_QUEUE_INSTRS = ("binary", "fma", "move", "unary", "reduce", "transpose")  # vector queue


@dataclass(frozen=True)
class Tile:
    """A rows x cols region of SRAM or the accumulator, at a byte address."""

    space: str
    addr: int
    rows: int
    cols: int
    dtype: str
    stride: int | None = None  # elements between row starts; None = cols (dense)

    def __post_init__(self) -> None:
        if self.stride == self.cols:
            object.__setattr__(self, "stride", None)

    @property
    def row_stride(self) -> int:
        return self.cols if self.stride is None else self.stride

    @property
    def itemsize(self) -> int:
        return ITEMSIZE[self.dtype]

    @functools.cached_property
    def end(self) -> int:
        """One past the last byte the tile touches."""
        return self.addr + ((self.rows - 1) * self.row_stride + self.cols) * self.itemsize

    @property
    def elements(self) -> int:
        return self.rows * self.cols


@dataclass(frozen=True)
class DramRef:
    """rows x cols elements of a DRAM buffer from `offset`, rows `stride` elements apart."""

    buffer: str
    offset: int
    rows: int
    cols: int
    stride: int

    @property
    def end(self) -> int:
        """One past the last element touched (offset + extent)."""
        return self.offset + (self.rows - 1) * self.stride + self.cols


@dataclass(frozen=True)
class Buffer:
    """A named DRAM buffer: program input, output, or scratch space."""

    name: str
    dtype: str
    shape: tuple[int, ...]
    role: str = "scratch"

    @property
    def size(self) -> int:
        n = 1
        for d in self.shape:
            n *= d
        return n


@dataclass(frozen=True, kw_only=True)
class Instr:
    """Base of all instructions: dependency tokens waited on and signalled."""

    wait: tuple[str, ...] = ()
    signal: tuple[str, ...] = ()

    queue = "compute"


@dataclass(frozen=True, kw_only=True)
class Load(Instr):
    """DMA DRAM -> SRAM; the tile part beyond src's rows x cols is zero padding."""

    dst: Tile
    src: DramRef
    queue = "load"


@dataclass(frozen=True, kw_only=True)
class LoadDq(Instr):
    """DMA of quantized weights DRAM -> SRAM through the load-path dequantizer
    (hwsim/wq.py): src spans the i8 storage of dst.rows x dst.cols weights of `bits`
    bits (int4 packed two rows per byte: dst.rows / 2 rows of bytes); `scales` (f32 or
    bf16, in sram) holds one row of scales per group of `group` weight rows, the first weight
    row `phase` rows into its group; dst (f32 or bf16) = weight * scale. Only the packed
    bytes move over DRAM (the scales come in by an ordinary load, like a gather's index).
    `fmt` e4m3: the bytes are FP8 E4M3 values (bits 8), not integers."""

    dst: Tile
    src: DramRef
    scales: Tile
    bits: int = 4
    group: int = 128
    phase: int = 0
    fmt: str = "int"
    queue = "load"


@dataclass(frozen=True, kw_only=True)
class Gather(Instr):
    """Indexed DMA DRAM -> SRAM (an embedding lookup): row r of dst is the src.cols
    elements at src.offset + index[r] * src.stride, for each of the index.rows entries
    of the i32 column `index` (rows x 1, in SRAM). src spans the table: src.rows rows
    `src.stride` apart; an index outside [0, src.rows) faults. Only the selected rows
    move, each its own burst (timing.gather_cycles)."""

    dst: Tile
    src: DramRef
    index: Tile
    queue = "load"


@dataclass(frozen=True, kw_only=True)
class Store(Instr):
    """DMA SRAM -> DRAM of the top-left dst.rows x dst.cols of the tile (crop)."""

    dst: DramRef
    src: Tile
    queue = "store"


@dataclass(frozen=True, kw_only=True)
class Matmul(Instr):
    """acc (=|+=) a @ b on the systolic array; i8 inputs accumulate in i32, floats in f32."""

    acc: Tile
    a: Tile
    b: Tile
    mode: str = "overwrite"


@dataclass(frozen=True, kw_only=True)
class Move(Instr):
    """Copy between accumulator and SRAM with an optional activation, casting to dst."""

    dst: Tile
    src: Tile
    act: str = "none"
    vector_queue: bool = False  # issued to the vector queue (module doc)

    @property
    def queue(self) -> str:  # type: ignore[override]
        return "vector" if self.vector_queue else "compute"


@dataclass(frozen=True, kw_only=True)
class Unary(Instr):
    """dst = op(src) elementwise on the vector unit (`scale` multiplies by imm)."""

    op: str
    dst: Tile
    src: Tile
    imm: float | None = None
    vector_queue: bool = False  # issued to the vector queue (module doc)

    @property
    def queue(self) -> str:  # type: ignore[override]
        return "vector" if self.vector_queue else "compute"


@dataclass(frozen=True, kw_only=True)
class Binary(Instr):
    """dst = op(a, b): b same shape, a row (1 x cols, bcast=row), a column (rows x 1,
    bcast=col), or the immediate scalar imm."""

    op: str
    dst: Tile
    a: Tile
    b: Tile | None = None
    imm: float | None = None
    bcast: str = "none"
    vector_queue: bool = False  # issued to the vector queue (module doc)

    @property
    def queue(self) -> str:  # type: ignore[override]
        return "vector" if self.vector_queue else "compute"


@dataclass(frozen=True, kw_only=True)
class Select(Instr):
    """dst = a where cond != 0, else b, picking values without arithmetic (exact for
    inf and nan). cond, a and b are tiles of dst's shape, one row (1 x cols) or one
    column (rows x 1) broadcast over dst; a and b may be immediates instead."""

    dst: Tile
    cond: Tile
    a: Tile | None = None
    b: Tile | None = None
    imm_a: float | None = None
    imm_b: float | None = None


@dataclass(frozen=True, kw_only=True)
class Fma(Instr):
    """dst = a * b + c on the vector unit, fused: the exact product plus c, rounded once
    to f32 (ties to even; a bf16 dst rounds that again when stored, as every vector
    op's result). a is a tile; b and c are tiles or immediates (imm_b, imm_c); each
    tile is dst's shape, one row (1 x cols) or one column (rows x 1) broadcast over
    dst (by its shape). c may be dst itself (a multiply-accumulate: all operands are
    read before dst is written). Float tiles only; one op per lane per cycle, like a
    binary op. ONNX Runtime's QLinearAdd arithmetic (backend/tileexpr.py) and the GEMV
    steps' partial sums (backend/gemm.py) are written with it."""

    dst: Tile
    a: Tile
    b: Tile | None = None
    c: Tile | None = None
    imm_b: float | None = None
    imm_c: float | None = None
    vector_queue: bool = False  # issued to the vector queue (module doc)

    @property
    def queue(self) -> str:  # type: ignore[override]
        return "vector" if self.vector_queue else "compute"


@dataclass(frozen=True, kw_only=True)
class Reduce(Instr):
    """dst[rows x 1] = op over each row of src."""

    op: str
    dst: Tile
    src: Tile
    vector_queue: bool = False  # issued to the vector queue (module doc)

    @property
    def queue(self) -> str:  # type: ignore[override]
        return "vector" if self.vector_queue else "compute"


@dataclass(frozen=True, kw_only=True)
class Transpose(Instr):
    """dst[cols x rows] = src^T on the vector unit."""

    dst: Tile
    src: Tile
    vector_queue: bool = False  # issued to the vector queue (module doc)

    @property
    def queue(self) -> str:  # type: ignore[override]
        return "vector" if self.vector_queue else "compute"


@dataclass(frozen=True, kw_only=True)
class Requantize(Instr):
    """dst = sat(round(src * multiplier / 2**shift) + zero_point), src i32, dst i8 or
    i32 (saturated to dst's range)."""

    dst: Tile
    src: Tile
    multiplier: int
    shift: int
    zero_point: int = 0
    rounding: str = "even"


@dataclass(frozen=True, kw_only=True)
class Custom(Instr):
    """dst = the hardware's declared instruction `name` (hwsim/custom.py) of srcs, on
    the vector unit: each src is dst's shape, a row (1 x cols) or a column (rows x 1)."""

    name: str
    dst: Tile
    srcs: tuple[Tile, ...]


@dataclass(frozen=True, kw_only=True)
class Kernel(Instr):
    """Start of a kernel: a barrier over all queues costing the launch overhead."""

    name: str


INSTRS: tuple[type[Instr], ...] = (
    Load,
    LoadDq,
    Gather,
    Store,
    Matmul,
    Move,
    Unary,
    Binary,
    Fma,
    Select,
    Reduce,
    Transpose,
    Requantize,
    Custom,
    Kernel,
)


@dataclass(frozen=True)
class Program:
    """DRAM buffers plus an instruction stream; `lines` maps instructions to asm lines."""

    buffers: tuple[Buffer, ...]
    instrs: tuple[Instr, ...]
    lines: tuple[int, ...] | None = field(default=None, compare=False)
    source: str | None = field(default=None, compare=False)

    @functools.cached_property
    def buffer_map(self) -> dict[str, Buffer]:
        return {b.name: b for b in self.buffers}

    def inputs(self) -> list[Buffer]:
        return [b for b in self.buffers if b.role == "input"]

    def outputs(self) -> list[Buffer]:
        return [b for b in self.buffers if b.role == "output"]


def tiles_read(ins: Instr) -> tuple[Tile, ...]:
    """On-chip tiles an instruction reads (accumulate-mode matmul reads its acc)."""
    if isinstance(ins, Matmul):
        return (ins.a, ins.b, ins.acc) if ins.mode == "accumulate" else (ins.a, ins.b)
    if isinstance(ins, Binary):
        return (ins.a,) if ins.b is None else (ins.a, ins.b)
    if isinstance(ins, Select):
        return tuple(t for t in (ins.cond, ins.a, ins.b) if t is not None)
    if isinstance(ins, Fma):
        return tuple(t for t in (ins.a, ins.b, ins.c) if t is not None)
    if isinstance(ins, Gather):
        return (ins.index,)
    if isinstance(ins, LoadDq):
        return (ins.scales,)
    if isinstance(ins, Custom):
        return ins.srcs
    if isinstance(ins, Load | Kernel):
        return ()
    return (ins.src,)  # type: ignore[attr-defined]


def tile_written(ins: Instr) -> Tile | None:
    """The on-chip tile an instruction writes, if any."""
    if isinstance(ins, Matmul):
        return ins.acc
    if isinstance(ins, Store | Kernel):
        return None
    return ins.dst  # type: ignore[attr-defined]
