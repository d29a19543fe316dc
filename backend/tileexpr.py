"""Evaluating a tile expression (expr.py) on one tile: loads of its operands and the
vector instructions that compute it.

Each loaded operand has a *class* for the kernel's space, fixed by its strides along
the tile's row and column axes:
    full  columns contiguous          rows x cols DMA (row stride may be 0)
    row   broadcast along rows        1 x cols DMA, then `bcast=row`
    col   broadcast along columns     rows x 1 DMA, then `bcast=col`
    tr    rows contiguous instead     cols x rows DMA + on-chip `transpose`
A tile of a `row` or `col` operand combined with a `full` one uses the ISA's broadcast;
where the ISA cannot (a broadcast operand on the left of sub/div, or row with col),
it is first expanded by adding it to a zero tile. Zeros come from the zero padding of
a load: one element of any DRAM buffer loaded into a larger tile.
"""

from __future__ import annotations

from eqsat.spatial_plan import ZERO_ISZ
from hwsim.dtypes import ITEMSIZE, is_float
from hwsim.isa import Binary, Custom, Fma, Instr, Requantize, Select, Tile, Transpose, Unary

from .emit import KernelBuilder, Pipeline, offset_tile, sub
from .errors import BackendError
from .expr import (
    FLAGS,
    MIRRORED,
    Bin,
    Cust,
    Cvt,
    Expr,
    Fmadd,
    Leaf,
    Requant,
    RequantCh,
    Sel,
    Un,
    dtype_of,
    fold,
    leaves_of,
    ops_of,
    shared,
)
from .space import Operand, Pos, Space, dram
from .views import Imm

FULL, ROW, COL, TR, IMM = "full", "row", "col", "tr", "imm"


def leaf_class(op: Operand, space: Space, rt: int, ct: int) -> str | None:
    """How `op` is loaded for rt x ct tiles of `space` (None: only with rt = 1)."""
    sr, sc = op.strides[space.row], op.strides[space.col]
    if op.rows is not None and (sr == 0 or sc not in (0, 1)):
        return None  # folded rows load run by run, as full tiles or columns only
    if ct == 1 or sc == 1:
        return ROW if rt > 1 and sr == 0 else FULL
    if sc == 0:
        return COL
    return TR if rt == 1 or sr == 1 else None


def spine(expr: Expr, out_dtype: str, leaf_dtypes: list[str]) -> set[int]:
    """ids of the root and its chain of first operands that compute in the output's
    dtype: they can all be computed in place in the output tile."""
    out: set[int] = set()
    e = expr
    while isinstance(e, Un | Bin | Cvt) and dtype_of(e, leaf_dtypes) == out_dtype:
        out.add(id(e))
        e = e.a if isinstance(e, Bin) else e.x
    if isinstance(expr, Cvt | Requant | RequantCh | Un | Bin | Sel | Fmadd | Cust):
        out.add(id(expr))  # the root always writes the output tile
    return out


def bytes_per_element(
    expr: Expr,
    operands: list[Operand | None],
    space: Space,
    out_dtype: str = "",
    given: dict[int, str] | None = None,
) -> int:
    """SRAM bytes per tile element the expression needs (slots, intermediates, zeros).

    Broadcast operands (row/col classes) hold a single row or column: not counted.
    """
    total = 0
    for op in operands:
        if op is None:
            continue
        sr, sc = op.strides[space.row], op.strides[space.col]
        if sr == 0 or sc == 0:
            continue
        isz = ITEMSIZE[op.dtype]
        total += 2 * isz + (isz if sc != 1 else 0)
    e = fold(expr)
    dts = [
        (given or {}).get(i, op.dtype if op is not None else "f32") for i, op in enumerate(operands)
    ]
    inter = len(ops_of(e)) - len(spine(e, out_dtype, dts))
    if _own_root_tile(e, dts, out_dtype):
        inter += 1  # the root may need a tile of its own (TileExpr._plan)
    return total + 4 * max(0, inter)


class TileExpr:
    """One expression over one space, with its SRAM tiles allocated once per kernel.

    `operands[i]` is the DRAM operand of Leaf(i), or None for a tile the caller passes
    to `compute` (given_dtypes[i] is then its dtype).
    """

    def __init__(
        self,
        kb: KernelBuilder,
        space: Space,
        expr: Expr,
        operands: list[Operand | None],
        given_dtypes: dict[int, str],
        out_dtype: str,
        rt: int,
        ct: int,
        zero: Operand | None,
    ) -> None:
        self.kb, self.space, self.rt, self.ct = kb, space, rt, ct
        self.expr = shared(fold(expr))
        self.operands, self.out_dtype, self.zero_op = operands, out_dtype, zero
        self.dtypes = [given_dtypes[i] if op is None else op.dtype for i, op in enumerate(operands)]
        used = leaves_of(self.expr)
        self.cls: dict[int, str] = {}
        self.slots: dict[int, tuple[Tile, Tile]] = {}
        self.trt: dict[int, Tile] = {}
        for i in sorted(used):
            op = operands[i]
            if op is None:
                self.cls[i] = FULL
                continue
            c = leaf_class(op, space, rt, ct)
            assert c is not None, "caller must pick rt = 1 for this operand"
            self.cls[i] = c
            r, k = {FULL: (rt, ct), ROW: (1, ct), COL: (rt, 1), TR: (ct, rt)}[c]
            self.slots[i] = kb.alloc2(r, k, op.dtype)
            if c == TR:
                self.trt[i] = kb.alloc(rt, ct, op.dtype)
        self.node_cls: dict[int, str] = {}
        self.node_tile: dict[int, Tile] = {}
        # a value with two users keeps a tile of its own: the output tile it would be
        # computed in is overwritten before its second use
        self.in_out = spine(self.expr, out_dtype, self.dtypes) - _reused(self.expr)
        self.zero_kinds: set[str] = set()
        self._plan(self.expr, root=True)
        self.zeros: dict[str, Tile] = {}

    # ------------------------------------------------------------------ planning

    def _class(self, e: Expr) -> str:
        if isinstance(e, Imm):
            return IMM
        if isinstance(e, Leaf):
            return FULL if self.cls[e.index] == TR else self.cls[e.index]
        return self.node_cls[id(e)]

    def _plan(self, e: Expr, root: bool = False) -> None:
        if isinstance(e, Leaf | Imm):
            if root:
                self._need_zero_for_root(e)
            return
        if id(e) in self.node_cls:  # a shared subexpression: planned at its first use
            return
        if isinstance(e, Bin):
            self._plan(e.a)
            self._plan(e.b)
            ca, cb = self._class(e.a), self._class(e.b)
            c = _join(ca, cb)
            if _needs_zero(e.op, ca, cb):
                self.zero_kinds.add(_kind(dtype_of(e.a, self.dtypes)))
                if root and _own_root_tile(e, self.dtypes, self.out_dtype):
                    self.in_out.discard(id(e))
        elif isinstance(e, Sel):  # select broadcasts rows and columns itself
            for x in (e.cond, e.a, e.b):
                self._plan(x)
            c = _join(_join(self._class(e.cond), self._class(e.a)), self._class(e.b))
        elif isinstance(e, Fmadd):  # so does fma
            for x in (e.a, e.b, e.c):
                self._plan(x)
            c = _join(_join(self._class(e.a), self._class(e.b)), self._class(e.c))
            if isinstance(e.a, Imm) and isinstance(e.b, Imm):  # a is written into a tile
                self.zero_kinds.add(_kind(dtype_of(e, self.dtypes)))
        elif isinstance(e, Cust):  # so does a declared instruction
            for x in e.args:
                self._plan(x)
            c = IMM
            for x in e.args:
                c = _join(c, self._class(x))
        else:
            self._plan(e.x)  # type: ignore[union-attr]
            c = self._class(e.x)  # type: ignore[union-attr]
        self.node_cls[id(e)] = c
        if root and c != FULL:
            self.zero_kinds.add(_kind(dtype_of(e, self.dtypes)))
        if not (c == FULL and id(e) in self.in_out):
            r, k = {FULL: (self.rt, self.ct), ROW: (1, self.ct), COL: (self.rt, 1)}[c]
            self.node_tile[id(e)] = self.kb.alloc(r, k, dtype_of(e, self.dtypes))

    def _need_zero_for_root(self, e: Expr) -> None:
        c = self._class(e)
        if c in (ROW, COL, IMM):
            d = e.dtype if isinstance(e, Imm) else self.dtypes[e.index]  # type: ignore[union-attr]
            self.zero_kinds.add(_kind(d))

    # ------------------------------------------------------------------ emission

    def alloc_zeros(self) -> Tile | None:
        """Allocate the zero tiles this expression needs: the tile one element of the
        zero source is loaded into, rt + 1 rows (the zeros are rows 1..rt) of ZERO_ISZ
        bytes an element whatever the source's dtype (tiles do not depend on which
        input is the zero source; eqsat/spatial_plan.py stream_tiles), then one rt x ct
        tile per kind. Returns that load tile (None: no zeros needed)."""
        if not self.zero_kinds:
            return None
        if self.zero_op is None:
            raise AssertionError("expression needs zeros but the kernel has no zero source")
        dtype = self.zero_op.dtype
        raw = self.kb.alloc(self.rt + 1, self.ct * ZERO_ISZ // ITEMSIZE[dtype], dtype)
        for kind in sorted(self.zero_kinds):
            self.zeros[kind] = self.kb.alloc(self.rt, self.ct, kind)
        return raw

    def prologue(self, pipe: Pipeline) -> None:
        """Make the zero tiles this expression needs (once per kernel)."""
        raw = self.alloc_zeros()
        if raw is None:
            return
        assert self.zero_op is not None
        pipe.load("z", [(raw, dram(self.zero_op, self.zero_op.offset, 1, 1, 1))])
        zsrc = offset_tile(raw, 1, 0, self.rt, self.ct)
        # Float zeros are -0.0, the additive identity for every x: +0.0 would turn a
        # broadcast -0.0 into +0.0 (and 1 / x into +inf where the reference has -inf).
        pipe.compute(
            [
                Unary(op="neg" if kind == "f32" else "copy", dst=z, src=zsrc)
                for kind, z in sorted(self.zeros.items())
            ]
        )

    def loads(self, pos: Pos, slot: int) -> list[tuple[Tile, object]]:
        out = []
        for i, c in self.cls.items():
            op = self.operands[i]
            if op is None:
                continue
            rn, cn, off = pos.rows, pos.cols, pos.offset(op)
            sr, sc = op.strides[self.space.row], op.strides[self.space.col]
            t = self.slots[i][slot]
            if op.rows is not None and c in (FULL, COL):  # one DMA per run of rows
                cols = cn if c == FULL else 1
                whole = sub(t, rn, cols)  # dense, as the compute reads it
                for r, count in op.rows.runs(pos.index[0], rn):
                    at = Pos((r, pos.index[1]), count, cols).offset(op)
                    tile = offset_tile(whole, r - pos.index[0], 0, count, cols)
                    out.append((tile, dram(op, at, count, cols, sr)))
                continue
            if c == FULL:
                out.append((sub(t, rn, cn), dram(op, off, rn, cn, sr)))
            elif c == ROW:
                out.append((sub(t, 1, cn), dram(op, off, 1, cn, cn)))
            elif c == COL:
                out.append((sub(t, rn, 1), dram(op, off, rn, 1, sr)))
            else:
                out.append((sub(t, cn, rn), dram(op, off, cn, rn, sc)))
        return out

    def compute(
        self,
        pos: Pos,
        slot: int,
        out: Tile,
        given: dict[int, Tile],
        rows: tuple[int, int] | None = None,
    ) -> list[Instr]:
        """Instructions computing the tile at `pos` into `out` (pos.rows x pos.cols);
        with `rows` = (first, count), only those rows of the tile, whose operands were
        loaded for the whole of it (`out` and `given` are those rows')."""
        r0, rn = rows if rows is not None else (0, pos.rows)
        index = list(pos.index)
        index[self.space.row] += r0
        self._rn, self._cn, self._out = rn, pos.cols, out
        self._pos = Pos(tuple(index), rn, pos.cols)
        self._instrs: list[Instr] = []
        self._vals: dict[int, Tile | Imm] = {}
        for i, c in self.cls.items():
            if self.operands[i] is None:
                self._vals[i] = given[i]
            elif c == TR:
                t = sub(self.trt[i], rn, pos.cols)
                loaded = sub(self.slots[i][slot], pos.cols, pos.rows)
                src = offset_tile(loaded, 0, r0, pos.cols, rn) if rn < pos.rows else loaded
                self._instrs.append(Transpose(dst=t, src=src))
                self._vals[i] = t
            else:
                r, k = _dims(c, pos.rows, pos.cols)
                loaded = sub(self.slots[i][slot], r, k)
                if c != ROW and rn < pos.rows:  # the rows of the loaded tile
                    loaded = offset_tile(loaded, r0, 0, rn, k)
                self._vals[i] = loaded
        res = self._eval(self.expr, root=True)
        if res != out:
            self._finish(res, self._class(self.expr))
        return self._instrs

    def _zero(self, kind: str, cls: str) -> Tile:
        r, k = _dims(cls, self._rn, self._cn)
        return sub(self.zeros[kind], r, k)

    def _dst(self, e: Expr, root: bool) -> Tile:
        if self._class(e) == FULL and id(e) in self.in_out:  # keeps out's row stride
            return offset_tile(self._out, 0, 0, self._rn, self._cn)
        r, k = _dims(self._class(e), self._rn, self._cn)
        return sub(self.node_tile[id(e)], r, k)

    def _eval(self, e: Expr, root: bool = False) -> Tile | Imm:
        if isinstance(e, Imm):
            return e
        if isinstance(e, Leaf):
            return self._vals[e.index]  # type: ignore[return-value]
        key = id(e)
        if key in self._vals:
            return self._vals[key]
        emit = self._instrs.append
        dst = self._dst(e, root)
        if isinstance(e, Bin):
            self._binary(e, dst)
        elif isinstance(e, Sel):
            self._select(e, dst)
        elif isinstance(e, Fmadd):
            self._fma(e, dst)
        elif isinstance(e, Cust):
            srcs = [self._eval(a) for a in e.args]
            if not all(isinstance(s, Tile) for s in srcs):
                raise BackendError(f"custom.{e.name}: an operand is an immediate, not a tile")
            self._instrs.append(Custom(name=e.name, dst=dst, srcs=tuple(srcs)))  # type: ignore[arg-type]
        else:
            x = self._eval(e.x)  # type: ignore[union-attr]
            assert isinstance(x, Tile)
            if isinstance(e, Un):
                emit(Unary(op=e.op, dst=dst, src=x, imm=e.imm))
            elif isinstance(e, Cvt):
                emit(Unary(op="copy", dst=dst, src=x))
            elif isinstance(e, Requant):
                emit(
                    Requantize(
                        dst=dst,
                        src=x,
                        multiplier=e.multiplier,
                        shift=e.shift,
                        zero_point=e.zero_point,
                        rounding=e.rounding,
                    )
                )
            elif isinstance(e, RequantCh):
                self._requant_channels(e, dst, x)
        self._vals[key] = dst
        return dst

    def _requant_channels(self, e: RequantCh, dst: Tile, x: Tile) -> None:
        """One requantize per column with its channel's multiplier and shift, then the
        lower clamp (relu) if any; the channel of a column comes from leaf e.ch."""
        op = self.operands[e.ch.index]
        if op is None:
            raise BackendError("per-channel requantize needs its channel scales as a leaf")
        first = self._pos.offset(op) - op.offset
        by_rows = op.strides[self.space.row] != 0 and self._rn > 1
        by_cols = op.strides[self.space.col] != 0 and self._cn > 1
        if by_rows and by_cols:
            raise BackendError("per-channel requantize needs the channels along rows or columns")
        step = op.strides[self.space.row if by_rows else self.space.col]
        count = x.rows if by_rows else x.cols if by_cols else 1  # one channel: one instruction
        for c in range(count):
            m, k = e.table[first + c * step]
            src, out = (
                (offset_tile(x, c, 0, 1, x.cols), offset_tile(dst, c, 0, 1, x.cols))
                if by_rows
                else (offset_tile(x, 0, c, x.rows, 1), offset_tile(dst, 0, c, x.rows, 1))
                if by_cols
                else (x, dst)
            )
            self._instrs.append(
                Requantize(
                    dst=out,
                    src=src,
                    multiplier=m,
                    shift=k,
                    zero_point=e.zero_point,
                    rounding=e.rounding,
                )
            )
        if e.lo > -128:
            self._instrs.append(Binary(op="max", dst=dst, a=dst, imm=float(e.lo)))
        if e.hi < 127:
            self._instrs.append(Binary(op="min", dst=dst, a=dst, imm=float(e.hi)))

    def _select(self, e: Sel, dst: Tile) -> None:
        cond, a, b = self._eval(e.cond), self._eval(e.a), self._eval(e.b)
        assert isinstance(cond, Tile), "fold() resolves a constant condition"
        ta, ia = (None, a.value) if isinstance(a, Imm) else (a, None)
        tb, ib = (None, b.value) if isinstance(b, Imm) else (b, None)
        self._instrs.append(Select(dst=dst, cond=cond, a=ta, b=tb, imm_a=ia, imm_b=ib))

    def _fma(self, e: Fmadd, dst: Tile) -> None:
        a, b, c = self._eval(e.a), self._eval(e.b), self._eval(e.c)
        if isinstance(a, Imm):  # a * b == b * a exactly: the tile goes first
            a, b = b, a
        if isinstance(a, Imm):
            # Both factors are numbers: a*b + c still rounds once only if the product
            # stays exact, so a is first written into dst (exact: an f32 number plus 0)
            # and multiplied from there. c must not live in dst.
            if isinstance(c, Tile) and c == dst:
                raise BackendError("fma of two numbers into its own addend's tile")
            zero = self._zero(_kind(dtype_of(e, self.dtypes)), self._class(e))
            self._instrs.append(Binary(op="add", dst=dst, a=zero, imm=a.value))
            a = dst
        tb, ib = (None, b.value) if isinstance(b, Imm) else (b, None)
        tc, ic = (None, c.value) if isinstance(c, Imm) else (c, None)
        self._instrs.append(Fma(dst=dst, a=a, b=tb, c=tc, imm_b=ib, imm_c=ic))

    def _binary(self, e: Bin, dst: Tile) -> None:
        emit = self._instrs.append
        a, b = self._eval(e.a), self._eval(e.b)
        ca, cb = self._class(e.a), self._class(e.b)
        kind = _kind(dtype_of(e.a, self.dtypes))
        op = e.op
        if isinstance(b, Imm):
            emit(Binary(op=op, dst=dst, a=a, imm=b.value))  # type: ignore[arg-type]
        elif isinstance(a, Imm):
            if op in MIRRORED:
                emit(Binary(op=MIRRORED[op], dst=dst, a=b, imm=a.value))
            elif op == "sub":  # c - x = (-x) + c exactly
                emit(Unary(op="neg", dst=dst, src=b))
                emit(Binary(op="add", dst=dst, a=dst, imm=a.value))
            else:
                emit(Binary(op="add", dst=dst, a=self._zero(kind, cb), imm=a.value))
                emit(Binary(op=op, dst=dst, a=dst, b=b))
        elif ca == cb:
            emit(Binary(op=op, dst=dst, a=a, b=b))
        elif ca == FULL:
            emit(Binary(op=op, dst=dst, a=a, b=b, bcast=cb))
        elif cb == FULL and op in MIRRORED:
            emit(Binary(op=MIRRORED[op], dst=dst, a=b, b=a, bcast=ca))
        elif cb == FULL and op == "sub":
            emit(Unary(op="neg", dst=dst, src=b))
            emit(Binary(op="add", dst=dst, a=dst, b=a, bcast=ca))
        else:  # expand a to full, then combine
            emit(Binary(op="add", dst=dst, a=self._zero(kind, FULL), b=a, bcast=ca))
            emit(Binary(op=op, dst=dst, a=dst, b=b, bcast="none" if cb == FULL else cb))

    def _finish(self, res: Tile | Imm, cls: str) -> None:
        """Write a non-full or leaf result into the output tile."""
        out = self._out
        if isinstance(res, Imm):
            zero = self._zero(_kind(res.dtype), FULL)
            self._instrs.append(Binary(op="add", dst=out, a=zero, imm=res.value))
        elif cls == FULL:
            self._instrs.append(Unary(op="copy", dst=out, src=res))
        else:
            zero = self._zero(_kind(res.dtype), FULL)
            self._instrs.append(Binary(op="add", dst=out, a=zero, b=res, bcast=cls))


def _reused(expr: Expr) -> set[int]:
    """ids of the operator nodes of a shared expression used more than once."""
    uses: dict[int, int] = {}
    seen: set[int] = set()
    stack = [expr]
    while stack:
        e = stack.pop()
        if id(e) in seen or isinstance(e, Leaf | Imm):
            continue
        seen.add(id(e))
        for child in _children(e):
            if not isinstance(child, Leaf | Imm):
                uses[id(child)] = uses.get(id(child), 0) + 1
                stack.append(child)
    return {k for k, n in uses.items() if n > 1}


def _children(e: Expr) -> tuple:
    match e:
        case Bin(a=a, b=b):
            return (a, b)
        case Sel(cond=c, a=a, b=b) | Fmadd(a=a, b=b, c=c):
            return (c, a, b)
        case Cust(args=args):
            return tuple(args)
    return (e.x,)  # type: ignore[union-attr]


def _own_root_tile(e: Expr, dtypes: list[str], out_dtype: str) -> bool:
    """Must a root comparison or logic op expand its first operand in a tile of its
    own? It is expanded where the result goes, and the output (an i8 mask) would
    round it."""
    return isinstance(e, Bin) and e.op in FLAGS and dtype_of(e.a, dtypes) != out_dtype


def _kind(dtype: str) -> str:
    return "f32" if is_float(dtype) else "i32"


def _join(a: str, b: str) -> str:
    if a == b or b == IMM:
        return a
    if a == IMM:
        return b
    return FULL


def _dims(cls: str, rows: int, cols: int) -> tuple[int, int]:
    return {FULL: (rows, cols), ROW: (1, cols), COL: (rows, 1), TR: (rows, cols)}[cls]


def _needs_zero(op: str, ca: str, cb: str) -> bool:
    """Does `_binary` need a zero tile for these operand classes? (mirrors its cases)"""
    if cb == IMM or ca in (cb, FULL):
        return False
    if ca == IMM:
        return op not in MIRRORED and op != "sub"
    return not (cb == FULL and (op in MIRRORED or op == "sub"))
