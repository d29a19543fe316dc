"""The egglog encoding of eqsat programs, generated from the op registry.

Each registry op becomes a constructor of the `Op` datatype whose arguments are its
operands (sort Op) followed by its attributes (i64, f64, bool, String, IntList).
Variadic ops take exactly two operands here (concat(a, b, c) enters as
concat(a, concat(b, c))). The shape and dtype of every term are an analysis kept in
`(ShapeOf op)` (an IntList e-class) and `(DT op)` (a String), computed by rules
generated from each op's `egg_shape`/`egg_dtype` templates; rule guards read them.
"""

from __future__ import annotations

import math
import re
from decimal import Decimal
from functools import cache
from importlib import resources

from eqsat.ops import REGISTRY, AttrType, AttrValue, OpDef, OpKind
from eqsat.ops.fused import AttrRef, Call

ATTR_SORTS = {
    AttrType.INT: "i64",
    AttrType.FLOAT: "f64",
    AttrType.BOOL: "bool",
    AttrType.INTS: "IntList",
    AttrType.DTYPE: "String",
    AttrType.STR: "String",
}

ANALYSIS = "analysis"


def constructor(op_name: str) -> str:
    """Registry op name -> egglog constructor name: matmul_bias -> MatmulBias."""
    return "".join(part.capitalize() for part in op_name.split("_"))


@cache
def op_of_constructor() -> dict[str, str]:
    return {constructor(name): name for name in REGISTRY}


def operand_names(op: OpDef) -> tuple[str, ...]:
    """Operand names as the e-graph sees them (variadic ops are binary)."""
    if op.variadic:
        return (*op.operands, *(f"{op.operands[-1]}{i}" for i in range(1, 3 - len(op.operands))))
    return op.operands


def arg_sorts(op: OpDef) -> list[str]:
    return ["Op"] * len(operand_names(op)) + [ATTR_SORTS[a.type] for a in op.attrs]


# --------------------------------------------------------------- literals


def cons_list(codes) -> str:
    """An IntList term from egglog i64 expressions, first element outermost."""
    out = "(INil)"
    for code in reversed(tuple(codes)):
        out = f"(ICons {code} {out})"
    return out


def int_list(values) -> str:
    return cons_list(str(int(v)) for v in values)


def f64(value: float) -> str:
    value = float(value)
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    # The shortest digits that round-trip (repr), written without an exponent.
    text = format(Decimal(repr(value)), "f")
    return text if "." in text else text + ".0"


def string(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def literal(attr_type: AttrType, value: AttrValue) -> str:
    if attr_type is AttrType.INT:
        return str(int(value))
    if attr_type is AttrType.FLOAT:
        return f64(float(value))
    if attr_type is AttrType.BOOL:
        return "true" if value else "false"
    if attr_type is AttrType.INTS:
        return int_list(value)
    return string(str(value))


# ------------------------------------------------------- shape templates


def shape_template(op: OpDef) -> str:
    """The op's egg_shape, derived from the body for fused ops."""
    if op.egg_shape is not None:
        return op.egg_shape
    if op.kind is OpKind.FUSED and op.composition is not None:
        return _body_template(op.composition, op, "shape")
    return "{" + operand_names(op)[0] + "}"


def dtype_template(op: OpDef) -> str:
    if op.egg_dtype is not None:
        return op.egg_dtype
    if op.kind is OpKind.FUSED and op.composition is not None:
        return _body_template(op.composition, op, "dtype")
    return "{" + operand_names(op)[0] + "}"


def _body_template(body: Call | str, fused: OpDef, which: str) -> str:
    """Substitute a fused body's sub-op templates into each other."""
    if isinstance(body, str):
        return "{" + body + "}"
    inner = REGISTRY[body.op]
    template = shape_template(inner) if which == "shape" else dtype_template(inner)
    names = operand_names(inner)
    values: dict[str, str] = {
        n: _body_template(a, fused, which) for n, a in zip(names, body.args, strict=False)
    }
    for spec in inner.attrs:
        given = body.attrs.get(spec.name, spec.default)
        if isinstance(given, AttrRef):
            values[spec.name] = "{" + given.name + "}"
        else:
            values[spec.name] = literal(spec.type, given)
    if which == "dtype" and not template.startswith("{"):
        return template
    return re.sub(r"\{(\w+)\}", lambda m: values[m.group(1)], template)


def fill(template: str, shapes: dict[str, str], attrs: dict[str, str]) -> str:
    def repl(m: re.Match) -> str:
        key = m.group(1)
        return shapes[key] if key in shapes else attrs[key]

    return re.sub(r"\{(\w+)\}", repl, template)


# ------------------------------------------------------- generated text


def _datatype() -> str:
    lines = ["(datatype Op"]
    for name, op in REGISTRY.items():
        lines.append(f"  ({constructor(name)} {' '.join(arg_sorts(op))})".replace(" )", ")"))
    lines.append(")")
    lines.append("(constructor ShapeOf (Op) IntList)")
    lines.append("(function DT (Op) String :merge old)")
    return "\n".join(lines)


def _analysis_rules(name: str, op: OpDef) -> list[str]:
    operands = operand_names(op)
    var = {n: f"v_{n}" for n in (*operands, *(a.name for a in op.attrs))}
    pattern = f"(= e ({constructor(name)} {' '.join(var.values())}))".replace(" ))", "))")
    shapes = {n: f"(ShapeOf {var[n]})" for n in operands}
    attrs = {a.name: var[a.name] for a in op.attrs}
    shape = fill(shape_template(op), shapes, attrs)
    rules = [
        f'(rule ({pattern}) ((union (ShapeOf e) {shape})) :ruleset {ANALYSIS} :name "shape-{name}")'
    ]
    dtype = dtype_template(op)
    m = re.fullmatch(r"\{(\w+)\}", dtype)
    if m and m.group(1) in operands:
        rules.append(
            f"(rule ({pattern} (= d (DT {var[m.group(1)]}))) ((set (DT e) d)) "
            f':ruleset {ANALYSIS} :name "dtype-{name}")'
        )
    else:
        value = attrs[m.group(1)] if m else string(dtype)
        rules.append(
            f'(rule ({pattern}) ((set (DT e) {value})) :ruleset {ANALYSIS} :name "dtype-{name}")'
        )
    return rules


def provenance_declarations() -> str:
    """One function per constructor, keyed like its e-nodes, holding the name of the
    first rule that built such an e-node (rules compiled with provenance set it)."""
    return "\n".join(
        f"(function Prov_{constructor(name)} ({' '.join(arg_sorts(op))}) String :merge old)"
        for name, op in REGISTRY.items()
    )


@cache
def program_prelude() -> str:
    """Everything an e-graph needs before a model or rules enter it."""
    prelude = resources.files("eqsat.egraph").joinpath("prelude.egg").read_text()
    parts = [prelude, _datatype()]
    for name, op in REGISTRY.items():
        parts += _analysis_rules(name, op)
    return "\n".join(parts) + "\n"
