"""Program generators for the hwsim tests: a tiled, optionally double-buffered matmul.

Loop order is the cost model's canonical one (output-stationary): for each (m, n)
output tile, for each k tile, load A and B tiles and accumulate; then move the
accumulator out (optionally with relu, or requantized to i8) and store. With one k
tile, an A row panel stays resident across the n loop, and with one n tile too, B is
loaded once. With `double=True`, two SRAM slots per operand and per output let loads
of step s+1 and the store of tile t-1 overlap the matmul of step s (tokens: ld*/free*
load<->compute per step, pa*/pfree* for A panels, st*/ofree* compute<->store).
"""

from __future__ import annotations

from hwsim.dtypes import ITEMSIZE
from hwsim.isa import (
    Buffer,
    DramRef,
    Instr,
    Kernel,
    Load,
    Matmul,
    Move,
    Program,
    Requantize,
    Store,
    Tile,
)

ACC_DTYPE = {"i8": "i32", "bf16": "f32", "f32": "f32"}


def _ceil(a: int, b: int) -> int:
    return -(-a // b)


def tiled_matmul(
    m: int,
    n: int,
    k: int,
    tm: int,
    tn: int,
    tk: int,
    dtype: str = "f32",
    double: bool = True,
    act: str = "none",
    requant: tuple[int, int, int, str] | None = None,
    kernel: str | None = "matmul",
) -> Program:
    """y[m, n] = act(x[m, k] @ w[k, n]) as a tiled program (i8 requantized if given)."""
    s = ITEMSIZE[dtype]
    out_dtype = "i8" if requant else (ACC_DTYPE[dtype] if dtype == "i8" else dtype)
    so = ITEMSIZE[out_dtype]
    slots = 2 if double else 1
    a_resident = tk >= k
    b_resident = a_resident and tn >= n
    a_base, b_base = 0, slots * tm * tk * s
    o_base = _ceil(b_base + slots * tk * tn * s, 4) * 4
    bufs = (
        Buffer("x", dtype, (m, k), "input"),
        Buffer("w", dtype, (k, n), "input"),
        Buffer("y", out_dtype, (m, n), "output"),
    )
    out: list[Instr] = [Kernel(name=kernel)] if kernel else []
    step = tile = 0
    for pi, mi in enumerate(range(0, m, tm)):
        rm = min(tm, m - mi)
        pslot = pi % slots
        panel = Tile("sram", a_base + pslot * tm * tk * s, rm, k, dtype)
        if a_resident:
            wait = (f"pfree{pslot}",) if pi >= slots else ()
            out.append(
                Load(
                    dst=panel, src=DramRef("x", mi * k, rm, k, k), wait=wait, signal=(f"pa{pslot}",)
                )
            )
        for ni in range(0, n, tn):
            rn = min(tn, n - ni)
            acc = Tile("acc", 0, rm, rn, ACC_DTYPE[dtype])
            for ki in range(0, k, tk):
                rk = min(tk, k - ki)
                slot = step % slots
                loads: list[Load] = []
                if a_resident:
                    a = panel
                else:
                    a = Tile("sram", a_base + slot * tm * tk * s, rm, rk, dtype)
                    loads.append(Load(dst=a, src=DramRef("x", mi * k + ki, rm, rk, k)))
                b = Tile("sram", b_base + (0 if b_resident else slot) * tk * tn * s, rk, rn, dtype)
                if not b_resident or step == 0:
                    loads.append(Load(dst=b, src=DramRef("w", ki * n + ni, rk, rn, n)))
                wait: tuple[str, ...] = (f"ld{slot}",) * len(loads)
                if loads and step >= slots and not b_resident:
                    loads[0] = Load(dst=loads[0].dst, src=loads[0].src, wait=(f"free{slot}",))
                out += [
                    Load(dst=ld.dst, src=ld.src, wait=ld.wait, signal=(f"ld{slot}",))
                    for ld in loads
                ]
                if a_resident and ni == 0:
                    wait += (f"pa{pslot}",)
                signal = () if b_resident else (f"free{slot}",)
                if a_resident and ni + tn >= n:
                    signal += (f"pfree{pslot}",)
                mode = "overwrite" if ki == 0 else "accumulate"
                out.append(Matmul(acc=acc, a=a, b=b, mode=mode, wait=wait, signal=signal))
                step += 1
            oslot = tile % slots
            o = Tile("sram", o_base + oslot * tm * tn * so, rm, rn, out_dtype)
            ofree = (f"ofree{oslot}",) if tile >= slots else ()
            if requant:
                mult, shift, zp, rounding = requant
                out.append(
                    Requantize(
                        dst=o,
                        src=acc,
                        multiplier=mult,
                        shift=shift,
                        zero_point=zp,
                        rounding=rounding,
                        wait=ofree,
                        signal=(f"st{oslot}",),
                    )
                )
            else:
                out.append(Move(dst=o, src=acc, act=act, wait=ofree, signal=(f"st{oslot}",)))
            out.append(
                Store(
                    dst=DramRef("y", mi * n + ni, rm, rn, n),
                    src=o,
                    wait=(f"st{oslot}",),
                    signal=(f"ofree{oslot}",),
                )
            )
            tile += 1
    return Program(bufs, tuple(out))
