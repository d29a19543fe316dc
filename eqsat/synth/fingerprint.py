"""Characteristic vectors: a term evaluated with the registry's reference semantics
on random inputs, under several concrete sizes of its dim classes.

Each dim class of a term's partition gets a size, distinct from every other class's,
from each of two size tables (increasing and decreasing), so that a shape the
partition does not force square is not square: transpose(a) never looks like `a`.
Inputs are small integers in [-4, 4] (exact: associativity and distributivity hold
bit for bit, so the integer values are hashed) and floats in [-1, 1] in float64
(compared with a tolerance inside a bucket of equal integer hashes). A variable's
values depend only on (seed, table, its name, its concrete shape), so all terms of one
partition see the same inputs.
"""

from __future__ import annotations

import hashlib
import zlib
from collections.abc import Sequence
from functools import cache

import numpy as np

from eqsat.ir.types import DType, TensorType
from eqsat.ops import REGISTRY, OpTypeError
from eqsat.synth.shapes import FIXED_ATTRS, Dim, Partition, Shape, SynthError, dim_order, var_shape
from eqsat.synth.terms import Term

N_TABLES = 2
INT_RANGE = 4
FLOAT_RTOL = 1e-6
FLOAT_ATOL = 1e-9


def size_table(k: int, n: int) -> list[int]:
    """Distinct sizes for `n` dim classes: 2, 3, ... (k even) or the same reversed."""
    sizes = [2 + i for i in range(max(n, 2))]
    return sizes if k % 2 == 0 else sizes[::-1]


def class_sizes(partition: Partition, symbols: Sequence[Dim], k: int) -> dict[Dim, int]:
    """Concrete size of each canonical dim (classes ordered by their first symbol)."""
    reps: list[Dim] = []
    for d in sorted(symbols, key=dim_order):
        r = partition.find(d)
        if r not in reps:
            reps.append(r)
    table = size_table(k, len(reps))
    return {r: table[i] for i, r in enumerate(reps)}


@cache
def _attrs(op: str) -> dict:
    return REGISTRY[op].bind_attrs(FIXED_ATTRS.get(op, {}))


def int_capable(op: str) -> bool:
    """Whether `op` accepts i32 operands (float-only ops are fingerprinted on floats)."""
    opdef = REGISTRY[op]
    t = TensorType(DType.parse("i32"), (2, 3))
    try:
        opdef.type_of([t] * len(opdef.operands), _attrs(op))
    except OpTypeError:
        return False
    return True


class Fingerprinter:
    """Evaluates terms (memoized per term and partition) and hashes their values."""

    def __init__(self, ranks: dict[str, int], seed: int, use_ints: bool = True):
        self.ranks = ranks
        self.seed = seed
        self.use_ints = use_ints
        self.symbols = [d for v, r in ranks.items() for d in var_shape(v, r)]
        self._values: dict[tuple, tuple[np.ndarray, ...]] = {}
        self._inputs: dict[tuple, np.ndarray] = {}
        self._sizes: dict[tuple[Partition, int], dict[Dim, int]] = {}

    @property
    def kinds(self) -> tuple[str, ...]:
        return ("int", "float") if self.use_ints else ("float",)

    def sizes(self, partition: Partition, k: int) -> dict[Dim, int]:
        key = (partition, k)
        if key not in self._sizes:
            self._sizes[key] = class_sizes(partition, self.symbols, k)
        return self._sizes[key]

    def concrete(self, shape: Shape, partition: Partition, k: int) -> tuple[int, ...]:
        sizes = self.sizes(partition, k)
        return tuple(sizes[partition.find(d)] for d in shape)

    def _input(self, var: str, shape: tuple[int, ...], k: int, kind: str) -> np.ndarray:
        key = (var, shape, k, kind)
        if key not in self._inputs:
            words = [self.seed, k, zlib.crc32(var.encode()), kind == "int", *shape]
            rng = np.random.default_rng(words)
            if kind == "int":
                value = rng.integers(-INT_RANGE, INT_RANGE + 1, size=shape, dtype=np.int64)
            else:
                value = rng.uniform(-1.0, 1.0, size=shape)
            self._inputs[key] = value
        return self._inputs[key]

    def values(self, t: Term, partition: Partition) -> tuple[np.ndarray, ...]:
        """One array per (size table, kind): tables outer, kinds inner."""
        key = (t, partition)
        hit = self._values.get(key)
        if hit is not None:
            return hit
        if isinstance(t, str):
            shape = var_shape(t, self.ranks[t])
            out = tuple(
                self._input(t, self.concrete(shape, partition, k), k, kind)
                for k in range(N_TABLES)
                for kind in self.kinds
            )
        else:
            opdef = REGISTRY[t[0]]
            attrs = _attrs(t[0])
            children = [self.values(c, partition) for c in t[1:]]
            try:
                out = tuple(
                    np.asarray(opdef.ref([c[i] for c in children], attrs))
                    for i in range(len(children[0]))
                )
            except (ValueError, OpTypeError) as err:
                raise SynthError(f"cannot evaluate {t[0]} while fingerprinting: {err}") from err
        self._values[key] = out
        return out

    def key(self, t: Term, shape: Shape, partition: Partition) -> tuple[bytes, tuple]:
        """(hash of the exact part, the float arrays compared with a tolerance)."""
        vals = self.values(t, partition)
        h = hashlib.blake2b(digest_size=16)
        h.update(repr((sorted(map(sorted, partition.classes)), shape)).encode())
        floats = []
        for i, v in enumerate(vals):
            kind = self.kinds[i % len(self.kinds)]
            h.update(repr(v.shape).encode())
            if kind == "int":
                h.update(np.ascontiguousarray(v, dtype=np.int64).tobytes())
            else:
                floats.append(v)
                if not self.use_ints:  # nothing exact: hash a coarse rounding
                    h.update(np.round(v.astype(np.float64), 4).tobytes())
        return h.digest(), tuple(floats)


def floats_match(x: Sequence[np.ndarray], y: Sequence[np.ndarray]) -> bool:
    return all(
        a.shape == b.shape and np.allclose(a, b, rtol=FLOAT_RTOL, atol=FLOAT_ATOL, equal_nan=True)
        for a, b in zip(x, y, strict=True)
    )
