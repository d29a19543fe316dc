"""ONNX If, Loop and Scan -> the model's `if` and `loop` regions.

- If: a condition known at import folds: the taken branch is imported inline. Inside a
  region body (where regions do not nest) an If is predicated: both branches are
  imported and each output is `where(cond, then, else)` (eqsat's ops do not fault, so
  computing the branch not taken is safe). Elsewhere it becomes an `if` region.
- Loop: an `loop` region; M and cond may be absent (no limit, always true). Inside the
  body, ONNX's cond input is true whenever the body runs, so it is the constant true.
  Scan outputs of a Loop (stacked per trip: their length is data) are not supported.
- Scan: a `loop` region of a trip count known at import (the scan axis length): each
  scan input is read with `gather` at the trip index, each scan output is stacked into
  a carried buffer with `where(iota == index, ...)`; axes 0 and forward direction only.

Subgraph values are scoped: what a body defines is not visible after it. Constants a
body uses are declared at the model's top level (regions hold statements only).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from eqsat.ir.types import DType, TensorType
from frontend import ast
from frontend.onnx.context import ConvertError
from frontend.onnx.symdim import SymDim
from frontend.onnx.values import Known, Tensor, Value

REGION_OPS = frozenset({"If", "Loop", "Scan"})
INT32_MAX = 2**31 - 1


class _BodyItems(list):
    """A body's statements; declarations (constants, params) go to the top level."""

    def __init__(self, outer: list):
        super().__init__()
        self.outer = outer

    def append(self, item) -> None:
        if isinstance(item, ast.Assign | ast.RegionAssign):
            super().append(item)
        else:
            self.outer.append(item)


def convert(imp, node: onnx.NodeProto, inputs: list, label: str) -> list[Value]:
    graphs = {
        a.name: helper.get_attribute_value(a)
        for a in node.attribute
        if a.type == onnx.AttributeProto.GRAPH
    }
    attrs = {
        a.name: helper.get_attribute_value(a)
        for a in node.attribute
        if a.type != onnx.AttributeProto.GRAPH
    }
    needs = {"If": ("then_branch", "else_branch"), "Loop": ("body",), "Scan": ("body",)}
    missing = [key for key in needs[node.op_type] if key not in graphs]
    if missing:
        raise ConvertError(f"{node.op_type} needs the graph attribute(s) {', '.join(missing)}")
    if not inputs or (node.op_type == "If" and inputs[0] is None):
        raise ConvertError(f"{node.op_type} has no inputs")
    if node.op_type == "If":
        return _if(imp, node, inputs, graphs)
    if node.op_type == "Loop":
        return _loop(imp, node, inputs, graphs["body"])
    if "num_scan_inputs" not in attrs:
        raise ConvertError("Scan needs the attribute num_scan_inputs")
    return _scan(imp, node, inputs, graphs["body"], attrs)


def _depth(imp) -> int:
    return getattr(imp, "region_depth", 0)


def _walk(imp, graph: onnx.GraphProto, bound: dict[str, Value]) -> list[Value]:
    """Import a subgraph's nodes with `bound` (its inputs) and the outer values in
    scope; its outputs' values. What it defines is dropped afterwards."""
    saved = dict(imp.values)
    try:
        imp.values.update(bound)
        for t in graph.initializer:
            imp.values[t.name] = Known(numpy_helper.to_array(t), t.data_type, True, t.name)
        for index, n in enumerate(graph.node):
            imp._node(index, n)
        outs = []
        for o in graph.output:
            if o.name not in imp.values:
                raise ConvertError(f"subgraph output '{o.name}' is never computed")
            outs.append(imp.values[o.name])
        return outs
    finally:
        imp.values = saved


def _body(imp, graph: onnx.GraphProto, bound: dict[str, Value]) -> tuple[list, list[Tensor]]:
    """A subgraph as region body statements and the tensors it yields."""
    return _body_with(imp, graph, bound, dict, lambda outs: outs)


def _result(imp, name: str, like: Tensor) -> Tensor:
    """A region's result named `name`, typed (in the probe graphs) like `like`."""
    for k in range(len(imp.w.builders)):
        imp.w._bind(name, k, imp.w.nodes[like.name][k])
    return Tensor(name, like.dtype, like.onnx_type, like.shape)


def _truth(v: Known) -> bool:
    return bool(np.asarray(v.value).reshape(-1)[0])


def _if(imp, node: onnx.NodeProto, inputs: list, graphs: dict) -> list[Value]:
    cond = inputs[0]
    then_g, else_g = graphs["then_branch"], graphs["else_branch"]
    if isinstance(cond, Known):  # known at import: the taken branch, inline
        taken = _truth(cond)
        imp.notes.append(
            f"If '{node.name or node.output[0]}': the condition is known at import "
            f"({'true' if taken else 'false'}); folded to its "
            f"{'then' if taken else 'else'} branch"
        )
        return _walk(imp, then_g if taken else else_g, {})
    if _depth(imp) > 0:  # inside a body: predicated
        a, b = _walk(imp, then_g, {}), _walk(imp, else_g, {})
        return [
            imp.w.emit("where", [cond, x, y], hint=out or "sel")
            for x, y, out in zip(a, b, node.output, strict=False)
        ]
    cond_t = imp.w.tensor(cond, "cond")
    then_items, then_yields = _body(imp, then_g, {})
    else_items, else_yields = _body(imp, else_g, {})
    names = [imp.w.names.fresh(o or "r") for o in node.output]
    region = ast.IfRegion(
        cond_t.name,
        ast.Body(tuple(then_items), tuple(t.name for t in then_yields)),
        ast.Body(tuple(else_items), tuple(t.name for t in else_yields)),
    )
    imp.w.items.append(
        ast.RegionAssign(tuple(names), region, comment=f"onnx: {node.name or 'If'} (If)")
    )
    return [_result(imp, n, t) for n, t in zip(names, then_yields, strict=True)]


def _index(imp, hint: str) -> Tensor:
    """A loop's trip index: an i32 scalar (ONNX's int64 iteration number)."""
    name = imp.w.names.fresh(hint)
    for k, b in enumerate(imp.w.builders):
        imp.w._bind(name, k, b.leaf("input", name, TensorType(DType.I32, ())))
    return Tensor(name, DType.I32, TensorProto.INT64, ())


def _carried(imp, hint: str, init: Tensor) -> Tensor:
    name = imp.w.names.fresh(hint)
    return _result(imp, name, init)


def _loop(imp, node: onnx.NodeProto, inputs: list, body: onnx.GraphProto) -> list[Value]:
    if _depth(imp) > 0:
        raise ConvertError(
            "a Loop inside an If or Loop body is not supported (regions do not nest)"
        )
    trips, cond, *inits = ([*inputs, None, None])[: max(len(inputs), 2)]
    n = len(inits)
    if len(body.input) != 2 + n or len(body.output) < 1 + n:
        raise ConvertError(
            f"the Loop body takes {len(body.input)} inputs and yields {len(body.output)} "
            f"values; with {n} carried value(s) it must take {2 + n} and yield at least {1 + n}"
        )
    n_scan = len(body.output) - 1 - n
    static = isinstance(trips, Known) and (
        cond is None or (isinstance(cond, Known) and _truth(cond))
    )
    if n_scan and not static:
        raise ConvertError(
            "Loop scan outputs need a trip count known at import and no condition (their "
            "length is the number of trips)",
            needs_known=0 if not isinstance(trips, Known) else 1,
        )
    if trips is None:
        trips = Known(np.array(INT32_MAX, dtype=np.int64), TensorProto.INT64)
    elif isinstance(trips, Known):
        value = min(int(np.asarray(trips.value).reshape(-1)[0]), INT32_MAX)
        trips = Known(np.array(value, dtype=np.int64), TensorProto.INT64)
    if cond is None:
        cond = Known(np.array(True), TensorProto.BOOL)
    trips_t = imp.w.tensor(trips, "max_trips")
    cond_t = imp.w.tensor(cond, "cond")
    init_ts = [imp.w.tensor(v, f"init{j}") for j, v in enumerate(inits)]
    index = _index(imp, body.input[0].name or "i")
    carried = [_carried(imp, body.input[2 + j].name, t) for j, t in enumerate(init_ts)]
    bound: dict[str, Value] = {body.input[0].name: index}
    bound[body.input[1].name] = Known(np.array(True), TensorProto.BOOL)
    bound.update({body.input[2 + j].name: c for j, c in enumerate(carried)})
    if not n_scan:
        items, yields = _body(imp, body, bound)
        return _loop_region(imp, node, trips_t, cond_t, init_ts, carried, index, items, yields)
    steps = int(np.asarray(trips.value).reshape(-1)[0])
    if steps < 1:
        raise ConvertError("a Loop with scan outputs and no trips (empty scan outputs)")
    stacks: list[tuple[Tensor, Tensor]] = []

    def finish(outs: list[Value]) -> list[Value]:
        if not (isinstance(outs[0], Known) and _truth(outs[0])):
            raise ConvertError(
                "Loop scan outputs need a body whose condition is always true (their "
                "length is the number of trips)"
            )
        return [outs[0], *outs[1 : 1 + n], *_stack(imp, outs[1 + n :], steps, index, stacks)]

    items, yields = _body_with(imp, body, bound, dict, finish)
    return _loop_region(
        imp,
        node,
        trips_t,
        cond_t,
        init_ts + [z for _, z in stacks],
        carried + [b for b, _ in stacks],
        index,
        items,
        yields,
    )


def _loop_region(imp, node, trips_t, cond_t, init_ts, carried, index, items, yields):
    names = [imp.w.names.fresh(o or "r") for o in node.output]
    region = ast.LoopRegion(
        trips_t.name,
        cond_t.name,
        tuple(ast.Carried(c.name, t.name) for c, t in zip(carried, init_ts, strict=True)),
        index.name,
        ast.Body(tuple(items), tuple(t.name for t in yields)),
    )
    imp.w.items.append(
        ast.RegionAssign(
            tuple(names), region, comment=f"onnx: {node.name or node.op_type} ({node.op_type})"
        )
    )
    return [_result(imp, n, t) for n, t in zip(names, init_ts, strict=True)]


def _stack(
    imp, elems: list[Value], steps: int, index: Tensor, stacks: list[tuple[Tensor, Tensor]]
) -> list[Value]:
    """Per-trip values stacked along a new first axis of length `steps`: each is a
    carried buffer (zeros at first) whose row `index` the body overwrites. Appends
    (buffer, its zeros) to `stacks`; returns the buffers' next values."""
    imp.w.begin_node("")  # what follows is the stacking, not the body's last node
    nexts = []
    for j, v in enumerate(elems):
        elem = imp.w.tensor(v, f"elem{j}")
        shape = elem.concrete_shape("a scan output's shape")
        zeros = imp.w.fill(
            0.0 if elem.dtype.is_float else 0,
            elem.dtype,
            (SymDim(steps), *tuple(SymDim(d) for d in shape)),
            elem.onnx_type,
        )
        buf = _carried(imp, f"stack{len(stacks)}", zeros)
        pos = imp.w.emit("iota", [], {"shape": [steps] + [1] * len(shape), "axis": 0}, "pos")
        at = imp.w.emit("equal", [pos, index], hint="at")
        row = imp.w.emit("reshape", [elem], {"shape": [1, *shape]}, "row")
        nexts.append(imp.w.emit("where", [at, row, buf], hint=f"stack{len(stacks)}_next"))
        stacks.append((buf, zeros))
    return nexts


def _scan(imp, node, inputs: list, body: onnx.GraphProto, attrs: dict) -> list[Value]:
    if _depth(imp) > 0:
        raise ConvertError(
            "a Scan inside an If or Loop body is not supported (regions do not nest)"
        )
    if onnx.defs.get_schema("Scan", imp.opset).since_version < 9:
        raise ConvertError(
            "Scan-8 (batched, with sequence_lens) is not supported; convert the model to "
            "opset 9 or later (onnx.version_converter)"
        )
    n_scan = int(attrs["num_scan_inputs"])
    states, scans = inputs[: len(inputs) - n_scan], inputs[len(inputs) - n_scan :]
    if not 0 < n_scan <= len(inputs) or len(body.input) != len(inputs):
        raise ConvertError(
            f"Scan with {len(inputs)} inputs, num_scan_inputs {n_scan} and a body of "
            f"{len(body.input)} inputs does not fit together"
        )
    if len(body.output) < len(states):
        raise ConvertError("the Scan body yields fewer values than the Scan has states")
    n_out = len(body.output) - len(states)
    for key, count in (
        ("scan_input_axes", n_scan),
        ("scan_output_axes", n_out),
        ("scan_input_directions", n_scan),
        ("scan_output_directions", n_out),
    ):
        if any(int(v) != 0 for v in attrs.get(key, [0] * count)):
            raise ConvertError(f"Scan with {key} other than 0 is not supported")
    scan_ts = [imp.w.tensor(v, f"scan{j}") for j, v in enumerate(scans)]
    lengths = {t.concrete_shape("a Scan input's shape")[0] for t in scan_ts}
    if len(lengths) != 1:
        raise ConvertError(f"Scan inputs of different lengths {sorted(lengths)}")
    steps = lengths.pop()
    trips_t = imp.w.fill(steps, DType.I32, (), TensorProto.INT64)
    cond_t = imp.w.fill(1, DType.I8, (), TensorProto.BOOL)
    init_ts = [imp.w.tensor(v, f"init{j}") for j, v in enumerate(states)]
    index = _index(imp, "t")
    carried = [_carried(imp, body.input[j].name, t) for j, t in enumerate(init_ts)]
    bound: dict[str, Value] = {body.input[j].name: c for j, c in enumerate(carried)}
    stacks: list[tuple[Tensor, Tensor]] = []  # (carried buffer, its initial zeros)

    def finish(outs: list[Value]) -> list[Value]:
        nexts = outs[: len(states)] + _stack(imp, outs[len(states) :], steps, index, stacks)
        return [cond_t, *nexts]

    def slices() -> dict[str, Value]:
        out = {}
        for j, t in enumerate(scan_ts):
            out[body.input[len(states) + j].name] = imp.w.emit(
                "gather", [t, index], {"axis": 0}, f"slice{j}"
            )
        return out

    items, yields = _body_with(imp, body, bound, slices, finish)
    all_inits = init_ts + [z for _, z in stacks]
    all_carried = carried + [b for b, _ in stacks]
    return _loop_region(imp, node, trips_t, cond_t, all_inits, all_carried, index, items, yields)


def _body_with(
    imp,
    graph: onnx.GraphProto,
    bound: dict[str, Value],
    prelude: Callable[[], dict[str, Value]],
    finish: Callable[[list[Value]], list[Value]],
) -> tuple[list, list[Tensor]]:
    """A subgraph as region body statements and the tensors it yields: `prelude` makes
    body statements that some of its inputs are (a Scan's slices), `finish` turns its
    outputs into the values the body yields (a Scan's stacking)."""
    w = imp.w
    outer = w.items
    w.items = _BodyItems(outer)
    imp.region_depth = _depth(imp) + 1
    try:
        bound = {**bound, **prelude()}
        outs = finish(_walk(imp, graph, bound))
        yields = [w.tensor(v, f"y{k}") for k, v in enumerate(outs)]
        items = list(w.items)
    finally:
        w.items = outer
        imp.region_depth -= 1
    return items, yields


__all__ = ["REGION_OPS", "convert"]
