"""The attention kernel's instructions replayed on the simulator's queues, to price it.

backend/attention.py emits the tile program of eqsat/attention_plan.py step by step,
in the order `step_events` gives, its queues ordered by tokens: each load waits for
its slot's release two generations back, each compute for the loads and the
cross-queue tokens it reads (keys turned, scores ready, probabilities ready, output
accumulated), each store for the division before it and the store two output tiles
back. Here the same program is generated as abstract instructions (queue, cycles
from hwsim/timing.py, the instructions each waits on) and run with the simulator's
scheduling rules (hwsim/gemm_queues.py `run_queues`), so that what the closed form
cannot see is priced as it runs: a loop of one or two steps overlaps nothing, the
first keys' transpose and the last division stand alone, the DMA engines fill.

Tokens pair up first in, first out: every token here is signalled from one in-order
queue, so the simulator's earliest outstanding signal is the oldest one in program
order, and the n-th wait on a token takes the n-th signal.

All head groups run the same steps (only their DRAM addresses differ), so a kernel
of many groups is priced from a replay of its first few: the rest repeat the
steady state, which the slots' alternation makes periodic in pairs of groups.
"""

from __future__ import annotations

import functools
from collections import defaultdict

from hwsim import timing
from hwsim.dtypes import ITEMSIZE
from hwsim.gemm_queues import COMPUTE, LOAD, STORE, VECTOR, QueueProgram, run_queues
from hwsim.hardware import Hardware

from .attention_plan import (
    MASK_NONE,
    MASK_ROW,
    AttnOp,
    AttnPlan,
    AttnShape,
    AttnStep,
    attention_steps,
    op_cycles,
    op_gemv,
    pipelined,
    rescales_output,
    step_events,
    step_phases,
    tile_dims,
    zero_tiles,
)

REPLAY_BUDGET = 12_000  # instructions replayed; beyond, the head groups extrapolated
MIN_GROUPS = 4  # head groups replayed at least


class _Program:
    """A QueueProgram under construction whose waits name tokens, paired with their
    signals (first in, first out) once the whole program is known."""

    def __init__(self) -> None:
        self.prog = QueueProgram()
        self.signals: dict[str, list[int]] = defaultdict(list)
        self.waits: list[tuple[int, str, int]] = []  # instruction, token, ordinal
        self.taken: dict[str, int] = defaultdict(int)

    def add(self, queue: int, cycles: int, vector_unit: bool) -> int:
        return self.prog.add(queue, cycles, (), vector_unit)

    def wait(self, i: int, tokens) -> None:
        for tok in tokens:
            self.waits.append((i, tok, self.taken[tok]))
            self.taken[tok] += 1

    def signal(self, i: int, *tokens: str) -> None:
        for tok in tokens:
            self.signals[tok].append(i)

    def resolved(self) -> QueueProgram:
        deps: dict[int, list[int]] = defaultdict(list)
        for i, tok, k in self.waits:
            deps[i].append(self.signals[tok][k])
        for i, ds in deps.items():
            self.prog.deps[i] = tuple(ds)
        return self.prog


def attention_program(
    hw: Hardware, s: AttnShape, plan: AttnPlan, groups: int | None = None
) -> QueueProgram:
    """The instructions of backend/attention.py emit_attention for `plan` (only the
    first `groups` head groups if given), as a QueueProgram."""
    g, isz = plan.heads, ITEMSIZE[s.dtype]
    steps = attention_steps(s, plan, groups)
    overlap = pipelined(hw, s, plan)
    phases = {
        (f, la): step_phases(s, f, la, g, plan.out_t) for f in (True, False) for la in (True, False)
    }
    p = _Program()
    gens: dict[str, int] = defaultdict(int)
    out_gen = 0

    def load(ch: str, sizes: list[int]) -> tuple[tuple[str, int] | None, list[str]]:
        """Pipeline.load: generation gen of channel ch, its first DMA after the
        release of generation gen - 2; returns it and the tokens its reader waits on."""
        if not sizes:
            return None, []
        gen = gens[ch]
        gens[ch] += 1
        done = f"l{ch}{gen % 2}"
        for j, nbytes in enumerate(sizes):
            i = p.add(LOAD, timing.dma_cycles(hw, nbytes), False)
            if j == 0 and gen >= 2:
                p.wait(i, [f"f{ch}{gen % 2}"])
            p.signal(i, done)
        return (ch, gen), [done] * len(sizes)

    def release(gen: tuple[str, int] | None, at: int) -> None:
        if gen is not None:
            p.signal(at, f"f{gen[0]}{gen[1] % 2}")

    def run(st: AttnStep, ops: list[AttnOp], vector: bool, wait=(), signal=()) -> int:
        """The instructions of `ops` (emit_attention's run); returns the last."""
        dims = tile_dims(s, st.rn, st.kn, g, plan.out_t)
        ids: list[int] = []
        rescale = True
        for op in ops:
            if op_gemv(hw, s, op, dims):  # backend/gemm.py gemv_step, on the compute queue
                (_, k), (_, n) = dims[op.a], dims[op.b]  # type: ignore[index]
                ids += [p.add(COMPUTE, c, True) for c in timing.gemv_instruction_cycles(hw, n, k)]
                continue
            matmul = op.kind == "matmul"
            queue = VECTOR if vector and not matmul else COMPUTE
            i = p.add(queue, op_cycles(hw, s, op, dims, st.rn, st.kn, plan.out_t), not matmul)
            if rescale and rescales_output(op):  # after mm2 of the step before
                p.wait(i, ["ov"])
                rescale = False
            ids.append(i)
        p.wait(ids[0], wait)
        p.signal(ids[-1], *signal)
        return ids[-1]

    zero_waits = load("z", [isz] * len(zero_tiles(s, plan)))[1]  # no zero tiles: no waits
    kgen: dict[int, tuple] = {}
    rest: dict[int, dict[str, tuple]] = {}
    qgens: dict[int, tuple | None] = {}

    def load_k(n: int) -> None:
        st = steps[n]
        kgen[n] = load("k", [st.kn * s.d * isz] * g)

    def load_rest(n: int) -> None:
        st = steps[n]
        q_waits: list[str] = []
        if st.first:
            qgens[st.stream], q_waits = load("q", [st.rn * s.d * isz] * g)
        mrows = 1 if s.mask == MASK_ROW else st.rn
        masks = [mrows * st.kn * isz] * g if s.mask != MASK_NONE else []
        rest[n] = {"q": (None, q_waits), "m": load("m", masks)}
        rest[n]["v"] = load("v", [st.kn * s.dv * isz] * g)

    def front(n: int) -> None:
        st = steps[n]
        gen, k_waits = kgen.pop(n)
        pre, mm1 = phases[(st.first, st.last)][:2]
        zero = zero_waits if n == 0 else []
        q_waits = rest[n]["q"][1]
        if pre:
            end = run(st, pre, overlap, [*k_waits, *zero], ["kt"])
            release(gen, end)
            wait = ["kt", *q_waits]
        else:
            wait = [*k_waits, *zero, *q_waits]
        end = run(st, mm1, False, wait, ["sc"])
        if not pre:
            release(gen, end)
        if st.last:
            release(qgens.pop(st.stream), end)

    def back(n: int) -> None:
        st = steps[n]
        sm, mm2 = phases[(st.first, st.last)][2:4]
        (mgen, m_waits), (vgen, v_waits) = rest[n]["m"], rest.pop(n)["v"]
        vin = v_waits if plan.out_t else []
        end = run(st, sm, overlap, ["sc", *m_waits, *vin], ["pr"])
        release(mgen, end)
        if plan.out_t:
            release(vgen, end)
        vin = [] if plan.out_t else v_waits
        end = run(st, mm2, False, ["pr", *vin], ["od" if st.last else "ov"])
        if not plan.out_t:
            release(vgen, end)

    def post(n: int) -> None:
        nonlocal out_gen
        st = steps[n]
        slot = out_gen % 2
        free = [f"o{slot}"] if out_gen >= 2 else []
        end = run(st, phases[(st.first, st.last)][4], overlap, ["od", *free])
        p.signal(end, f"s{slot}")
        for h in range(g):
            i = p.add(STORE, timing.dma_cycles(hw, st.rn * s.dv * isz), False)
            if h == 0:
                p.wait(i, [f"s{slot}"])
            if h == g - 1:
                p.signal(i, f"o{slot}")
        out_gen += 1

    parts = {"k": load_k, "rest": load_rest, "front": front, "back": back, "post": post}
    for part, n in step_events([st.last for st in steps], overlap):
        parts[part](n)
    return p.resolved()


@functools.lru_cache(maxsize=1 << 12)
def replayed_cycles(hw: Hardware, s: AttnShape, plan: AttnPlan) -> int:
    """The kernel's cycles as the simulator runs it: the launch, then its instructions
    on the queues. A kernel of more than REPLAY_BUDGET instructions replays as many
    head groups as the budget holds (at least MIN_GROUPS); every further pair of
    groups adds what the last replayed pair added (slots alternate, so the steady
    state repeats every two groups)."""
    groups = s.batch // plan.heads
    n = MIN_GROUPS
    if groups > n + 1:
        n = max(n, REPLAY_BUDGET // len(attention_program(hw, s, plan, 1).queue))
    if groups <= n + 1:
        return hw.launch_cycles + round(run_queues(hw, attention_program(hw, s, plan)))
    n += (groups - n) % 2
    last = run_queues(hw, attention_program(hw, s, plan, n))
    before = run_queues(hw, attention_program(hw, s, plan, n - 2))
    return hw.launch_cycles + round(last + (groups - n) // 2 * (last - before))
