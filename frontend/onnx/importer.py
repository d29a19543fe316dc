"""ONNX graph -> eqsat model text, node by node.

Walks the graph in order. A node whose inputs are all known at import time is
evaluated (onnx.reference for numbers, so any op folds; frontend/onnx/shapes.py for
shape values of symbolic dimensions); any other node goes to its converter, which
writes eqsat statements. Dynamic axes become symbolic dimensions; where the graph
computes something of them that the model text cannot express, those dimensions are
bound to their default and the import starts again (and says so in `notes`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import onnx
from onnx import helper, numpy_helper

from eqsat.ir.types import DType
from frontend import ast
from frontend.onnx import regions, shapes
from frontend.onnx.context import ConvertError, ModelWriter
from frontend.onnx.convert.registry import CONVERTERS, MIN_SINCE, Cx, static_names
from frontend.onnx.dtypes import DTypeError, eqsat_dtype, numpy_type, to_eqsat, to_onnx, type_name
from frontend.onnx.errors import OnnxImportError, UnsupportedOpError, node_label
from frontend.onnx.names import sanitize
from frontend.onnx.reader import check_opset, opset_version, read_model
from frontend.onnx.symdim import NotRepresentable, SymDim, probe_bindings
from frontend.onnx.values import Known, Tensor, Value

# Ops that must not be evaluated at import even with known inputs.
_NEVER_FOLD = frozenset(
    {
        "RandomNormal",
        "RandomUniform",
        "RandomNormalLike",
        "RandomUniformLike",
        "Multinomial",
        "Bernoulli",
        # int8 weights stay int8 (params) so that int8 kernels can use them
        "DequantizeLinear",
    }
)
# Metadata key prefix for dimension defaults (written by eqsat.from_torch).
DIM_METADATA = "eqsat.dim."


@dataclass(frozen=True)
class IOInfo:
    """A graph input or output: its ONNX name and type, and its name in the model."""

    onnx_name: str
    name: str
    onnx_type: int
    dtype: DType
    # An output with no elements is known whatever the inputs: kept here, not in the
    # model (eqsat's dimensions are positive).
    empty: np.ndarray | None = None


@dataclass
class ImportedModel:
    model: ast.Model | None  # None when every output is empty (nothing to compute)
    arrays: dict[str, np.ndarray]  # param values and external literal values, by name
    inputs: list[IOInfo]
    outputs: list[IOInfo]
    dims: dict[str, int]  # symbolic dimensions and their defaults
    fixed: dict[str, int]  # dynamic dimensions the import bound to a number
    notes: list[str] = field(default_factory=list)

    def feeds(self, arrays: Mapping[str, np.ndarray], where: str = "inputs") -> dict:
        """ONNX-named input arrays -> model inputs (converted, range-checked)."""
        out = {}
        for info in self.inputs:
            if info.onnx_name not in arrays:
                continue
            try:
                out[info.name] = to_eqsat(
                    arrays[info.onnx_name], info.dtype, f"input '{info.onnx_name}'"
                )
            except DTypeError as err:
                raise OnnxImportError(where, str(err)) from None
        return out

    def results(self, outputs: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        """Model outputs -> ONNX-named arrays of the graph's output types."""
        return {
            o.onnx_name: o.empty if o.empty is not None else to_onnx(outputs[o.name], o.onnx_type)
            for o in self.outputs
        }

    def text(self) -> str:
        from frontend.printer import print_model

        return print_model(self.model)

    def save(self, path: str | Path) -> Path | None:
        """Write PATH (the model text) and PATH.params.npz (its arrays), whole or not
        at all; returns the params file written, if any."""
        from eqsat.fileio import write_model_files

        return write_model_files(path, self.text(), self.arrays)


def import_onnx(
    source: str | Path | onnx.ModelProto,
    dims: Mapping[str, int] | None = None,
    *,
    symbolic: bool = True,
    constant_inputs: Mapping[str, np.ndarray] | None = None,
    file: str | None = None,
) -> ImportedModel:
    """Import an ONNX model. Dynamic dimensions stay symbolic when `symbolic`, with
    defaults from `dims` (by ONNX name or its sanitized form), else from the model's
    metadata (`eqsat.dim.NAME`), else 1; otherwise they are bound to those values.
    `constant_inputs`: graph inputs to treat as known values (conformance tests feed
    shapes and axes this way)."""
    if isinstance(source, onnx.ModelProto):
        model, shown = source, file or "<onnx>"
        check_opset(model, shown)
    else:
        shown = file or str(source)
        model = read_model(source)
    defaults = {**_defaults(model), **{sanitize(k): int(v) for k, v in (dims or {}).items()}}
    given = {} if symbolic else defaults
    fixed: dict[str, int] = {}
    reasons: dict[str, str] = {}
    for _ in range(64):
        try:
            run = _Import(model, shown, given, fixed, defaults, symbolic, constant_inputs or {})
            return run.run(reasons)
        except _Rebind as again:
            for name in again.names:
                fixed[name] = given.get(name, defaults.get(name, 1))
                reasons[name] = again.note
    raise OnnxImportError(shown, "symbolic dimensions could not be resolved")


class _Rebind(Exception):
    def __init__(self, names: frozenset[str], note: str):
        super().__init__(note)
        self.names = names
        self.note = note


def _defaults(model: onnx.ModelProto) -> dict[str, int]:
    out = {}
    for prop in model.metadata_props:
        if prop.key.startswith(DIM_METADATA):
            try:
                out[sanitize(prop.key[len(DIM_METADATA) :])] = int(prop.value)
            except ValueError:
                continue
    return out


class _Import:
    def __init__(
        self,
        model: onnx.ModelProto,
        file: str,
        given: dict[str, int],
        fixed: dict[str, int],
        defaults: dict[str, int],
        symbolic: bool,
        constant_inputs: Mapping[str, np.ndarray],
    ):
        self.model, self.graph, self.file = model, model.graph, file
        self.given, self.fixed, self.defaults = given, fixed, defaults
        self.symbolic = symbolic
        self.constant_inputs = constant_inputs
        self.opset = opset_version(model)
        self.domains = {o.domain or "ai.onnx": o.version for o in model.opset_import}
        self.notes: list[str] = []

    # ------------------------------------------------------------ dimensions

    def _input_dims(self) -> dict[str, list[SymDim]]:
        """Each non-constant graph input's dims; fills self.dim_names / bound values."""
        initializers = {t.name for t in self.graph.initializer}
        self.dim_names: list[str] = []
        self.bound: dict[str, int] = {}
        shapes_: dict[str, list[SymDim]] = {}
        for vi in self.graph.input:
            if vi.name in initializers or vi.name in self.constant_inputs:
                continue
            tt = vi.type.tensor_type
            if not vi.type.HasField("tensor_type") or not tt.HasField("shape"):
                raise OnnxImportError(
                    self.file,
                    f"input '{vi.name}' has no tensor shape; eqsat needs ranked tensor inputs",
                )
            dims = []
            for axis, d in enumerate(tt.shape.dim):
                if d.HasField("dim_value"):
                    dims.append(SymDim(d.dim_value))
                    continue
                name = sanitize(d.dim_param) if d.dim_param else sanitize(f"{vi.name}_{axis}")
                if name in self.given or name in self.fixed or not self.symbolic:
                    value = self.given.get(name, self.fixed.get(name, self.defaults.get(name, 1)))
                    self.bound[name] = value
                    dims.append(SymDim(value))
                else:
                    if name not in self.dim_names:
                        self.dim_names.append(name)
                    dims.append(SymDim(1, (name,)))
            shapes_[vi.name] = dims
        return shapes_

    # ------------------------------------------------------------ the walk

    def run(self, reasons: Mapping[str, str]) -> ImportedModel:
        """The import; `reasons`: why each fixed dimension had to be fixed."""
        input_dims = self._input_dims()
        probes = list(probe_bindings(self.dim_names)) if self.dim_names else [{}]
        name = sanitize(self.graph.name or "model")
        self.w = ModelWriter(name, probes, self.dim_names)
        self.values: dict[str, Value] = {}
        for t in self.graph.initializer:
            self.values[t.name] = Known(numpy_helper.to_array(t), t.data_type, True, t.name)
        inputs: list[IOInfo] = []
        for vi in self.graph.input:
            if vi.name in self.values:
                continue
            onnx_type = vi.type.tensor_type.elem_type
            if vi.name in self.constant_inputs:
                self.values[vi.name] = Known(np.asarray(self.constant_inputs[vi.name]), onnx_type)
                continue
            if any(d.is_int and d.coef == 0 for d in input_dims[vi.name]):
                # A zero-sized tensor has exactly one value: it is a constant.
                shape = tuple(d.coef for d in input_dims[vi.name])
                self.values[vi.name] = Known(np.zeros(shape, numpy_type(onnx_type)), onnx_type)
                continue
            try:
                t = self.w.declare_input(vi.name, onnx_type, input_dims[vi.name])
            except DTypeError as err:
                raise OnnxImportError(self.file, f"input '{vi.name}': {err}") from None
            self.values[vi.name] = t
            inputs.append(IOInfo(vi.name, t.name, onnx_type, t.dtype))
        for index, node in enumerate(self.graph.node):
            self._node(index, node)
        outputs = self._outputs()
        dims = {n: self.defaults.get(n, 1) for n in self.dim_names}
        items: list[ast.Item] = [ast.DimDecl(n, v) for n, v in dims.items()]
        # Dimensions bound at import stay declared (so that --dim names them) unless
        # the import had to fix them: then the text has numbers, and --dim S=N on it
        # must say that S is not a dimension of this model any more.
        items += [
            ast.DimDecl(n, v)
            for n, v in self.bound.items()
            if n not in dims and n not in self.fixed
        ]
        items += self.w.items
        computed = tuple(o.name for o in outputs if o.empty is None)
        items.append(ast.OutputDecl(computed))
        notes = list(self.notes)
        for n, v in self.fixed.items():
            notes.append(
                f"dynamic dimension '{n}' is fixed to {v} (pass --dim {n}=N to choose): the "
                f"model text cannot express {reasons.get(n, 'what the graph computes of it')}"
            )
        return ImportedModel(
            # Every output empty: the graph's meaning is known, there is no model.
            ast.Model(name, tuple(items)) if computed else None,
            self.w.arrays,
            inputs,
            outputs,
            dims,
            dict(self.fixed),
            notes,
        )

    def _node(self, index: int, node: onnx.NodeProto) -> None:
        label = node_label(node.name, node.op_type, index, node.domain)
        domain = node.domain or "ai.onnx"
        inputs = [self.values.get(i) if i else None for i in node.input]
        for i, v in zip(node.input, inputs, strict=True):
            if i and v is None:
                raise OnnxImportError(
                    self.file, f"input '{i}' is not defined before this node", label
                )
        try:
            outs = self._convert(node, domain, inputs, label)
        except NotRepresentable as err:
            names = err.names & set(self.dim_names)
            if names:
                raise _Rebind(frozenset(names), f"{err.what} at node {label}") from None
            raise OnnxImportError(self.file, f"cannot express {err.what}", label) from None
        except ConvertError as err:
            needs = node.input[err.needs_known] if err.needs_known is not None else None
            raise UnsupportedOpError(self.file, str(err), label, needs) from None
        except DTypeError as err:
            raise UnsupportedOpError(self.file, str(err), label) from None
        for name, value in zip(node.output, outs, strict=False):
            if name and value is not None:
                if isinstance(value, Known) and not value.name:
                    value = Known(value.value, value.onnx_type, value.weight, name)
                self.values[name] = value

    def _convert(self, node: onnx.NodeProto, domain: str, inputs: list, label: str) -> list[Value]:
        if node.op_type in regions.REGION_OPS and domain in ("ai.onnx", ""):
            return regions.convert(self, node, inputs, label)  # if/loop regions
        present = [v for v in inputs if v is not None]
        known = all(isinstance(v, Known) for v in present)
        if known and node.op_type not in _NEVER_FOLD and domain in ("ai.onnx", ""):
            if not any(v.symbolic for v in present):
                return shapes.fold_numeric(node, inputs, self.model, self.domains)
            folded = shapes.fold_symbolic(node, inputs, _attrs(node))
            if folded is not None:
                return folded
        converter = CONVERTERS.get((domain, node.op_type))
        statics = [v for v in present if isinstance(v, Tensor) and v.static]
        if converter is None and statics and all(isinstance(v, Known) or v.static for v in present):
            # Computed from symbolic dimensions alone: it folds once they are bound.
            names = frozenset().union(*(static_names(self.w, v) for v in statics))
            raise NotRepresentable(names, f"{node.op_type} of values computed from dimensions")
        if converter is None:
            known_ops = sorted(op for d, op in CONVERTERS if d == domain)
            what = f"{domain}.{node.op_type}" if domain != "ai.onnx" else node.op_type
            if not known_ops:
                raise ConvertError(f"ops of domain '{domain}' are not supported")
            raise ConvertError(
                f"{what} is not supported (eqsat imports {len(known_ops)} ops of this domain; "
                "`eqsat import --supported` lists them)"
            )
        since = _since(node, domain, self.domains)
        oldest = MIN_SINCE.get((domain, node.op_type), 1)
        if since < oldest:
            raise ConvertError(
                f"{node.op_type}-{since} (this model's opset) is not supported; eqsat "
                f"implements {node.op_type} from version {oldest} (convert the model with "
                "onnx.version_converter)"
            )
        self.w.begin_node(f"onnx: {node.name or node.op_type} ({node.op_type})")
        cx = Cx(self.w, node, inputs, _attrs(node), since, self._hint(node))
        outs = converter(cx)
        return list(outs)

    def _hint(self, node: onnx.NodeProto) -> str:
        return node.output[0] if node.output and node.output[0] else (node.name or node.op_type)

    def _outputs(self) -> list[IOInfo]:
        out = []
        for vi in self.graph.output:
            value = self.values.get(vi.name)
            if value is None:
                raise OnnxImportError(self.file, f"output '{vi.name}' is never computed")
            onnx_type = vi.type.tensor_type.elem_type or getattr(value, "onnx_type", 1)
            if isinstance(value, Known) and 0 in value.shape:
                empty = np.zeros(value.shape, numpy_type(onnx_type))
                out.append(IOInfo(vi.name, "", onnx_type, eqsat_dtype(onnx_type), empty))
                continue
            try:
                t = self.w.tensor(value, vi.name)
                dtype = eqsat_dtype(onnx_type)
            except (ConvertError, DTypeError) as err:
                raise OnnxImportError(self.file, f"output '{vi.name}': {err}") from None
            except NotRepresentable as err:
                names = err.names & set(self.dim_names)
                if names:
                    raise _Rebind(frozenset(names), err.what) from None
                raise OnnxImportError(
                    self.file, f"output '{vi.name}': cannot express {err.what}"
                ) from None
            # An output is a model name of its own: alias a value output twice.
            name = self.w.alias(vi.name, t) if any(o.name == t.name for o in out) else t.name
            if t.dtype is not dtype:
                raise OnnxImportError(
                    self.file,
                    f"output '{vi.name}' is {type_name(onnx_type)} but computes {t.dtype}",
                )
            out.append(IOInfo(vi.name, name, onnx_type, dtype))
        return out


def _attrs(node: onnx.NodeProto) -> dict:
    out = {}
    for a in node.attribute:
        value = helper.get_attribute_value(a)
        if isinstance(value, bytes):
            value = value.decode("utf-8", "replace")
        elif isinstance(value, list) and value and isinstance(value[0], bytes):
            value = [v.decode("utf-8", "replace") for v in value]
        out[a.name] = value
    return out


def _since(node: onnx.NodeProto, domain: str, domains: Mapping[str, int]) -> int:
    version = domains.get(domain, domains.get("ai.onnx", 1))
    try:
        return onnx.defs.get_schema(
            node.op_type, version, "" if domain == "ai.onnx" else domain
        ).since_version
    except onnx.defs.SchemaError:
        return version


__all__ = ["IOInfo", "ImportedModel", "import_onnx"]
