"""Predicate guards: facts about the target that rules read but do not compute.

A rule is hardware-independent data, yet some choices (a matmul's tile) must come from
the hardware. A predicate guard names an egglog relation that the pipeline fills from
the `Hardware` before saturation (`rows`); in a rule, `tile_candidate(dtype(a), TM,
TN, TK)` holds for each row, binding the names that are still unbound and comparing
the others:

    (TileCandidate t_1 v_TM v_TN v_TK)

The relations are declared in eqsat/egraph/prelude.egg, so rules compile and load
without a hardware; with no rows, a rule guarded by a predicate never fires.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from eqsat.rules import ast
from eqsat.rules.errors import GuardTypeError
from eqsat.rules.exprs import describe, is_pattern_name, value
from eqsat.rules.scope import TY_WORDS, Scope, Ty


@dataclass(frozen=True)
class Predicate:
    name: str
    relation: str  # the egglog relation (declared in prelude.egg)
    params: tuple[tuple[str, Ty], ...]  # (name for messages, type)
    doc: str
    rows: Callable[..., Iterable[tuple]]  # Hardware -> the relation's rows


def _tile_rows(hw) -> Iterable[tuple]:
    from eqsat.tiling import candidate_rows

    return candidate_rows(hw)


def _epilogue_tile_rows(hw) -> Iterable[tuple]:
    from eqsat.tiling import candidate_rows

    return candidate_rows(hw, epilogue=True)


_TILE_PARAMS = (("D", Ty.DTYPE), ("TM", Ty.INT), ("TN", Ty.INT), ("TK", Ty.INT))


PREDICATES: dict[str, Predicate] = {
    "tile_candidate": Predicate(
        "tile_candidate",
        "TileCandidate",
        _TILE_PARAMS,
        "a GEMM tile [TM, TN, TK] for inputs of dtype D that the hardware offers "
        "(eqsat/tiling.py: multiples of the array that fit SRAM double buffered)",
        _tile_rows,
    ),
    "tile_candidate_epilogue": Predicate(
        "tile_candidate_epilogue",
        "TileCandidateEpilogue",
        _TILE_PARAMS,
        "the same with room for an epilogue's own tiles (a residual, a convolution's "
        "transposed accumulator)",
        _epilogue_tile_rows,
    ),
}


def usage(p: Predicate) -> str:
    return f"{p.name}({', '.join(n for n, _ in p.params)})"


def compile_predicate(pred: ast.Predicate, scope: Scope) -> None:
    p = PREDICATES.get(pred.name)
    if p is None:
        known = ", ".join(usage(q) for q in PREDICATES.values())
        raise scope.fail(
            GuardTypeError,
            f"unknown predicate '{pred.name}'; a guard compares two expressions (a == b) "
            f"or is one of the predicates {known}",
            pred.pos,
        )
    if len(pred.args) != len(p.params):
        raise scope.fail(GuardTypeError, f"write {usage(p)}", pred.pos)
    codes = []
    for arg, (pname, want) in zip(pred.args, p.params, strict=True):
        if is_pattern_name(arg, scope):
            assert isinstance(arg, ast.Name)
            codes.append(scope.fresh() if arg.name == "_" else scope.bind(arg.name, want, arg.pos))
            continue
        code, ty = value(arg, scope, want)
        if ty is not want:
            raise scope.fail(
                GuardTypeError,
                f"argument {pname} of {p.name}() is {TY_WORDS[want]}, but {describe(arg)} "
                f"is {TY_WORDS[ty]}",
                arg.pos,
            )
        codes.append(code)
    scope.atoms.append(f"({p.relation} {' '.join(codes)})")


def hardware_facts(hw) -> str:
    """egglog commands adding every predicate's rows for `hw`."""
    from eqsat.egraph.encoding import string

    lines = []
    for p in PREDICATES.values():
        for row in p.rows(hw):
            args = [
                string(v) if ty in (Ty.DTYPE, Ty.STR) else str(int(v))
                for v, (_, ty) in zip(row, p.params, strict=True)
            ]
            lines.append(f"({p.relation} {' '.join(args)})")
    return "\n".join(lines) + "\n"
