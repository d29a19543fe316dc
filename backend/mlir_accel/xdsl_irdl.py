"""Load an IRDL dialect definition into xDSL, with every constraint it states.

xDSL 0.74 has two IRDL readers and neither checks attributes: irdl_to_pyrdl keeps only
operand and result counts, and the interpreter (xdsl.interpreters.irdl.make_dialect)
knows no irdl.attributes, irdl.base or irdl.attribute. This module translates the IRDL
ops to xDSL's own PyRDL constraints (EqAttrConstraint, BaseAttr, AnyOf, AllOf,
ParamAttrConstraint, and FirstOf below for irdl.any_of) and builds the classes with xDSL's decorators, so that xDSL's
verifier checks operands, results, attributes and attribute parameters as MLIR's
IRDL verifier does. As in MLIR, a constraint value used more than once binds a
variable: every place it constrains must hold the same attribute.

Supported: irdl.dialect, irdl.type, irdl.attribute, irdl.parameters, irdl.operation,
irdl.operands / irdl.results (single, optional, variadic), irdl.attributes, irdl.is,
irdl.any, irdl.any_of, irdl.all_of, irdl.base (by builtin name or symbol) and
irdl.parametric. Anything else is an IrdlLoadError.
"""

from __future__ import annotations

import keyword
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from xdsl.context import Context
from xdsl.dialects import builtin, irdl
from xdsl.dialects.irdl.irdl import VariadicityAttr
from xdsl.ir import Attribute, Dialect, ParametrizedAttribute, SSAValue, TypeAttribute
from xdsl.irdl import (
    AllOf,
    AnyAttr,
    AttrConstraint,
    BaseAttr,
    EqAttrConstraint,
    IRDLOperation,
    ParamAttrConstraint,
    VarConstraint,
    VerificationContext,
    attr_def,
    irdl_attr_definition,
    irdl_op_definition,
    operand_def,
    opt_operand_def,
    opt_result_def,
    param_def,
    result_def,
    var_operand_def,
    var_result_def,
)
from xdsl.parser import Parser
from xdsl.utils.exceptions import VerifyException


class IrdlLoadError(Exception):
    """An IRDL construct this loader does not translate."""


@dataclass(frozen=True)
class FirstOf(AttrConstraint):
    """IRDL's any_of: the attribute satisfies one of the options, tried in order.
    (xDSL's AnyOf insists on options of disjoint attribute classes, so it cannot say
    `"sram" or "acc"`.) Variables an option binds count only if that option holds."""

    options: tuple[AttrConstraint, ...]

    def verify(self, attr: Attribute, constraint_context: VerificationContext) -> None:
        for option in self.options:
            trial = VerificationContext(
                dict(constraint_context._variables),
                dict(constraint_context._range_variables),
                dict(constraint_context._int_variables),
            )
            try:
                option.verify(attr, trial)
            except VerifyException:
                continue
            constraint_context._variables.update(trial._variables)
            constraint_context._range_variables.update(trial._range_variables)
            constraint_context._int_variables.update(trial._int_variables)
            return
        raise VerifyException(f"{attr} satisfies none of {', '.join(map(str, self.options))}")

    def variables(self) -> set[str]:
        if not self.options:
            return set()
        return set.intersection(*(o.variables() for o in self.options))

    def mapping_type_vars(self, type_var_mapping: Mapping[TypeVar, object]) -> FirstOf:
        return FirstOf(tuple(o.mapping_type_vars(type_var_mapping) for o in self.options))  # type: ignore[arg-type]


# Ops that only define constraint values (translated where a definition uses them).
_CONSTRAINT_OPS = (
    irdl.IsOp,
    irdl.AnyOp,
    irdl.AnyOfOp,
    irdl.AllOfOp,
    irdl.BaseOp,
    irdl.ParametricOp,
)

_OPERAND_DEFS = {
    VariadicityAttr.SINGLE: operand_def,
    VariadicityAttr.OPTIONAL: opt_operand_def,
    VariadicityAttr.VARIADIC: var_operand_def,
}
_RESULT_DEFS = {
    VariadicityAttr.SINGLE: result_def,
    VariadicityAttr.OPTIONAL: opt_result_def,
    VariadicityAttr.VARIADIC: var_result_def,
}


def _field(name: str) -> str:
    """The Python field of an operand or result: its IRDL name unless an Operation
    already has that attribute."""
    return f"{name}_" if keyword.iskeyword(name) or hasattr(IRDLOperation, name) else name


class _Translator:
    """Constraints of one dialect; attribute classes are made before any op uses them."""

    def __init__(self, ctx: Context, dialect: irdl.DialectOp) -> None:
        self.ctx = ctx
        self.dialect = dialect
        self.name = dialect.sym_name.data
        self.attrs: dict[str, type[ParametrizedAttribute]] = {}
        self.translated: dict[SSAValue, AttrConstraint] = {}

    def builtin_base(self, text: str) -> type[Attribute]:
        """The xDSL class of a builtin named like "#builtin.integer" or "!builtin.memref"
        (xDSL names builtin attributes without the dialect prefix)."""
        dialect, _, short = text.lstrip("#!").partition(".")
        if dialect == self.name and short in self.attrs:
            return self.attrs[short]
        if dialect == "builtin":
            found = {a.name: a for a in builtin.Builtin.attributes}.get(short)
        else:
            found = self.ctx.get_optional_attr(text.lstrip("#!"))
        if found is None:
            raise IrdlLoadError(f"irdl.base {text}: no such attribute or type in xDSL")
        return found

    def symbol_base(self, ref: builtin.SymbolRefAttr) -> type[ParametrizedAttribute]:
        parts = [ref.root_reference.data, *(r.data for r in ref.nested_references)]
        if parts[0] == self.name and len(parts) == 2:
            parts = parts[1:]
        if len(parts) != 1 or parts[0] not in self.attrs:
            raise IrdlLoadError(f"irdl symbol {ref} is not an attribute or type defined above")
        return self.attrs[parts[0]]

    def constraint(self, value: SSAValue) -> AttrConstraint:
        """The constraint an IRDL SSA value stands for; with several uses, one variable
        that all of them share (translated once)."""
        if value not in self.translated:
            self.translated[value] = self._translate(value)
        return self.translated[value]

    def _translate(self, value: SSAValue) -> AttrConstraint:
        op = value.owner
        match op:
            case irdl.IsOp():
                constr: AttrConstraint = EqAttrConstraint(op.expected)
            case irdl.AnyOp():
                constr = AnyAttr()
            case irdl.AnyOfOp():
                constr = FirstOf(tuple(self.constraint(a) for a in op.args))
            case irdl.AllOfOp():
                constr = AllOf(tuple(self.constraint(a) for a in op.args))
            case irdl.BaseOp() if op.base_ref is not None:
                constr = BaseAttr(self.symbol_base(op.base_ref))
            case irdl.BaseOp() if op.base_name is not None:
                constr = BaseAttr(self.builtin_base(op.base_name.data))
            case irdl.ParametricOp():
                base = self.symbol_base(op.base_type)
                constr = ParamAttrConstraint(base, tuple(self.constraint(a) for a in op.args))
            case _:
                raise IrdlLoadError(f"unsupported IRDL constraint {getattr(op, 'name', op)}")
        if value.has_more_than_one_use():
            constr = VarConstraint(f"V{len(self.translated)}", constr)
        return constr

    def attribute_class(self, op: irdl.AttributeOp | irdl.TypeOp) -> type[ParametrizedAttribute]:
        short = op.sym_name.data
        namespace: dict[str, object] = {"name": f"{self.name}.{short}", "__annotations__": {}}
        for sub in op.body.ops:
            if isinstance(sub, irdl.ParametersOp):
                for pname, arg in zip(sub.names, sub.args, strict=True):
                    namespace["__annotations__"][pname.data] = Attribute  # type: ignore[index]
                    namespace[pname.data] = param_def(self.constraint(arg))
            elif not isinstance(sub, _CONSTRAINT_OPS):
                raise IrdlLoadError(f"{short}: unsupported {sub.name}")
        bases = (
            (ParametrizedAttribute, TypeAttribute)
            if isinstance(op, irdl.TypeOp)
            else (ParametrizedAttribute,)
        )
        cls = type(short, bases, namespace)
        return irdl_attr_definition(cls)  # type: ignore[return-value]

    def operation_class(self, op: irdl.OperationOp) -> type[IRDLOperation]:
        short = op.sym_name.data
        namespace: dict[str, object] = {"name": f"{self.name}.{short}"}
        for sub in op.body.ops:
            match sub:
                case irdl.OperandsOp():
                    for n, arg, var in zip(sub.names, sub.args, sub.variadicity.value, strict=True):
                        namespace[_field(n.data)] = _OPERAND_DEFS[var](self.constraint(arg))
                case irdl.ResultsOp():
                    for n, arg, var in zip(sub.names, sub.args, sub.variadicity.value, strict=True):
                        namespace[_field(n.data)] = _RESULT_DEFS[var](self.constraint(arg))
                case irdl.AttributesOp():
                    pairs = zip(sub.attribute_value_names, sub.attribute_values, strict=True)
                    for n, arg in pairs:
                        namespace[f"attr_{n.data}"] = attr_def(
                            self.constraint(arg), attr_name=n.data
                        )
                case irdl.RegionsOp():
                    raise IrdlLoadError(f"{short}: irdl.regions is not supported")
                case _ if isinstance(sub, _CONSTRAINT_OPS):
                    pass  # translated where they are used
                case _:
                    raise IrdlLoadError(f"{short}: unsupported {sub.name}")
        cls = type(f"{short.title().replace('_', '')}Op", (IRDLOperation,), namespace)
        return irdl_op_definition(cls)

    def dialect_object(self) -> Dialect:
        ops = []
        for entry in self.dialect.body.ops:
            if isinstance(entry, irdl.AttributeOp | irdl.TypeOp):
                self.attrs[entry.sym_name.data] = self.attribute_class(entry)
            elif isinstance(entry, irdl.OperationOp):
                ops.append(self.operation_class(entry))
        return Dialect(self.name, ops, list(self.attrs.values()))


def load_irdl_dialects(path: str | Path) -> list[Dialect]:
    """The dialects an IRDL file defines, as xDSL dialects that verify its constraints."""
    ctx = Context()
    ctx.load_dialect(builtin.Builtin)
    ctx.load_dialect(irdl.IRDL)
    module = Parser(ctx, Path(path).read_text(), str(path)).parse_module()
    module.verify()
    dialects = []
    for op in module.ops:
        if isinstance(op, irdl.DialectOp):
            dialects.append(_Translator(ctx, op).dialect_object())
    return dialects
