"""Propose concrete graphs shaped like a rule's left-hand side, until one matches.

An attempt walks the pattern and builds a graph with GraphBuilder (so every proposal
is well-typed): a tensor variable becomes an input named after it, an op pattern
becomes a valid application of that op drawn by its generator family (opcases.py),
with the operands it already has pinned and the attributes the pattern fixes
overridden. Type expectations flow top-down where an op keeps its first operand's
type (elementwise ops, softmax), guard hints shape variables before they are drawn,
and a variable used twice is pinned. The matcher then decides; a failed attempt is
retried inside the same hypothesis example (never `assume`, so health checks stay
quiet and "could not generate an instance" is a count we can report).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cache
from typing import Any

import numpy as np
from hypothesis import strategies as st

from eqsat.interpreter import random_value
from eqsat.ir.graph import GraphBuilder
from eqsat.ir.types import DType, TensorType
from eqsat.limits import MAX_RANK
from eqsat.ops import REGISTRY, OpDef, OpKind, OpTypeError
from eqsat.rules import ast
from eqsat.verify import opcases
from eqsat.verify.attrchoice import NOTHING, AttributeChoices, Retry
from eqsat.verify.cases import OpCase, ok_dtypes
from eqsat.verify.guards import Facts
from eqsat.verify.hints import Plan, plan_for
from eqsat.verify.instance import Direction, match_lhs, root_key
from eqsat.verify.semantics import Env, NotYet, Undefined
from eqsat.verify.space import ALL_DTYPES, NoCase, Space, choice, ints, palettes, perms

MAX_ATTEMPTS = 40
_TRANSPARENT = {opcases.UNARY, opcases.BINARY, opcases.SOFTMAX, opcases.LAYERNORM}


@dataclass
class Instance:
    """A graph on which the direction fires: its LHS roots and the match's bindings."""

    direction: Direction
    builder: GraphBuilder
    roots: dict[str, int]
    env: Env
    attempts: int


# A guard may ask for any rank or side (`rank(x) == 100`, `dim(x, 0) == 10^9`); a
# tensor an example cannot hold is a failed attempt, not an allocation.
MAX_DRAWN_ELEMENTS = 2**22


def _drawable(t: TensorType) -> TensorType:
    if t.rank > MAX_RANK or any(side < 0 for side in t.shape):
        raise Retry(f"{t} is beyond the ranks an example draws")
    if math.prod(t.shape) > MAX_DRAWN_ELEMENTS:
        raise Retry(f"{t} is larger than an example draws")
    return t


@cache
def _plan(direction: Direction) -> Plan:
    return plan_for(direction.lhs, direction.guards)


def find_instance(
    draw, direction: Direction, facts: Facts | None = None, attempts: int = MAX_ATTEMPTS
) -> Instance | None:
    """Up to `attempts` proposals; the first the matcher accepts, or None. `facts`:
    the rows of predicate guards (guards.hardware_facts)."""
    plan = _plan(direction)
    for k in range(1, attempts + 1):
        gen = _Generator(draw, direction, plan, draw(palettes()))
        try:
            roots = gen.run()
        except (Retry, NoCase, OpTypeError, NotYet, Undefined):
            continue
        env = match_lhs(direction, gen.builder.graph, roots, facts, gen.pick)
        if env is not None:
            return Instance(direction, gen.builder, roots, env, k)
    return None


@cache
def const_value(dtype: DType) -> st.SearchStrategy[float]:
    """Fill values of constants: the special ones first, then any normal float32 (or
    any integer of the type: the frontend only accepts those)."""
    if dtype.is_int:
        import numpy as np

        info = np.iinfo(dtype.np_dtype)
        special = st.sampled_from([0, 1, -1, 2, int(info.max), int(info.min)])
        return st.one_of(special, st.integers(int(info.min), int(info.max))).map(float)
    special = st.sampled_from([0.0, 1.0, -1.0, 2.0, 0.5, -0.5, 3.0, 1e4, -1e4, 1e-4])
    floats = st.floats(-1e4, 1e4, allow_nan=False, allow_subnormal=False, width=32)
    return st.one_of(special, floats)


class _Generator(AttributeChoices):
    def __init__(self, draw, direction: Direction, plan: Plan, space: Space):
        self.draw = draw
        self.direction = direction
        self.plan = plan
        self.space = space
        self.builder = GraphBuilder("instance")
        self.env = Env(self.builder.graph)  # provisional: the matcher recomputes it
        self.root_name: str | None = None
        self.pending = {
            item.name: item for item in direction.lhs if item.name in plan.referenced_roots
        }

    # ----------------------------------------------------------------- walk

    def run(self) -> dict[str, int]:
        roots: dict[str, int] = {}
        for item in self.direction.lhs:
            if item.name in self.pending:
                continue  # generated where another root uses it, with its type known
            roots[root_key(item)] = self._root(item, None)
        for name, item in self.pending.items():
            roots[name] = self.env.tensors.get(name) or self._root(item, None)
        return roots

    def _root(self, item: ast.Item, want: TensorType | None) -> int:
        self.root_name = item.name  # a leaf root (`w1 = param()`) is named after it
        node = self.gen(item.term, want, None)
        if item.name is not None and self.env.tensors.setdefault(item.name, node) != node:
            raise Retry(f"root {item.name} bound twice")
        return node

    def pick(self, rows):
        return rows[0] if len(rows) == 1 else self.draw(choice(tuple(rows)))

    def type_of(self, node: int) -> TensorType:
        return self.builder.graph.nodes[node].type

    def gen(self, term: ast.Term, want: TensorType | None, dtype: DType | None) -> int:
        if isinstance(term, ast.Wildcard):
            return self.leaf("input", want or self.var_type(None, None, dtype), None)
        if isinstance(term, ast.Var):
            return self.var(term.name, want, dtype)
        op = REGISTRY[term.op]
        if op.kind is OpKind.LEAF:
            return self.gen_leaf(term, op, want, dtype)
        if not op.operands:
            return self.gen_nullary(term, op, want, dtype)
        return self.gen_op(term, op, want, dtype)

    def is_free(self, term: ast.Term) -> bool:
        """A wildcard or a variable not bound yet: its type can come from the op."""
        if isinstance(term, ast.Wildcard):
            return True
        return (
            isinstance(term, ast.Var)
            and term.name not in self.env.tensors
            and term.name not in self.pending
        )

    def var(self, name: str, want: TensorType | None, dtype: DType | None) -> int:
        if name in self.env.tensors:
            return self.env.tensors[name]
        if name in self.pending:
            if self.plan.hints(name).any:
                want = self.var_type(name, want, dtype)
            return self._root(self.pending[name], want)
        t = self.var_type(name, want, dtype)
        same = [n for n in self.env.tensors.values() if self.type_of(n) == t]
        if same and self.draw(ints(0, 7)) == 0:
            node = self.draw(choice(tuple(same)))  # two variables, one e-class
        else:
            node = self.leaf("input", t, name)
        self.env.tensors[name] = node
        return node

    # ---------------------------------------------------------------- types

    def var_type(self, name: str | None, want: TensorType | None, dtype: DType | None):
        """The wanted type, adjusted to what the guards say about `name`."""
        hints = self.plan.hints(name) if name else None
        hinted_dtype = self._eval(hints.dtype) if hints else None
        dt = DType(hinted_dtype) if hinted_dtype else (want.dtype if want else dtype)
        if dt is None:
            dt = self.draw(choice(tuple(ALL_DTYPES)))
        shape = self._eval(hints.shape) if hints else None
        if shape is not None:
            return _drawable(TensorType(dt, tuple(shape)))
        rank = self._eval(hints.rank) if hints else None
        shape = list(want.shape) if want is not None else list(self.draw(self.space.shapes()))
        if isinstance(rank, int) and rank > MAX_RANK:
            raise Retry(f"rank {rank} is beyond the ranks an example draws")
        if isinstance(rank, int) and 0 <= rank != len(shape):
            extra = [self.draw(self.space.sides()) for _ in range(max(rank - len(shape), 0))]
            shape = (extra + shape)[len(shape) + len(extra) - rank :]
        if hints is None:
            return _drawable(TensorType(dt, tuple(shape)))
        for i, expr in hints.dims.items():
            value = self._eval(expr)
            j = i if i >= 0 else len(shape) + i
            if isinstance(value, int) and value > 0 and 0 <= j < len(shape):
                shape[j] = value
        for i, low in hints.minimum.items():
            j = i if i >= 0 else len(shape) + i
            if 0 <= j < len(shape) and shape[j] < low:
                m = hints.multiple.get(i, 1)
                shape[j] = -(-low // m) * m  # the smallest multiple of m from `low` on
        return _drawable(TensorType(dt, tuple(shape)))

    # ---------------------------------------------------------------- nodes

    def leaf(self, op: str, t: TensorType, name: str | None, value: float | None = None) -> int:
        attrs: dict[str, Any] = {"shape": t.shape, "dtype": t.dtype.value}
        if op == "const":
            attrs["value"] = self.draw(const_value(t.dtype)) if value is None else value
        else:
            used = {
                str(n.attr("name"))
                for n in self.builder.graph.nodes
                if n.op in ("input", "param", "literal")
            }
            base = name or "_"
            attrs["name"] = base if base not in used and base != "_" else f"{base}{len(used)}"
        if op == "literal":  # its values are part of the instance
            rng = np.random.default_rng(self.draw(ints(0, 2**16)))
            return self.builder.literal(attrs["name"], random_value(t, rng), t.dtype)
        return self.builder.add(op, (), attrs, attrs.get("name"))

    def gen_leaf(self, term: ast.Call, op: OpDef, want, dtype) -> int:
        given = {a.key: a.value for a in term.attrs}
        t = want or self.var_type(None, None, dtype)
        chosen = {}
        for spec in op.attrs:
            if spec.name in given:
                value = self.choose(spec, given[spec.name], NOTHING, 0)
                if value is not NOTHING:
                    chosen[spec.name] = value
        if "shape" in chosen or "dtype" in chosen:
            dt = DType(chosen.get("dtype", t.dtype.value))
            t = TensorType(dt, tuple(chosen.get("shape", t.shape)))
        value = chosen.get("value")
        if value is not None and t.dtype.is_int and not float(value).is_integer():
            raise Retry("an integer constant needs an integral value")
        name = None if op.name == "const" else (self.root_name or "p")
        node = self.leaf(op.name, t, name, value)
        self.bind_attrs(term, node)
        return node

    def gen_nullary(self, term: ast.Call, op: OpDef, want, dtype) -> int:
        """An op of no operands (iota): the type its consumer wants (else drawn), the
        attributes the pattern fixes, the others drawn."""
        t = want or self.var_type(None, None, dtype)
        drawn: dict[str, Any] = {"shape": tuple(t.shape), "dtype": t.dtype.value}
        if any(spec.name == "axis" for spec in op.attrs):
            drawn["axis"] = self.draw(ints(0, max(t.rank - 1, 0)))
        attrs = dict(drawn)
        for arg in term.attrs:
            value = self.choose(
                op.attr_spec(arg.key), arg.value, drawn.get(arg.key, NOTHING), t.rank
            )
            if value is not NOTHING:
                attrs[arg.key] = value
        try:
            node = self.builder.add(op.name, (), attrs)
        except OpTypeError as err:
            raise Retry(f"{op.name}: {err}") from None
        if want is not None and self.type_of(node) != want:
            raise Retry(f"{op.name} does not give {want}")
        self.bind_attrs(term, node)
        return node

    def gen_op(self, term: ast.Call, op: OpDef, want, dtype) -> int:
        family = opcases.OP_GENERATORS[op.name]
        transparent = family in _TRANSPARENT or op.name in ("add_relu", "mul_add", "mul_add_relu")
        first_want = want if transparent else None
        ok = ok_dtypes(op) or ALL_DTYPES
        if dtype not in ok:
            dtype = self.draw(choice(tuple(ok))) if len(ok) < len(ALL_DTYPES) else None
        first = term.args[0]
        if family is opcases.BINARY and self.is_free(first) and not self.is_free(term.args[1]):
            return self.gen_swapped(term, op, want, dtype)
        forced: dict[str, Any] = {}
        if want is not None and first_want is None:
            first_want, forced = self.invert(term, op, want)
        if self.is_free(first):
            name = first.name if isinstance(first, ast.Var) else None
            t0 = self.var_type(name, first_want, dtype)
            t0 = self.fit_contraction(term, op, t0)
            case = self.case(op, t0 if family.accepts(op, t0) else None, want, term)
            n0 = self.gen(first, case.in_types[0], dtype)
        else:
            n0 = self.gen(first, first_want, dtype)
            if not family.accepts(op, self.type_of(n0)):
                raise Retry(f"{op.name} does not take {self.type_of(n0)}")
            case = self.case(op, self.type_of(n0), want, term)
        if forced:
            case = OpCase(case.op, case.in_types, {**case.attrs, **forced})
        nodes = [n0]
        for arg, t in zip(term.args[1:], case.in_types[1:], strict=True):
            nodes.append(self.gen(arg, t, t.dtype))
        full, fixed = self.attrs_for(term, op, case, self.type_of(n0).rank)
        try:
            node = self.builder.add(op.name, nodes, full)
        except OpTypeError:
            node = self.builder.add(op.name, nodes, fixed)  # only what the pattern fixes
        self.bind_attrs(term, node)
        return node

    @staticmethod
    def _contracts(op: OpDef) -> bool:
        """A matrix product, or a fused kernel whose body starts with one."""
        if op.kind is OpKind.MATMUL and op.name != "qmatmul":
            return True
        node = op.composition
        while node is not None and not isinstance(node, str):
            if REGISTRY[node.op].kind is OpKind.MATMUL and node.op != "qmatmul":
                return node.args[0] == op.operands[0]
            node = node.args[0]
        return False

    def invert(self, term: ast.Call, op: OpDef, want: TensorType):
        """(the first operand's type, attributes) for ops whose result type does not
        follow the first operand's: matrix products, transposes, a Winograd output."""
        if self._contracts(op) and want.rank >= 2:
            # [..., M, K] @ [K, N] -> [..., M, N]
            return want.with_shape((*want.shape[:-1], self.draw(self.space.sides()))), {}
        if op.name == "transpose":
            spec = op.attr_spec("perm")
            given = {a.key: a.value for a in term.attrs}.get("perm")
            drawn = tuple(self.draw(perms(want.rank)))
            perm = drawn if given is None else self.choose(spec, given, drawn, want.rank)
            if sorted(perm) != list(range(want.rank)):
                return None, {}
            shape = [0] * want.rank
            for i, p in enumerate(perm):
                shape[p] = want.shape[i]  # out[i] = x[perm[i]]
            return want.with_shape(tuple(shape)), {"perm": tuple(perm)}
        if op.name == "winograd_output" and want.rank == 4:
            # [N, O, HO, WO] from [(m+2)^2, N * tiles, O]
            from eqsat.ops.winograd import TILE_SIZES, tiles

            m = self.draw(choice(TILE_SIZES))
            n, o, ho, wo = want.shape
            th, tw = tiles((ho, wo), m)
            first = want.with_shape(((m + 2) ** 2, n * th * tw, o))
            return first, {"m": m, "size": (ho, wo)}
        return None, {}

    def fit_contraction(self, term: ast.Call, op: OpDef, t0: TensorType) -> TensorType:
        """A product whose free second operand has shape hints (`dim(b, 0) >= 1024`):
        give the first operand the contraction size those hints imply."""
        second = term.args[1] if len(term.args) > 1 else None
        if not (self._contracts(op) and t0.rank >= 2 and isinstance(second, ast.Var)):
            return t0
        if not self.is_free(second) or not self.plan.hints(second.name).any:
            return t0
        k_axis = -1 if op.name == "matmul_nt" else -2
        probe = t0.with_shape((t0.shape[-1], self.draw(self.space.sides())))
        tb = self.var_type(second.name, probe, t0.dtype)
        if tb.rank < 2:
            return t0
        return t0.with_shape((*t0.shape[:-1], tb.shape[k_axis]))

    def gen_swapped(self, term: ast.Call, op: OpDef, want, dtype) -> int:
        """`op(v, t)` with v free: build t first and draw v as its broadcast partner
        (broadcasting is symmetric in shape), so that guards relating v to t can hold."""
        first, second = term.args
        n1 = self.gen(second, want, dtype)
        case = opcases.draw_case(self.draw, op.name, self.type_of(n1), self.space)
        name = first.name if isinstance(first, ast.Var) else None
        n0 = self.gen(first, self.var_type(name, case.in_types[1], dtype), dtype)
        node = self.builder.add(op.name, [n0, n1], {})
        self.bind_attrs(term, node)
        return node

    def case(self, op: OpDef, first, want, term: ast.Call) -> OpCase:
        """A case of `op` whose operand count fits the pattern, agreeing with the
        variables already bound (forced if need be) and, if it can, with `want`."""
        bound = {
            i: self.type_of(self.env.tensors[a.name])
            for i, a in enumerate(term.args)
            if i and isinstance(a, ast.Var) and a.name in self.env.tensors
        }
        fallback = None
        for _ in range(4):
            case = opcases.draw_case(self.draw, op.name, first, self.space)
            if len(case.in_types) != len(term.args):
                continue
            types = list(case.in_types)
            for i, t in bound.items():
                types[i] = t
            case = OpCase(case.op, tuple(types), case.attrs)
            try:
                if want is None or case.out_type() == want:
                    return case
            except OpTypeError:
                continue
            fallback = fallback or case
        if fallback is None:
            raise Retry(f"no case of {op.name} fits the pattern")
        return fallback


__all__ = ["MAX_ATTEMPTS", "Instance", "Retry", "const_value", "find_instance"]
