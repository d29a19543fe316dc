"""Syntax tree of a rules file. Every node carries the position of the token an error
about it should point at (1-based line and column)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Pos:
    line: int
    col: int


# ------------------------------------------------------------------ terms
# Patterns (LHS) and templates (RHS) share one syntax.


@dataclass(frozen=True)
class Var:
    """A tensor (Op e-class) variable: a lowercase name not followed by `(`."""

    name: str
    pos: Pos


@dataclass(frozen=True)
class Wildcard:
    """`_`: matches anything, binds nothing."""

    pos: Pos


@dataclass(frozen=True)
class AttrArg:
    key: str
    value: Expr
    pos: Pos  # of the key
    value_pos: Pos


@dataclass(frozen=True)
class Call:
    op: str
    args: tuple[Term, ...]
    attrs: tuple[AttrArg, ...]
    pos: Pos  # of the op name


Term = Var | Wildcard | Call


# ------------------------------------------------------------ expressions
# Attribute values and guards.


@dataclass(frozen=True)
class IntLit:
    value: int
    pos: Pos


@dataclass(frozen=True)
class FloatLit:
    value: float
    pos: Pos


@dataclass(frozen=True)
class BoolLit:
    value: bool
    pos: Pos


@dataclass(frozen=True)
class StrLit:
    """A name-valued attribute written as a literal: approximate="none"."""

    value: str
    pos: Pos


@dataclass(frozen=True)
class Name:
    """A bare name in an expression: an attribute variable, a dtype literal (f32...),
    `_`, or (in comparisons like `a != b`) a tensor variable. The checker decides."""

    name: str
    pos: Pos


@dataclass(frozen=True)
class ListLit:
    items: tuple[Expr, ...]
    pos: Pos


@dataclass(frozen=True)
class BinOp:
    op: str  # + - * / %
    left: Expr
    right: Expr
    pos: Pos  # of the operator


@dataclass(frozen=True)
class Neg:
    operand: Expr
    pos: Pos


@dataclass(frozen=True)
class Func:
    """rank(x), dim(x, i), shape(x), dtype(x)."""

    name: str
    args: tuple[Expr, ...]
    pos: Pos


Expr = IntLit | FloatLit | BoolLit | StrLit | Name | ListLit | BinOp | Neg | Func


# ------------------------------------------------------------------ rules


@dataclass(frozen=True)
class Item:
    """One entry of a rule side: `name = term` (a root / a new binding) or a term."""

    name: str | None
    name_pos: Pos | None
    term: Term

    @property
    def pos(self) -> Pos:
        return self.name_pos or term_pos(self.term)


@dataclass(frozen=True)
class Guard:
    op: str  # == != < <= > >=
    left: Expr
    right: Expr
    pos: Pos  # of the comparison operator


@dataclass(frozen=True)
class Predicate:
    """A predicate guard: `tile_candidate(dtype(a), TM, TN, TK)` (eqsat.rules.predicates)."""

    name: str
    args: tuple[Expr, ...]
    pos: Pos  # of the predicate's name


@dataclass(frozen=True)
class Assume:
    """`assume s > 0` / `assume abs(acc) >= 64`: every element of tensor `s` (or its
    magnitude) compares so with a number."""

    name: str
    op: str  # > >= < <= !=
    value: Expr
    pos: Pos  # of the tensor's name
    magnitude: bool = False  # abs(name)


@dataclass(frozen=True)
class RuleDecl:
    name: str
    pos: Pos
    lhs: tuple[Item, ...]
    arrow: str  # "=>" or "<=>"
    arrow_pos: Pos
    rhs: tuple[Item, ...]
    guards: tuple[Guard | Predicate, ...] = ()
    approx: float | None = None
    doc: str | None = None
    assumes: tuple[Assume, ...] = ()

    @property
    def bidirectional(self) -> bool:
        return self.arrow == "<=>"


@dataclass(frozen=True)
class RulesFile:
    path: str
    ruleset: str
    ruleset_pos: Pos | None  # the header's name, None when defaulted to the file stem
    rules: tuple[RuleDecl, ...]
    source: str
    tests: tuple[TestDecl, ...] = ()


def term_pos(term: Term) -> Pos:
    return term.pos


def expr_pos(expr: Expr) -> Pos:
    return expr.pos


# ------------------------------------------------------------------ tests
# `test NAME { ... }` blocks: a model fragment and what must hold once it is optimized
# (eqsat/ruletest runs them; the rule compiler and the optimizer ignore them).


@dataclass(frozen=True)
class ExpectKernels:
    """`expect kernels == [op, ...]` (or `!=`): the extracted program's kernels, as a
    multiset of op names."""

    op: str  # == or !=
    kernels: tuple[tuple[str, Pos], ...]
    pos: Pos


@dataclass(frozen=True)
class ExpectKernelCount:
    """`expect kernels <= 2`: how many kernels the extracted program has."""

    op: str  # == != < <= > >=
    count: int
    pos: Pos


@dataclass(frozen=True)
class ExpectNo:
    """`expect no softmax`: no node of that op in the extracted program."""

    op: str
    pos: Pos


@dataclass(frozen=True)
class ExpectEqual:
    """`expect equal(a, b)`: the two terms (values of the fragment, or calls over them in
    the model language) are in one e-class after saturation."""

    left: Term
    right: Term
    left_text: str  # the terms as written (model language)
    right_text: str
    pos: Pos


@dataclass(frozen=True)
class ExpectCost:
    """`expect cost < 0.8 * input`: the extracted program's estimated cycles compared
    with an expression of `input`, the cycles of the fragment as written."""

    op: str
    bound: Expr
    pos: Pos


Expectation = ExpectKernels | ExpectKernelCount | ExpectNo | ExpectEqual | ExpectCost


@dataclass(frozen=True)
class TestDecl:
    name: str
    pos: Pos
    model: object  # frontend.ast.Model of the fragment (see FRAGMENT_LINE_SHIFT)
    expects: tuple[Expectation, ...]
    hw: str | None = None  # `on hw=FILE|PRESET`; None: the default preset
    hw_pos: Pos | None = None
    approx: bool = False  # `with approx`: the approximate rules run too

    __test__ = False  # not a pytest class


# The fragment is parsed as `model NAME {` on a line of its own followed by the body
# lines, so its positions are one line below the rules file's.
FRAGMENT_LINE_SHIFT = 1
