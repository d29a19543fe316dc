"""TVM's fused groups of an ONNX graph, by ONNX node.

TVM (apache-tvm 0.27, the `[peers]` extra) imports ONNX with its Relax frontend, then
`LegalizeOps` turns every Relax op into a TIR function, `AnnotateTIROpPattern` marks
each one (elementwise, broadcast, injective, reduction, out-elementwise-fusable such as
matmul and conv2d, opaque) and `FuseOps` groups them into one function per fused
kernel (`fused_matmul_add_relu`). This module runs those passes and reads the groups
back as sets of ONNX node indices, so that bench/peers.py can build the same grouping
on eqsat's import of the same file (bench/peers_groups.py).

How a Relax binding is traced to its ONNX node: every node is renamed
`eqsatnode<i>` before import; while the frontend converts node i, every binding it
emits is named `n<i>_` (nested calls are emitted one by one first so that none gets
an anonymous name). Legalization and fusion keep binding names, except that the last
binding of each fused group is renamed `gv`; that one is found again by its TIR
function and arguments in the legalized module before fusion.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass

import onnx

NODE_PREFIX = "eqsatnode"
_TAG = re.compile(r"^n(\d+)_")
_PRIM_SUFFIX = re.compile(r"\d+$")


@dataclass(frozen=True)
class TvmGroup:
    """One kernel TVM would generate: its function name, its TIR functions in order
    (numbering suffixes removed: `conv2d1` -> `conv2d`) and the ONNX nodes it holds."""

    name: str
    kernels: tuple[str, ...]
    onnx_nodes: frozenset[int]

    @property
    def fused(self) -> bool:
        return len(self.kernels) > 1


@dataclass(frozen=True)
class TvmGrouping:
    version: str
    groups: tuple[TvmGroup, ...]
    unattributed: int  # TIR calls traced to no ONNX node


@dataclass
class TvmModel:
    """The ONNX graph TVM fused (static shapes, shape arithmetic folded, weights
    kept) and its groups: node indices refer to `model`'s nodes."""

    model: onnx.ModelProto
    grouping: TvmGrouping


def prepare_for_tvm(model: onnx.ModelProto, dims: Mapping[str, int]) -> TvmModel:
    """Bind the dynamic axes, fold what they make constant, and fuse as TVM does.

    TVM's Relax frontend needs static shapes, and it stops at shape arithmetic that
    torch exports carry (ConstantOfShape of a Shape), so the graph is first folded
    with onnxslim (constant folding and dead-node removal only: its fusion patterns
    are off) as one does before handing an export to TVM. Large weights are not
    handed to TVM (they become inputs of the same shape: the grouping does not
    depend on their values) and are put back afterwards."""
    import onnxslim

    bound = onnx.ModelProto()
    bound.CopyFrom(model)
    for value in bound.graph.input:
        for axis in value.type.tensor_type.shape.dim:
            if axis.dim_param:
                name = axis.dim_param
                axis.Clear()
                axis.dim_value = int(dims[name])
    weights = _strip_weights(bound)
    slim = onnxslim.slim(
        bound, skip_optimizations=["graph_fusion", "subexpression_elimination", "weight_tying"]
    )
    stripped = {w.name for w in weights}
    shapes = {
        v.name: [d.dim_value for d in v.type.tensor_type.shape.dim]
        for v in slim.graph.input
        if v.name not in stripped
    }
    shapes.update({w.name: list(w.dims) for w in weights})
    grouping = tvm_groups(slim, shapes)
    _restore_weights(slim, weights)
    return TvmModel(slim, grouping)


def _strip_weights(model: onnx.ModelProto, min_size: int = 4096) -> list[onnx.TensorProto]:
    """Move initializers of `min_size` elements or more out of `model`, declaring
    each as a graph input of its type and shape; return them."""
    import math

    keep, moved = [], []
    for init in model.graph.initializer:
        (moved if math.prod(init.dims) >= min_size else keep).append(init)
    del model.graph.initializer[:]
    model.graph.initializer.extend(keep)
    for init in moved:
        model.graph.input.append(
            onnx.helper.make_tensor_value_info(init.name, init.data_type, list(init.dims))
        )
    return moved


def _restore_weights(model: onnx.ModelProto, weights: list[onnx.TensorProto]) -> None:
    names = {w.name for w in weights}
    inputs = [v for v in model.graph.input if v.name not in names]
    del model.graph.input[:]
    model.graph.input.extend(inputs)
    model.graph.initializer.extend(weights)


def tvm_version() -> str | None:
    try:
        import tvm
    except ImportError:
        return None
    return str(tvm.__version__)


def tvm_groups(model: onnx.ModelProto, shapes: Mapping[str, Sequence[int]]) -> TvmGrouping:
    """Fuse `model` (inputs of the given static shapes) as TVM does; the groups in
    the order of TVM's main function."""
    import tvm
    from tvm import relax

    tagged = onnx.ModelProto()
    tagged.CopyFrom(model)
    for i, node in enumerate(tagged.graph.node):
        node.name = f"{NODE_PREFIX}{i}"
    with _tagging():
        from tvm.relax.frontend.onnx import from_onnx

        mod = from_onnx(tagged, shape_dict={k: list(v) for k, v in shapes.items()})
    mod = relax.transform.LegalizeOps()(mod)
    mod = relax.transform.AnnotateTIROpPattern()(mod)
    before = {_call_key(b.value, {}): b.var for b in _bindings(mod["main"]) if _is_tir(b.value)}
    items = {  # (tuple variable, index) -> the variable bound to that item, before fusion
        (b.value.tuple_value, int(b.value.index)): b.var
        for b in _bindings(mod["main"])
        if isinstance(b.value, relax.TupleGetItem)
    }

    def item(value, where):
        t = where.get(value.tuple_value, value.tuple_value)
        if isinstance(t, tuple):
            return t[int(value.index)]
        return items.get((t, int(value.index)))

    fused = relax.transform.FuseOps()(mod)
    groups: list[TvmGroup] = []
    unattributed = 0
    env: dict = {}  # variables of the fused main -> the variables they stand for before

    def trace(call, local) -> int | None:
        nonlocal unattributed
        var = before.get(_call_key(call, local))
        tag = _tag(_var_name(var)) if var is not None else None
        unattributed += tag is None
        return var, tag

    for binding in _bindings(fused["main"]):
        value = binding.value
        if isinstance(value, relax.TupleGetItem):
            found = item(value, env)
            if found is not None:
                env[binding.var] = found
        if not isinstance(value, relax.Call):
            continue
        if _is_tir(value):
            var, tag = trace(value, env)
            if var is not None:
                env[binding.var] = var
            if tag is not None:
                kernel = _prim_name(value)
                groups.append(TvmGroup(kernel, (kernel,), frozenset({tag})))
        elif isinstance(value.op, tvm.ir.GlobalVar):
            func = fused[value.op]
            if not isinstance(func, relax.Function):
                continue
            # The function may be shared by several call sites (identical groups are
            # deduplicated): its bindings are matched from this call's arguments.
            local = {p: env.get(a, a) for p, a in zip(func.params, value.args, strict=True)}
            kernels, nodes = [], set()
            for inner in _bindings(func):
                if _is_tir(inner.value):
                    kernels.append(_prim_name(inner.value))
                    var, tag = trace(inner.value, local)
                    if var is not None:
                        local[inner.var] = var
                    if tag is not None:
                        nodes.add(tag)
                elif isinstance(inner.value, relax.TupleGetItem):
                    found = item(inner.value, local)
                    if found is not None:
                        local[inner.var] = found
                elif isinstance(inner.value, relax.Tuple):
                    local[inner.var] = tuple(local.get(f) for f in inner.value.fields)
            out = func.body.body
            if isinstance(out, relax.Tuple):
                env[binding.var] = tuple(local.get(f) for f in out.fields)
            elif out in local:
                env[binding.var] = local[out]
            if nodes:
                groups.append(TvmGroup(value.op.name_hint, tuple(kernels), frozenset(nodes)))
    return TvmGrouping(str(tvm.__version__), tuple(groups), unattributed)


@contextlib.contextmanager
def _tagging() -> Iterator[None]:
    """Name every binding the Relax frontend emits after the ONNX node it converts."""
    from tvm import relax
    from tvm.relax.frontend.onnx import onnx_frontend

    importer = onnx_frontend.ONNXGraphImporter
    convert, emit = importer._convert_operator, relax.BlockBuilder.emit
    normalize = relax.BlockBuilder.normalize
    current = [""]

    def flat(bb, expr):
        """`expr` with its nested calls emitted first, each under the current tag."""
        if isinstance(expr, relax.Tuple):
            fields = [flat(bb, f) for f in expr.fields]
            return relax.Tuple(
                [
                    emit(bb, f, current[0])
                    if isinstance(f, relax.Call) and not _shape_valued(f)
                    else f
                    for f in fields
                ]
            )
        if not isinstance(expr, relax.Call) or _shape_valued(expr):
            return expr
        args = []
        for a in expr.args:
            a = flat(bb, a)
            if isinstance(a, relax.Call) and not _shape_valued(a):
                a = emit(bb, a, current[0])
            args.append(a)
        return relax.Call(expr.op, args, expr.attrs, expr.ty_args)

    def tagged_emit(self, expr, name_hint=""):
        if current[0]:
            expr = flat(self, expr)
        return emit(self, expr, name_hint or current[0])

    def tagged_normalize(self, expr):
        return normalize(self, flat(self, expr) if current[0] else expr)

    def tagged_convert(self, op_name, inputs, attrs, opset):
        name = attrs["tvm_custom"]["name"] or ""
        current[0] = f"n{name[len(NODE_PREFIX) :]}_" if name.startswith(NODE_PREFIX) else ""
        try:
            sym = convert(self, op_name, inputs, attrs, opset)
            if current[0] and isinstance(sym, (relax.Call, relax.Tuple)):
                sym = flat(self.bb, sym)
                if isinstance(sym, relax.Call) and not _shape_valued(sym):
                    sym = emit(self.bb, sym, current[0])
            return sym
        finally:
            current[0] = ""

    importer._convert_operator = tagged_convert
    relax.BlockBuilder.emit = tagged_emit
    relax.BlockBuilder.normalize = tagged_normalize
    try:
        yield
    finally:
        importer._convert_operator = convert
        relax.BlockBuilder.emit = emit
        relax.BlockBuilder.normalize = normalize


def _shape_valued(call) -> bool:
    """Calls computing shapes stay nested: bound to a variable, a shape loses the
    values that inference of the call using it needs."""
    from tvm import ir

    return isinstance(call.op, ir.Op) and "shape" in call.op.name


def _bindings(func) -> list:
    body = func.body
    return [b for block in body.blocks for b in block.bindings]


def _is_tir(value) -> bool:
    from tvm import ir, relax

    return (
        isinstance(value, relax.Call)
        and isinstance(value.op, ir.Op)
        and value.op.name == "relax.call_tir"
    )


def _prim_name(call) -> str:
    return _PRIM_SUFFIX.sub("", call.args[0].name_hint)


def _call_key(call, local: Mapping) -> tuple:
    """A call_tir by its TIR function and its operands (variables and constants by
    identity, after `local` maps a fused function's variables to main's)."""
    from tvm import ir, relax

    args = call.args[1]
    fields = args.fields if isinstance(args, relax.Tuple) else [args]
    operands = []
    for f in fields:
        f = local.get(f, f)
        operands.append(f if isinstance(f, (relax.Var, ir.GenericConst)) else str(f))
    return (call.args[0].name_hint, tuple(operands))


def _var_name(var) -> str:
    """A Relax variable's name (`name_hint` before TVM 0.27, `name` since)."""
    name = getattr(var, "name_hint", None)
    return str(name if name is not None else var.name)


def _tag(name: str) -> int | None:
    m = _TAG.match(name)
    return int(m.group(1)) if m else None


__all__ = [
    "NODE_PREFIX",
    "TvmGroup",
    "TvmGrouping",
    "TvmModel",
    "prepare_for_tvm",
    "tvm_groups",
    "tvm_version",
]
