"""How a generation attempt chooses attribute values (a mixin of generate.py's
generator): what the pattern fixes (a literal, a bound variable, a list with bound
elements, an expression over bound values), what a guard steers to (`P ==
range(rank(x))`), and otherwise what the op's case generator drew. After a node is
built its canonical attributes bind the pattern's names for the rest of the attempt.
"""

from __future__ import annotations

from typing import Any

from eqsat.ops import REGISTRY, OpDef
from eqsat.rules import ast
from eqsat.rules.scope import DTYPE_NAMES
from eqsat.rules.terms import _NOT_LITERAL, literal_value
from eqsat.verify.cases import OpCase
from eqsat.verify.guards import attr_value, match_attr
from eqsat.verify.semantics import NotYet, Undefined, evaluate
from eqsat.verify.space import ints

_AXIS_ATTRS = ("axis", "axes", "perm")
NOTHING = object()  # "the pattern does not say": keep what the case drew


class Retry(Exception):
    """This attempt cannot become an instance of the pattern."""


class AttributeChoices:
    """Needs `env`, `plan`, `draw` and `builder` from the generator."""

    def _eval(self, expr: ast.Expr | None) -> Any:
        if expr is None:
            return None
        try:
            return evaluate(expr, self.env)[0]
        except (NotYet, Undefined):
            return None

    def attrs_for(self, term: ast.Call, op: OpDef, case: OpCase, rank: int):
        """(the case's attributes with the pattern's overrides, only the overrides)."""
        full = dict(case.attrs)
        fixed = {k: v for k, v in case.attrs.items() if op.attr_spec(k).required}
        for arg in term.attrs:
            spec = op.attr_spec(arg.key)
            value = self.choose(spec, arg.value, case.attrs.get(arg.key, NOTHING), rank)
            if value is not NOTHING:
                full[arg.key] = fixed[arg.key] = value
        return full, fixed

    def choose(self, spec, expr: ast.Expr, drawn: Any, rank: int) -> Any:
        """The value the pattern (or a guard steering it) asks for; `drawn` if free."""
        if isinstance(expr, ast.Name) and expr.name == "_":
            return drawn
        if isinstance(expr, ast.Name) and expr.name not in DTYPE_NAMES:
            if expr.name in self.env.values:
                return self.env.values[expr.name][0]
            steered = self._eval(self.plan.steer.get(expr.name))
            if steered is not None:
                return steered
            return drawn  # a constant's free value is drawn for its dtype by leaf()
        if literal_value(expr) is _NOT_LITERAL and isinstance(expr, ast.ListLit):
            return tuple(self._element(e, i, spec, drawn, rank) for i, e in enumerate(expr.items))
        try:
            return attr_value(spec, expr, self.env)
        except (NotYet, Undefined):
            return drawn

    def _element(self, expr: ast.Expr, i: int, spec, drawn: Any, rank: int) -> int:
        same_length = isinstance(drawn, tuple) and len(drawn) > i
        if isinstance(expr, ast.Name) and expr.name != "_" and expr.name not in self.env.values:
            expr = self.plan.steer.get(expr.name) or ast.Name("_", expr.pos)
        if not (isinstance(expr, ast.Name) and expr.name == "_"):
            value = self._eval(expr)
            if isinstance(value, int):
                return value
        if same_length:
            return int(drawn[i]) % max(rank, 1) if spec.name in _AXIS_ATTRS else int(drawn[i])
        top = max(rank - 1, 0) if spec.name in _AXIS_ATTRS else 3
        return self.draw(ints(0, top))

    def bind_attrs(self, term: ast.Call, node: int) -> None:
        """Bind the pattern's attribute variables to the node's canonical values."""
        attrs = self.builder.graph.nodes[node].attr_dict
        op = REGISTRY[term.op]
        for arg in term.attrs:
            try:
                ok = match_attr(op.attr_spec(arg.key), arg.value, attrs[arg.key], self.env, [])
            except (NotYet, Undefined):
                continue
            if not ok:
                raise Retry(f"{term.op} attribute {arg.key} does not match")
