"""Enumerate well-typed terms by size, keeping one representative per fingerprint class.

Layer n holds terms of n op applications whose operands are representatives of
smaller layers (Ruler's trick: a term built from a non-representative equals one built
from its representative by congruence, so it adds no new identity). Every enumerated
term joins the class of its fingerprint; a class's other members are its candidate
rules against the representative.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from eqsat.synth.fingerprint import Fingerprinter, floats_match
from eqsat.synth.shapes import Partition, Shape, arity, infer, var_shape
from eqsat.synth.terms import Term

Progress = Callable[[int, int, int], None]  # (layer, done, total in the layer)


@dataclass
class TermClass:
    rep: Term
    size: int
    shape: Shape
    partition: Partition
    floats: tuple
    members: list[Term] = field(default_factory=list)  # other terms of the class


@dataclass
class Enumeration:
    classes: list[TermClass]
    terms: int  # well-typed terms fingerprinted
    complete: bool  # False: stopped by the time budget in layer `last_size`
    last_size: int
    seconds: float


def layer_work(unary: int, binary: int, layers: Sequence[int], n: int) -> int:
    """Operand combinations tried for layer n given the representatives per layer."""
    combos = unary * layers[n - 1]
    combos += binary * sum(layers[i] * layers[n - 1 - i] for i in range(n))
    return combos


def enumerate_terms(
    op_names: Sequence[str],
    ranks: dict[str, int],
    max_size: int,
    fingerprinter: Fingerprinter,
    deadline: float | None = None,
    progress: Progress | None = None,
) -> Enumeration:
    start = time.perf_counter()
    classes: list[TermClass] = []
    buckets: dict[bytes, list[int]] = {}
    reps: list[list[int]] = []  # class indices per layer
    terms = 0

    def add(t: Term, n: int, shape: Shape, partition: Partition) -> None:
        digest, floats = fingerprinter.key(t, shape, partition)
        bucket = buckets.setdefault(digest, [])
        for ci in bucket:
            if floats_match(classes[ci].floats, floats):
                classes[ci].members.append(t)
                return
        bucket.append(len(classes))
        reps[n].append(len(classes))
        classes.append(TermClass(t, n, shape, partition, floats))

    reps.append([])
    for v, r in ranks.items():
        add(v, 0, var_shape(v, r), Partition())
        terms += 1
    unary = [op for op in op_names if arity(op) == 1]
    binary = [op for op in op_names if arity(op) == 2]
    for n in range(1, max_size + 1):
        reps.append([])
        total = layer_work(len(unary), len(binary), [len(layer) for layer in reps], n)
        done = 0
        if progress is not None:
            progress(n, 0, total)

        def tick(k: int, n: int = n, total: int = total) -> bool:
            """Count k combinations; False when the time budget is spent."""
            nonlocal done
            done += k
            if progress is not None:
                progress(n, done, total)
            return deadline is None or time.perf_counter() < deadline

        for op in unary:
            for ci in list(reps[n - 1]):
                c = classes[ci]
                typed = infer(op, (c.shape,), c.partition)
                if typed is not None:
                    add((op, c.rep), n, typed[0], typed[1])
                    terms += 1
            if not tick(len(reps[n - 1])):
                return Enumeration(classes, terms, False, n, time.perf_counter() - start)
        for op in binary:
            for i in range(n):
                left, right = list(reps[i]), list(reps[n - 1 - i])
                for li in left:
                    a = classes[li]
                    for ri in right:
                        b = classes[ri]
                        p = a.partition.merge(b.partition)
                        typed = infer(op, (p.canon(a.shape), p.canon(b.shape)), p)
                        if typed is not None:
                            add((op, a.rep, b.rep), n, typed[0], typed[1])
                            terms += 1
                    if not tick(len(right)):
                        return Enumeration(classes, terms, False, n, time.perf_counter() - start)
    return Enumeration(classes, terms, True, max_size, time.perf_counter() - start)
