"""Two products chained in one kernel: a feed-forward block (x@w1 + b1, its
activation, then that times w2 with the second product's epilogue) whose intermediate
h stays in SRAM as the A operand of the second product, as inference engines run an
FFN. The first product's epilogue writes h's tiles on chip instead of storing them,
the second product's A loader reads whole rows of h from there, and w2's first panels
load while the first product runs (eqsat/chain_plan.py plans and prices it,
backend/chain.py emits it).

Declared by their bodies like every fused op (eqsat/ops/fused.py): the second inner
op's body with its A operand replaced by the first's body. Operands: the first
product's (x, w1, b1), then the second's without its A (w2, b2, and a residual r,
gamma, beta where it has them).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from eqsat.ir.types import DType, TensorType
from eqsat.ops import norm_matmul  # noqa: F401  (the second products registered first)
from eqsat.ops.base import OpTypeError
from eqsat.ops.fused import Call, fused
from eqsat.ops.registry import REGISTRY

# the first product's fused op -> the second products it chains with: a post-norm
# block's (BERT: its residual sum normalized after the second product) and a plain
# MLP's; a pre-norm block's first product normalizes x on the way in (GPT-2's ln_2)
_SECONDS = ("matmul_bias", "matmul_bias_add", "matmul_bias_add_layernorm")
FIRST = {
    "matmul_bias_gelu": _SECONDS,
    "matmul_bias_relu": _SECONDS,
    "layernorm_matmul_bias_gelu": _SECONDS[:2],
}


@dataclass(frozen=True)
class Chain:
    """A chain op's two inner ops and where their operands are among its own: the
    first op's in its order, the second's after its A (h)."""

    first: str
    second: str
    first_inputs: tuple[int, ...]
    second_inputs: tuple[int, ...]


def _rename(body: Call | str, names: dict[str, Call | str]) -> Call | str:
    """The body with its operand names replaced (a call used twice stays one call)."""
    seen: dict[int, Call] = {}

    def walk(e: Call | str) -> Call | str:
        if isinstance(e, str):
            return names[e]
        if id(e) not in seen:
            seen[id(e)] = Call(e.op, tuple(walk(a) for a in e.args), e.attrs)
        return seen[id(e)]

    return walk(body)


def _check(name: str, operands: tuple[str, ...], norm_first: bool):
    """The kernel takes rows x of f32 and two weight matrices, a bias vector per
    product, a residual of the output's shape and parameter vectors (of x's rows when
    the first product normalizes them, else of the output's): h is one f32 matrix of
    rows in SRAM and each epilogue adds per column (what the body alone would also
    take, broadcast, it does not)."""

    def check(ts: Sequence[TensorType], out: TensorType) -> None:
        t = dict(zip(operands, ts, strict=True))
        n1, n = t["w1"].shape[-1], t["w2"].shape[-1]
        rows = t["x"].shape[-1] if norm_first and t["x"].rank else n
        want = {"w1": 2, "w2": 2}
        vectors = {"b1": n1, "b2": n, "gamma": rows, "beta": rows}
        bad = [o for o, r in want.items() if t[o].rank != r]
        bad += [o for o, k in vectors.items() if o in t and t[o].shape != (k,)]
        if "r" in t and t["r"].shape != out.shape:
            bad.append("r")
        if t["x"].rank < 2 or t["x"].shape[:-1] != out.shape[:-1] or out.shape[-1] != n:
            bad.append("x")  # the residual broadcasts the product to a larger shape
        bad += [o for o in ("x", "w1", "w2") if t[o].dtype is not DType.F32 and o not in bad]
        if bad:
            raise OpTypeError(
                f"'{name}' takes f32 rows x [..., K], weights w1 [K, N1] and w2 [N1, N], "
                f"biases b1 [N1] and b2 [N], a residual of the output's shape and "
                f"gamma, beta [{'K' if norm_first else 'N'}]; got "
                + ", ".join(f"{o}: {t[o]}" for o in bad)
            )

    return check


# chain op -> its inner ops and operands
CHAINS: dict[str, Chain] = {}

for _first, _seconds in FIRST.items():
    for _second in _seconds:
        first_op, second_op = REGISTRY[_first], REGISTRY[_second]
        one = {"x": "x", "w": "w1", "b": "b1", "gamma": "gamma", "beta": "beta"}
        h = _rename(first_op.composition, one)
        two = {"w": "w2", "b": "b2"}
        rest = tuple(two.get(o, o) for o in second_op.operands[1:])
        names = {"x": h, **{o: two.get(o, o) for o in second_op.operands[1:]}}
        body = _rename(second_op.composition, names)
        norms = tuple(one[o] for o in first_op.operands[3:])  # the first's norm parameters
        operands = ("x", "w1", "b1", *rest, *norms)
        attrs = tuple(a for op in (first_op, second_op) for a in op.attrs if a.name != "tile")
        name = f"{_first}_{_second}"
        check = _check(name, operands, bool(norms))
        fused(name, operands, body, attrs, check=check)  # type: ignore[arg-type]
        CHAINS[name] = Chain(
            _first,
            _second,
            tuple(operands.index(one[o]) for o in first_op.operands),
            tuple(operands.index(o) for o in rest),
        )
