"""The model being written while an ONNX graph is imported.

Converters call `emit` to add one eqsat statement (`name = op(operands, attrs)`) and
get back a `Tensor`. Each statement is also added to a type-checked graph per probe
binding of the symbolic dimensions (one binding when every dimension is a number),
so that the importer knows every value's shape from the op registry's own type rules:
a dimension is read back as a product of names by comparing the probes
(frontend/onnx/symdim.py). Known values become model constants when an op needs them
as operands: `const` fills, `param`s for weights, and `literal`s for the rest.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from onnx import TensorProto

from eqsat.ir.graph import GraphBuilder
from eqsat.ir.types import DType, TensorType
from eqsat.ops import REGISTRY, OpTypeError
from frontend import ast
from frontend.from_graph import INLINE_MAX
from frontend.onnx.dtypes import FLOAT_TYPES, DTypeError, eqsat_dtype, onnx_type_of, to_eqsat
from frontend.onnx.names import NameTable
from frontend.onnx.symdim import SymDim, decode
from frontend.onnx.values import Known, Tensor, Value


class ConvertError(Exception):
    """A converter cannot express a node: the importer reports it at the node.
    `needs_known`: the index of an input that would have to be a constant."""

    def __init__(self, message: str, needs_known: int | None = None):
        super().__init__(message)
        self.needs_known = needs_known


def _resolve(value: Any, binding: Mapping[str, int]) -> Any:
    if isinstance(value, SymDim):
        return value.value(binding)
    if isinstance(value, list | tuple):
        return tuple(_resolve(v, binding) for v in value)
    return value


def _written(value: Any) -> Any:
    """An attribute value as the model text writes it."""
    if isinstance(value, SymDim):
        return value.coef if value.is_int else value.text()
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, np.floating):
        return float(value)
    if isinstance(value, list | tuple):
        return tuple(_written(v) for v in value)
    return value


class ModelWriter:
    def __init__(self, name: str, probes: list[dict[str, int]], dim_names: list[str]):
        self.name = name
        self.probes = probes
        self.dim_names = dim_names  # symbolic names, in the order they were met
        self.builders = [GraphBuilder(name) for _ in probes]
        self.nodes: dict[str, list[int]] = {}  # model name -> node per probe graph
        self.items: list[ast.Item] = []
        self.arrays: dict[str, np.ndarray] = {}  # params and external literals
        self.names = NameTable()
        self._constants: dict[tuple[int, bool], tuple[Known, Tensor]] = {}
        self._fills: dict[tuple, Tensor] = {}
        self._pending_comment = ""  # the ONNX node being converted

    # ------------------------------------------------------------ leaves

    def declare_input(self, onnx_name: str, onnx_type: int, dims: Sequence[SymDim]) -> Tensor:
        name = self.names.fresh(onnx_name)
        dtype = eqsat_dtype(onnx_type)
        spec = ast.TypeSpec(dtype.value, tuple(_written(d) for d in dims))
        self.items.append(ast.LeafDecl("input", name, spec, comment=self.names.note(name)))
        for k, b in enumerate(self.builders):
            t = TensorType(dtype, tuple(d.value(self.probes[k]) for d in dims))
            self._bind(name, k, b.leaf("input", name, t))
        return Tensor(name, dtype, onnx_type, tuple(dims))

    def _bind(self, name: str, k: int, node: int) -> None:
        self.nodes.setdefault(name, []).append(node)

    def tensor(self, v: Value, hint: str = "c", static_use: bool = False) -> Tensor:
        """`v` as a model value; a Known becomes a leaf once per use kind. Where all
        other operands are static, a weight is written as a literal so that the
        computation folds (rotary tables from `inv_freq`)."""
        if isinstance(v, Tensor):
            return v
        as_param = v.weight and not static_use and v.onnx_type in FLOAT_TYPES
        key = (id(v), as_param)
        if key not in self._constants:
            self._constants[key] = (v, self._constant(v, v.name or hint, as_param))
        return self._constants[key][1]

    def _constant(self, v: Known, hint: str, as_param: bool) -> Tensor:
        if 0 in v.shape:
            raise ConvertError(
                f"'{hint}' is a zero-sized tensor {list(v.shape)}; eqsat's dimensions are positive"
            )
        if v.value.dtype == object:
            return self._symbolic_constant(v, hint)
        dtype = eqsat_dtype(v.onnx_type)
        try:
            data = to_eqsat(v.value, dtype, f"constant '{hint}'")
        except DTypeError as err:
            raise ConvertError(str(err)) from None
        shape = tuple(SymDim(d) for d in v.shape)
        if _uniform(data):
            first = data.reshape(-1)[0]
            return self.fill(
                float(first) if dtype.is_float else int(first), dtype, shape, v.onnx_type
            )
        name = self.names.fresh(hint)
        spec = ast.TypeSpec(dtype.value, v.shape)
        if as_param:
            self.items.append(ast.LeafDecl("param", name, spec, comment=self.names.note(name)))
            self.arrays[name] = data
            for k, b in enumerate(self.builders):
                self._bind(name, k, b.leaf("param", name, TensorType(dtype, v.shape)))
            return Tensor(name, dtype, v.onnx_type, shape)
        if data.size <= INLINE_MAX:
            written: ast.ConstValue = tuple(
                int(x) if dtype.is_int else float(x) for x in data.reshape(-1).astype(np.float64)
            )
        else:
            written = ast.External()
            self.arrays[name] = data
        self.items.append(ast.ConstDecl(name, spec, written, comment=self.names.note(name)))
        attrs = {"name": name, "shape": v.shape, "dtype": dtype.value}
        for k, b in enumerate(self.builders):
            self._bind(name, k, b.add("literal", (), attrs, name))
        return Tensor(name, dtype, v.onnx_type, shape, static=True)

    def _symbolic_constant(self, v: Known, hint: str) -> Tensor:
        """Shape values as data: one fill per element (`const n: i32[] = S`), joined."""
        dtype = eqsat_dtype(v.onnx_type)
        parts = [
            self.fill(e if isinstance(e, SymDim) else int(e), dtype, (), v.onnx_type)
            for e in v.value.reshape(-1)
        ]
        if v.value.ndim == 0:
            return parts[0]
        ones = [self.emit("reshape", [p], {"shape": [1]}, hint) for p in parts]
        joined = ones[0] if len(ones) == 1 else self.emit("concat", ones, {"axis": 0}, hint)
        if v.value.ndim == 1:
            return joined
        return self.emit("reshape", [joined], {"shape": list(v.shape)}, hint)

    def fill(
        self, value: float | int | SymDim, dtype: DType, shape: Sequence[SymDim], onnx_type: int
    ) -> Tensor:
        """A `const` fill (a dimension's value where `value` is symbolic)."""
        if any(isinstance(d, SymDim) and d.is_int and d.coef < 1 for d in shape):
            raise ConvertError(
                f"a zero-sized tensor {[_written(d) for d in shape]}; eqsat's dimensions are positive"
            )
        key = (_written(value), dtype, onnx_type, tuple(_written(d) for d in shape))
        if key in self._fills:
            return self._fills[key]
        name = self.names.fresh(f"c{len(self._fills)}")
        spec = ast.TypeSpec(dtype.value, tuple(_written(d) for d in shape))
        text_value: ast.ConstValue = _written(value)
        if isinstance(value, SymDim) and not value.is_int:
            text_value = value.text()
        self.items.append(ast.ConstDecl(name, spec, text_value))
        for k, b in enumerate(self.builders):
            t = TensorType(dtype, tuple(_resolve(d, self.probes[k]) for d in shape))
            self._bind(name, k, b.const(float(_resolve(value, self.probes[k])), t, name))
        out = Tensor(name, dtype, onnx_type, tuple(SymDim.of(d) for d in shape), static=True)
        if not isinstance(value, SymDim):
            out.tags["uniform"] = value
        self._fills[key] = out
        return out

    # ------------------------------------------------------------ statements

    def emit(
        self,
        op: str,
        operands: Sequence[Value],
        attrs: Mapping[str, Any] | None = None,
        hint: str = "t",
        onnx_type: int | None = None,
    ) -> Tensor:
        """Add `hint = op(operands, attrs)`; Known operands become constants."""
        attrs = {k: v for k, v in (attrs or {}).items() if v is not None}
        static = all(isinstance(o, Known) or o.static for o in operands)
        tensors = [
            self.tensor(o, f"{hint}.{k}" if len(operands) > 1 else f"{hint}.c", static)
            for k, o in enumerate(operands)
        ]
        name = self.names.fresh(hint)
        opdef = REGISTRY[op]
        call = ast.Call(
            op,
            tuple(ast.Ref(t.name) for t in tensors),
            tuple(ast.Attr(k, _written(v)) for k, v in attrs.items()),
        )
        types = []
        for k, b in enumerate(self.builders):
            given = {key: _resolve(v, self.probes[k]) for key, v in attrs.items()}
            try:
                node = b.add(
                    op, [self.nodes[t.name][k] for t in tensors], opdef.bind_attrs(given), name
                )
            except OpTypeError as err:
                operands_text = ", ".join(
                    str(b.graph.nodes[self.nodes[t.name][k]].type) for t in tensors
                )
                raise ConvertError(
                    f"eqsat's '{op}' rejects it: {err} (operands {operands_text})"
                ) from None
            self._bind(name, k, node)
            types.append(b.graph.nodes[node].type)
        self.items.append(ast.Assign(name, call, comment=self._pending_comment))
        self._pending_comment = ""
        shape = tuple(
            decode(tuple(t.shape[a] for t in types), tuple(self.probes))
            for a in range(types[0].rank)
        )
        if onnx_type is None:
            onnx_type = _default_onnx_type(types[0].dtype, tensors)
        return Tensor(name, types[0].dtype, onnx_type, shape, static=static)

    def begin_node(self, comment: str) -> None:
        """The next statement is the first of an ONNX node: it carries its name."""
        self._pending_comment = comment

    def alias(self, name_hint: str, t: Tensor) -> str:
        """`name = t` so that an output carries its ONNX name."""
        name = self.names.fresh(name_hint)
        self.items.append(ast.Assign(name, ast.Ref(t.name), comment=self.names.note(name)))
        for k in range(len(self.builders)):
            self._bind(name, k, self.nodes[t.name][k])
        return name


def _uniform(data: np.ndarray) -> bool:
    """Every element equal (all NaN counts), checked without copying large arrays."""
    if data.size == 0:
        return False
    flat = data.reshape(-1)
    if flat.size > 1 and not (flat[0] == flat[1] or (flat[0] != flat[0] and flat[1] != flat[1])):
        return False
    lo, hi = np.min(flat), np.max(flat)
    if lo == hi:
        return True
    wide = flat.astype(np.float32, copy=False) if flat.dtype.kind == "V" else flat
    return bool(np.all(np.isnan(wide))) if np.issubdtype(wide.dtype, np.floating) else False


def _default_onnx_type(dtype: DType, operands: Sequence[Tensor]) -> int:
    for t in operands:
        if eqsat_dtype(t.onnx_type) is dtype:
            return t.onnx_type
    if dtype is DType.BF16:
        return TensorProto.BFLOAT16
    return onnx_type_of(np.zeros(0, dtype=dtype.np_dtype))


__all__ = ["ConvertError", "ModelWriter"]
