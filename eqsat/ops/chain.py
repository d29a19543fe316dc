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

from eqsat.ir.types import DType, TensorType
from eqsat.ops import norm_matmul  # noqa: F401  (the second products registered first)
from eqsat.ops.base import OpTypeError
from eqsat.ops.fused import Call, fused
from eqsat.ops.registry import REGISTRY

# the first product's fused op -> its activation
FIRST = {"matmul_bias_gelu": "gelu", "matmul_bias_relu": "relu"}
# the second product's fused op -> the suffix of the chain's name
SECOND = {
    "matmul_bias": "matmul_bias",
    "matmul_bias_add": "matmul_bias_add",
    "matmul_bias_add_layernorm": "matmul_bias_add_layernorm",
}


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


def _check(name: str, operands: tuple[str, ...]):
    """The kernel takes rows x of f32 and two weight matrices, a bias vector per
    product, a residual of the output's shape and parameter vectors: h is one f32
    matrix of rows in SRAM and each epilogue adds per column (what the body alone
    would also take, broadcast, it does not)."""

    def check(ts: Sequence[TensorType], out: TensorType) -> None:
        t = dict(zip(operands, ts, strict=True))
        n1, n = t["w1"].shape[-1], t["w2"].shape[-1]
        want = {"w1": 2, "w2": 2}
        vectors = {"b1": n1, "b2": n, "gamma": n, "beta": n}
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
                f"gamma, beta [N]; got {', '.join(f'{o}: {t[o]}' for o in bad)}"
            )

    return check


# chain op -> (first inner op, second inner op)
CHAINS: dict[str, tuple[str, str]] = {}

for _first, _act in FIRST.items():
    for _second, _suffix in SECOND.items():
        first_op, second_op = REGISTRY[_first], REGISTRY[_second]
        h = _rename(first_op.composition, {"x": "x", "w": "w1", "b": "b1"})
        rest = {"w": "w2", "b": "b2"}
        names = {"x": h, **{o: rest.get(o, o) for o in second_op.operands[1:]}}
        body = _rename(second_op.composition, names)
        operands = ("x", "w1", "b1", *(rest.get(o, o) for o in second_op.operands[1:]))
        attrs = tuple(a for op in (first_op, second_op) for a in op.attrs if a.name != "tile")
        name = f"matmul_bias_{_act}_{_suffix}"
        fused(name, operands, body, attrs, check=_check(name, operands))  # type: ignore[arg-type]
        CHAINS[name] = (_first, _second)
