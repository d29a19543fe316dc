"""Shape and layout ops: Reshape and friends, Slice, Split, Concat, Gather, Expand,
Tile, Pad, Trilu, and the shape/position generators (Shape, Size, Range,
ConstantOfShape) when their operands are runtime or symbolic."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from onnx import TensorProto, numpy_helper

from frontend.onnx.context import ConvertError
from frontend.onnx.convert.registry import Cx, op, require
from frontend.onnx.symdim import NotRepresentable, SymDim, same
from frontend.onnx.values import Known, Tensor, Value, shape_array

INT64_BIG = 2**62  # slice bounds at or beyond this mean "to the end"


# ------------------------------------------------------------ helpers


def broadcast_dims(shapes: Sequence[Sequence[SymDim | None]]) -> tuple[SymDim, ...]:
    """numpy broadcasting of symbolic shapes (an undecidable pair raises)."""
    rank = max((len(s) for s in shapes), default=0)
    out: list[SymDim] = []
    for i in range(rank):
        dims = [s[len(s) - rank + i] for s in shapes if len(s) - rank + i >= 0]
        if any(d is None for d in dims):
            raise NotRepresentable(frozenset(), "a broadcast of an unknown dimension")
        big = [d for d in dims if not same(d, 1)]
        pick = big[0] if big else SymDim(1)
        for d in big[1:]:
            if not same(d, pick):
                names = frozenset(d.names + pick.names)
                raise NotRepresentable(names, f"whether {d.text()} and {pick.text()} broadcast")
        out.append(SymDim.of(pick))
    return tuple(out)


def prod(dims: Sequence[SymDim | None]) -> SymDim:
    out = SymDim(1)
    for d in dims:
        if d is None:
            raise NotRepresentable(frozenset(), "a product of unknown dimensions")
        out = out * d
    return out


def reshape(cx: Cx, x: Value, dims: Sequence[SymDim | int]) -> Value:
    dims = [SymDim.of(d) if not isinstance(d, int) or d >= 0 else d for d in dims]
    current = cx.shape(x)
    if len(current) == len(dims) and all(
        isinstance(d, SymDim) and c is not None and same(c, d)
        for c, d in zip(current, dims, strict=True)
    ):
        return x
    if isinstance(x, Known) and all(
        (isinstance(d, SymDim) and d.is_int) or isinstance(d, int) for d in dims
    ):
        shape = [d.coef if isinstance(d, SymDim) else d for d in dims]
        return Known(x.value.reshape(shape), x.onnx_type, x.weight)
    return cx.emit("reshape", [x], {"shape": list(dims)}, onnx_type=x.onnx_type)


def unsqueeze(cx: Cx, x: Value, axes: Sequence[int]) -> Value:
    rank = cx.rank(x) + len(axes)
    dims: list = list(cx.shape(x))
    for a in sorted(ax % rank for ax in axes):
        dims.insert(a, SymDim(1))
    return reshape(cx, x, _or_minus_one(dims))


def swap_last_axes(cx: Cx, v: Value) -> Value:
    """The last two axes swapped (folded at import for known weights)."""
    rank = cx.rank(v)
    perm = [*range(rank - 2), rank - 1, rank - 2]
    if isinstance(v, Known):
        return Known(np.ascontiguousarray(np.transpose(v.value, perm)), v.onnx_type, v.weight)
    return cx.emit("transpose", [v], {"perm": perm})


def _or_minus_one(dims: list) -> list:
    """A reshape target: unknown dimensions (at most one) become -1."""
    unknown = [i for i, d in enumerate(dims) if d is None]
    if len(unknown) > 1:
        raise NotRepresentable(frozenset(), "a reshape of several unknown dimensions")
    return [-1 if d is None else d for d in dims]


def _norm_axis(axis: int, rank: int, what: str = "axis") -> int:
    if not -rank <= axis < max(rank, 1):
        raise ConvertError(f"{what} {axis} is out of range for rank {rank}")
    return axis % rank if rank else 0


def _int_list(cx: Cx, i: int, what: str) -> list[int | SymDim]:
    return cx.known(i, what).ints()


# ------------------------------------------------------------ shapes


@op("Shape")
def shape_(cx: Cx) -> list[Value]:
    x = cx.input(0)
    dims = list(cx.shape(x))
    rank = len(dims)
    start = cx.attr("start", 0)
    end = cx.attr("end", rank)
    start = min(max(start + rank if start < 0 else start, 0), rank)
    end = min(max(end + rank if end < 0 else end, 0), rank)
    picked = dims[start:end]
    for d in picked:
        if d is None:
            raise NotRepresentable(
                frozenset(), "the shape of a value whose dimensions are not products"
            )
    return [Known(shape_array(tuple(picked)), TensorProto.INT64)]


@op("Size")
def size(cx: Cx) -> list[Value]:
    n = prod(cx.shape(cx.input(0)))
    return [Known(shape_array((n,)).reshape(()), TensorProto.INT64)]


@op("Reshape", since=5)
def reshape_(cx: Cx) -> list[Value]:
    x = cx.input(0)
    target = _int_list(cx, 1, "Reshape's shape")
    allowzero = cx.attr("allowzero", 0)
    dims: list = []
    current = cx.shape(x)
    for i, d in enumerate(target):
        if isinstance(d, int) and d == 0:
            require(not allowzero, "Reshape to a zero-sized dimension is not supported")
            dims.append(current[i])
        else:
            dims.append(d)
    require(sum(1 for d in dims if isinstance(d, int) and d == -1) <= 1, "Reshape with several -1")
    if any(d is None for d in dims):
        require(
            not any(isinstance(d, int) and d == -1 for d in dims), "Reshape of unknown dimensions"
        )
        dims = _or_minus_one(dims)
    return [reshape(cx, x, dims)]


@op("Flatten")
def flatten(cx: Cx) -> list[Value]:
    x = cx.input(0)
    shape = cx.shape(x)
    axis = int(cx.attr("axis", 1))
    axis = axis + len(shape) if axis < 0 else axis  # in [-r, r]: the split point
    require(0 <= axis <= len(shape), f"Flatten axis {cx.attr('axis')} is out of range")
    head, tail = shape[:axis], shape[axis:]
    try:
        first = prod(head)
    except NotRepresentable:
        first = -1
    try:
        second = prod(tail)
    except NotRepresentable:
        second = -1
    return [reshape(cx, x, [first, second])]


def _axes_of(cx: Cx, position: int) -> list[int] | None:
    if cx.opt(position) is not None:
        return [int(v) for v in cx.known(position, "axes").concrete_ints("axes")]
    axes = cx.attr("axes")
    return None if axes is None else list(axes)


@op("Squeeze")
def squeeze(cx: Cx) -> list[Value]:
    x = cx.input(0)
    shape = cx.shape(x)
    axes = _axes_of(cx, 1)
    if axes is None:
        axes = [i for i, d in enumerate(shape) if d is not None and same(d, 1)]
    axes = [_norm_axis(a, len(shape)) for a in axes]
    for a in axes:
        require(
            shape[a] is not None and same(shape[a], 1),
            f"Squeeze of axis {a}, which is not of size 1",
        )
    return [reshape(cx, x, _or_minus_one([d for i, d in enumerate(shape) if i not in axes]))]


@op("Unsqueeze")
def unsqueeze_(cx: Cx) -> list[Value]:
    axes = _axes_of(cx, 1)
    require(axes is not None, "Unsqueeze needs axes")
    return [unsqueeze(cx, cx.input(0), axes)]


@op("Transpose")
def transpose(cx: Cx) -> list[Value]:
    x = cx.input(0)
    perm = cx.attr("perm")
    rank = cx.rank(x)
    perm = list(perm) if perm is not None else list(reversed(range(rank)))
    if perm == list(range(rank)):
        return [x]
    return [cx.emit("transpose", [x], {"perm": perm})]


@op("Concat", since=4)
def concat(cx: Cx) -> list[Value]:
    values = [v for v in cx.inputs if v is not None]
    axis = cx.attr("axis")
    # Empty pieces (exporters concatenate zero-length shapes) add nothing.
    values = [v for v in values if not (isinstance(v, Known) and v.value.size == 0)]
    require(bool(values), "Concat of empty tensors only")
    if len(values) == 1:
        return [values[0]]
    return [cx.emit("concat", values, {"axis": axis})]


@op("Split")
def split(cx: Cx) -> list[Value]:
    x = cx.input(0)
    shape = cx.shape(x)
    axis = _norm_axis(cx.attr("axis", 0), len(shape))
    dim = shape[axis]
    outputs = [o for o in cx.node.output]
    if cx.opt(1) is not None:
        sizes: list = list(cx.known(1, "Split's sizes").concrete_ints("split sizes"))
    elif cx.attr("split") is not None:
        sizes = list(cx.attr("split"))
    else:
        n = cx.attr("num_outputs", len(outputs))
        require(dim is not None, "Split of an unknown dimension")
        if dim.is_int:
            chunk = math.ceil(dim.coef / n)
            sizes = [min(chunk, dim.coef - k * chunk) for k in range(n)]
        else:
            part = dim // n  # raises unless exact
            sizes = [part] * n
    out: list[Value] = []
    start: SymDim = SymDim(0)
    for size_ in sizes:
        size_ = SymDim.of(size_)
        if same(size_, 0):  # an empty piece: known, whatever the input
            from frontend.onnx.dtypes import numpy_type

            dims = [d.coef if d is not None and d.is_int else 1 for d in shape]
            dims[axis] = 0
            out.append(Known(np.zeros(dims, numpy_type(x.onnx_type)), x.onnx_type))
            continue
        end = start + size_
        out.append(slice_axis(cx, x, axis, start, end))
        start = end
    return out


def slice_axis(cx: Cx, x: Value, axis: int, start: SymDim | int, end: SymDim | int) -> Value:
    shape = cx.shape(x)
    if same(SymDim.of(start), 0) and shape[axis] is not None and same(SymDim.of(end), shape[axis]):
        return x
    return cx.emit(
        "slice", [x], {"starts": [start], "ends": [end], "axes": [axis]}, onnx_type=x.onnx_type
    )


@op("Slice")
def slice_(cx: Cx) -> list[Value]:
    x = cx.input(0)
    shape = cx.shape(x)
    rank = len(shape)
    if cx.since < 10:  # bounds as attributes
        starts, ends = list(cx.attr("starts")), list(cx.attr("ends"))
        axes = list(cx.attr("axes", range(len(starts))))
        steps = [1] * len(starts)
    else:
        starts = _int_list(cx, 1, "Slice's starts")
        ends = _int_list(cx, 2, "Slice's ends")
        axes = (
            [int(a) for a in cx.known(3, "Slice's axes").concrete_ints("axes")]
            if cx.opt(3) is not None
            else list(range(len(starts)))
        )
        steps = (
            [int(a) for a in cx.known(4, "Slice's steps").concrete_ints("steps")]
            if cx.opt(4) is not None
            else [1] * len(starts)
        )
    out_starts, out_ends, out_axes = [], [], []
    gathers = []
    for s, e, a, st in zip(starts, ends, axes, steps, strict=True):
        a = _norm_axis(a, rank)
        dim = shape[a]
        if st != 1:
            gathers.append((a, s, e, st))
            continue
        s = _bound(s, dim)
        e = _bound(e, dim)
        if same(SymDim.of(s), 0) and dim is not None and same(SymDim.of(e), dim):
            continue
        out_starts.append(s)
        out_ends.append(e)
        out_axes.append(a)
    out: Value = x
    empty = _empty_slice(cx, x, out_starts, out_ends, out_axes)
    if empty is not None:
        return [empty]
    if out_axes:
        out = cx.emit(
            "slice",
            [x],
            {"starts": out_starts, "ends": out_ends, "axes": out_axes},
            onnx_type=x.onnx_type,
        )
    for a, s, e, st in gathers:
        n = cx.shape(out)[a]
        if n is None or not n.is_int or isinstance(s, SymDim) or isinstance(e, SymDim):
            raise NotRepresentable(
                frozenset(n.names if n is not None else ()),
                "a strided slice of a symbolic dimension",
            )
        index = np.arange(n.coef)[slice(s, e, st)]
        require(index.size > 0, "a Slice that is empty")
        out = _strided_view(cx, out, a, index, st)
    return [out]


def _strided_view(cx: Cx, x: Value, axis: int, index: np.ndarray, step: int) -> Value:
    """x's elements `index` (an arithmetic progression of `step`) along `axis`. Where
    the axis splits into [n / step, step], they are a slice of that split, a strided
    view that kernels read as it lies (GPT-J's and GPT-NeoX's interleaved rotary halves,
    `x[..., ::2]`), not a gather kernel (6-34x slower on the simulator); else a gather."""
    shape = cx.shape(x)
    n = shape[axis].coef  # type: ignore[union-attr]
    if step > 1 and n % step == 0 and (index.size > 1 or n > step):
        q, r = divmod(int(index[0]), step)
        split = [*shape[:axis], SymDim(n // step), SymDim(step), *shape[axis + 1 :]]
        picked = cx.emit(
            "slice",
            [reshape(cx, x, split)],  # type: ignore[arg-type]
            {"starts": [q, r], "ends": [q + index.size, r + 1], "axes": [axis, axis + 1]},
            onnx_type=x.onnx_type,
        )
        return reshape(cx, picked, [*shape[:axis], SymDim(index.size), *shape[axis + 1 :]])  # type: ignore[list-item]
    return cx.emit(
        "gather",
        [x, Known(index.astype(np.int64), TensorProto.INT64)],
        {"axis": axis},
        onnx_type=x.onnx_type,
    )


def _empty_slice(cx: Cx, x: Value, starts, ends, axes) -> Known | None:
    """A slice with no elements, where the sizes say so: a known (empty) value."""
    shape = cx.shape(x)
    if any(d is None or not d.is_int for d in shape):
        return None
    dims = [d.coef for d in shape]
    for s, e, a in zip(starts, ends, axes, strict=True):
        s, e = (v.coef if isinstance(v, SymDim) and v.is_int else v for v in (s, e))
        if isinstance(s, SymDim) or isinstance(e, SymDim):
            return None
        n = dims[a]
        lo = min(max(s + n if s < 0 else s, 0), n)
        hi = min(max(e + n if e < 0 else e, 0), n)
        dims[a] = max(hi - lo, 0)
    if 0 not in dims:
        return None
    from frontend.onnx.dtypes import numpy_type

    return Known(np.zeros(dims, numpy_type(x.onnx_type)), x.onnx_type)


def _bound(v: int | SymDim, dim: SymDim | None) -> int | SymDim:
    """An ONNX slice bound as the eqsat slice attribute takes it (negative from the
    end; bounds beyond the axis clamp to its size)."""
    if isinstance(v, SymDim):
        return v
    if v >= INT64_BIG or (dim is not None and dim.is_int and v > dim.coef):
        if dim is None:
            raise NotRepresentable(frozenset(), "a slice to the end of an unknown dimension")
        return dim
    if v <= -INT64_BIG:
        return 0
    return v


@op("Expand")
def expand(cx: Cx) -> list[Value]:
    x = cx.input(0)
    target = [SymDim.of(d) for d in _int_list(cx, 1, "Expand's shape")]
    shape = broadcast_dims([cx.shape(x), tuple(target)])
    value = uniform_value(x)
    if value is not None:  # a filled buffer, expanded: a fill of the target shape
        out = cx.fill(value, x, shape)
        out.tags["uniform"] = value
        return [out]
    current = cx.shape(x)
    if len(current) == len(shape) and all(
        c is not None and same(c, d) for c, d in zip(current, shape, strict=True)
    ):
        return [x]
    return [cx.emit("broadcast", [x], {"shape": list(shape)}, onnx_type=x.onnx_type)]


@op("Tile")
def tile(cx: Cx) -> list[Value]:
    x = cx.input(0)
    repeats = [int(r) for r in cx.known(1, "Tile's repeats").concrete_ints("repeats")]
    out: Value = x
    for axis, r in enumerate(repeats):
        if r == 1:
            continue
        require(r > 0, "Tile with zero repeats is not supported")
        shape = list(cx.shape(out))
        copies = [*shape[:axis], SymDim(1), *shape[axis:]]
        spread = [*shape[:axis], SymDim(r), *shape[axis:]]
        out = cx.emit("broadcast", [reshape(cx, out, _or_minus_one(copies))], {"shape": spread})
        merged = [*shape[:axis], SymDim(r) * shape[axis], *shape[axis + 1 :]]
        out = reshape(cx, out, merged)
    return [out]


@op("Gather")
def gather(cx: Cx) -> list[Value]:
    data, indices = cx.input(0), cx.input(1)
    shape = cx.shape(data)
    axis = _norm_axis(cx.attr("axis", 0), len(shape))
    if isinstance(indices, Known) and not indices.symbolic:
        idx = np.asarray(indices.value).astype(np.int64)
        n = shape[axis]
        if n is not None and n.is_int:
            idx = np.where(idx < 0, idx + n.coef, idx)
            require(
                bool(np.all((idx >= 0) & (idx < n.coef))), f"Gather indices outside [0, {n.coef})"
            )
        flat = idx.reshape(-1)
        if idx.ndim <= 1 and flat.size and np.all(flat >= 0) and np.all(np.diff(flat) == 1):
            # A contiguous range: a slice (and a squeeze for a scalar index).
            part = slice_axis(cx, data, axis, int(flat[0]), int(flat[-1]) + 1)
            if idx.ndim == 0:
                dims = [d for i, d in enumerate(cx.shape(part)) if i != axis]
                return [reshape(cx, part, _or_minus_one(dims))]
            return [part]
        indices = Known(idx, TensorProto.INT64)
    elif isinstance(indices, Tensor) and indices.dtype.value != "i32":
        indices = cx.emit("cast", [indices], {"dtype": "i32"}, onnx_type=TensorProto.INT32)
    return [cx.emit("gather", [data, indices], {"axis": axis}, onnx_type=data.onnx_type)]


@op("GatherElements")
def gather_elements(cx: Cx) -> list[Value]:
    """out[i][j][k] = data[i][idx[i][j][k]][k] (axis 1): with known indices, one
    gather of the flattened data by linear positions."""
    data, indices = cx.input(0), cx.input(1)
    value = uniform_value(data)
    if value is not None:  # exporters gather from zero-filled buffers
        return [cx.fill(value, data, cx.shape(indices))]
    idx = cx.known(1, "GatherElements' indices (on runtime data)").value.astype(np.int64)
    dims = _concrete(cx, data, "GatherElements on symbolic dimensions")
    axis = _norm_axis(cx.attr("axis", 0), len(dims))
    idx = np.where(idx < 0, idx + dims[axis], idx)
    grids = list(np.indices(idx.shape))
    grids[axis] = idx
    linear = np.ravel_multi_index(tuple(grids), dims, mode="clip")
    return [_gather_linear(cx, data, dims, linear)]


@op("GatherND")
def gather_nd(cx: Cx) -> list[Value]:
    """out[..] = data[idx[.., 0], .., idx[.., k-1], rest]: with known indices, one
    gather over the first k axes flattened."""
    data = cx.input(0)
    b = int(cx.attr("batch_dims", 0))
    idx = cx.known(1, "GatherND's indices (on runtime data)").value.astype(np.int64)
    dims = _concrete(cx, data, "GatherND on symbolic dimensions")
    k = idx.shape[-1]
    head = dims[: b + k]  # batch axes, then the k indexed axes
    idx = np.where(idx < 0, idx + np.array(dims[b : b + k]), idx)
    coords = list(np.moveaxis(idx, -1, 0))
    grid = np.indices(idx.shape[:-1])
    coords = [grid[a] for a in range(b)] + coords
    linear = np.ravel_multi_index(tuple(coords), head, mode="clip")
    flat = reshape(cx, data, [int(np.prod(head)), *dims[b + k :]])
    out = cx.emit(
        "gather", [flat, Known(linear, TensorProto.INT64)], {"axis": 0}, onnx_type=data.onnx_type
    )
    return [out]


def _concrete(cx: Cx, v: Value, what: str) -> tuple[int, ...]:
    if isinstance(v, Known):
        return v.shape
    return v.concrete_shape(what)


def _gather_linear(cx: Cx, data: Value, dims: tuple[int, ...], linear: np.ndarray) -> Value:
    flat = reshape(cx, data, [int(np.prod(dims))])
    out = cx.emit(
        "gather", [flat, Known(linear, TensorProto.INT64)], {"axis": 0}, onnx_type=data.onnx_type
    )
    return out


def uniform_value(v: Value):
    if isinstance(v, Known) and not v.symbolic and v.value.size:
        flat = np.asarray(v.value).reshape(-1)
        if np.all(flat == flat[0]):
            return flat[0].item()
        return None
    if isinstance(v, Tensor):
        return v.tags.get("uniform")
    return None


# ------------------------------------------------------------ generators


@op("ConstantOfShape")
def constant_of_shape(cx: Cx) -> list[Value]:
    dims = [SymDim.of(d) for d in _int_list(cx, 0, "ConstantOfShape's shape")]
    tensor = cx.attr("value")
    value = numpy_helper.to_array(tensor).reshape(-1)[0] if tensor is not None else np.float32(0)
    onnx_type = tensor.data_type if tensor is not None else TensorProto.FLOAT
    like = Known(np.array(value), onnx_type)
    out = cx.fill(value.item(), like, dims)
    out.tags["uniform"] = value.item()
    return [out]


@op("Range")
def range_(cx: Cx) -> list[Value]:
    start, limit, delta = (cx.known(i, "Range's operands") for i in range(3))
    s, e, d = (
        v.ints()[0] if v.value.dtype.kind in "iuO" else float(v.scalar())
        for v in (start, limit, delta)
    )
    if any(isinstance(v, float) for v in (s, e, d)):
        raise NotRepresentable(frozenset(), "a floating-point Range of symbolic bounds")
    n = (
        (SymDim.of(e) - SymDim.of(s)).divide(SymDim.of(d))
        if not same(SymDim.of(d), 1)
        else SymDim.of(e) - SymDim.of(s)
    )
    like = Known(
        np.array(
            0, dtype=np.asarray(start.value).dtype if start.value.dtype != object else np.int64
        ),
        start.onnx_type,
    )
    out: Value = cx.emit(
        "iota", [], {"shape": [n], "dtype": cx.dtype(like).value}, onnx_type=start.onnx_type
    )
    if not same(SymDim.of(d), 1):
        out = cx.emit("mul", [out, cx.fill(d, like)])
    if not same(SymDim.of(s), 0):
        out = cx.emit("add", [out, cx.fill(s, like)])
    return [out]


@op("Trilu")
def trilu(cx: Cx) -> list[Value]:
    x = cx.input(0)
    k = cx.known(1, "Trilu's k").ints()[0] if cx.opt(1) is not None else 0
    shape = cx.shape(x)
    require(len(shape) >= 2, "Trilu needs rank >= 2")
    n, m = shape[-2], shape[-1]
    row = cx.emit(
        "iota", [], {"shape": [n, m], "axis": 0, "dtype": "i32"}, onnx_type=TensorProto.INT32
    )
    col = cx.emit(
        "iota", [], {"shape": [n, m], "axis": 1, "dtype": "i32"}, onnx_type=TensorProto.INT32
    )
    diff = cx.emit("sub", [col, row])
    kk = Known(np.array(k, dtype=np.int32), TensorProto.INT32)
    compare = "greater_equal" if cx.attr("upper", 1) else "less_equal"
    keep = cx.emit(compare, [diff, kk], onnx_type=TensorProto.BOOL)
    zero = cx.scalar(0, x)
    return [cx.emit("where", [keep, x, zero], onnx_type=x.onnx_type)]


# ------------------------------------------------------------ padding


@op("Pad")
def pad(cx: Cx) -> list[Value]:
    x = cx.input(0)
    rank = cx.rank(x)
    if cx.since < 11:  # pads and value as attributes
        pads, value, axes = list(cx.attr("pads")), float(cx.attr("value", 0.0)), list(range(rank))
    else:
        pads = [int(p) for p in cx.known(1, "Pad's pads").concrete_ints("pads")]
        value = cx.known(2, "Pad's constant value").scalar() if cx.opt(2) is not None else 0.0
        axes = (
            [int(a) % rank for a in cx.known(3, "Pad's axes").concrete_ints("axes")]
            if cx.opt(3) is not None
            else list(range(rank))
        )
    require(len(pads) == 2 * len(axes), f"Pad: {len(pads)} pads for {len(axes)} axes")
    begin = dict.fromkeys(range(rank), 0)
    end = dict.fromkeys(range(rank), 0)
    for k, a in enumerate(axes):
        begin[a], end[a] = pads[k], pads[k + len(axes)]
    mode = cx.attr("mode", "constant")
    # Negative pads crop: a slice first.
    out: Value = x
    for a in range(rank):
        if begin[a] < 0 or end[a] < 0:
            start = -begin[a] if begin[a] < 0 else 0
            stop = end[a] if end[a] < 0 else cx.shape(out)[a]  # negative: from the end
            out = slice_axis(cx, out, a, start, stop)
            begin[a], end[a] = max(begin[a], 0), max(end[a], 0)
    if not any(begin.values()) and not any(end.values()):
        return [out]
    if mode == "constant":
        pads_all = [begin[a] for a in range(rank)] + [end[a] for a in range(rank)]
        return [
            cx.emit("pad", [out], {"pads": pads_all, "value": float(value)}, onnx_type=x.onnx_type)
        ]
    require(mode in ("reflect", "edge", "wrap"), f"Pad mode '{mode}' is not supported")
    for a in range(rank):
        if begin[a] or end[a]:
            out = _pad_axis(cx, out, a, begin[a], end[a], mode)
    return [out]


def _pad_axis(cx: Cx, x: Value, axis: int, before: int, after: int, mode: str) -> Value:
    """Reflect/edge/wrap padding along one axis as a gather of source positions."""
    dim = cx.shape(x)[axis]
    if dim is None or not dim.is_int:
        raise NotRepresentable(
            frozenset(dim.names if dim is not None else ()),
            f"{mode} padding of a symbolic dimension",
        )
    n = dim.coef
    positions = np.arange(-before, n + after)
    if mode == "edge":
        index = np.clip(positions, 0, n - 1)
    elif mode == "wrap":
        index = positions % n
    else:
        require(n > 1 or (before == 0 and after == 0), "reflect padding of a size-1 axis")
        period = 2 * (n - 1)
        p = np.abs(positions) % period
        index = np.where(p >= n, period - p, p)
    return cx.emit(
        "gather",
        [x, Known(index.astype(np.int64), TensorProto.INT64)],
        {"axis": axis},
        onnx_type=x.onnx_type,
    )


__all__ = [
    "broadcast_dims",
    "prod",
    "reshape",
    "slice_axis",
    "swap_last_axes",
    "uniform_value",
    "unsqueeze",
]


@op("DepthToSpace", "SpaceToDepth")
def depth_space(cx: Cx) -> list[Value]:
    """Channel <-> space rearrangements as a reshape, a transpose and a reshape."""
    x = cx.input(0)
    n, c, h, w = cx.shape(x)
    b = int(cx.attr("blocksize"))
    mode = cx.attr("mode", "DCR")
    if cx.op_type == "SpaceToDepth":
        y = reshape(cx, x, [n, c, h // b, SymDim(b), w // b, SymDim(b)])
        perm = [0, 3, 5, 1, 2, 4] if mode == "DCR" else [0, 1, 3, 5, 2, 4]
        y = cx.emit("transpose", [y], {"perm": perm})
        return [reshape(cx, y, [n, c * b * b, h // b, w // b])]
    if mode == "DCR":
        y = reshape(cx, x, [n, SymDim(b), SymDim(b), c // (b * b), h, w])
        y = cx.emit("transpose", [y], {"perm": [0, 3, 4, 1, 5, 2]})
    else:
        y = reshape(cx, x, [n, c // (b * b), SymDim(b), SymDim(b), h, w])
        y = cx.emit("transpose", [y], {"perm": [0, 1, 4, 2, 5, 3]})
    return [reshape(cx, y, [n, c // (b * b), h * b, w * b])]


@op("Constant")
def constant(cx: Cx) -> list[Value]:
    """(Constants are evaluated before any converter runs; this entry claims the op.)"""
    from frontend.onnx.shapes import fold_symbolic

    out = fold_symbolic(cx.node, [], cx.attrs)
    require(out is not None, "a Constant without a value")
    return out


@op("CumSum")
def cumsum(cx: Cx) -> list[Value]:
    """Cumulative sum along one axis (position ids from a padding mask)."""
    x = cx.input(0)
    axis = int(cx.known(1, "CumSum's axis").concrete_ints("axis")[0])
    attrs = {"axis": _norm_axis(axis, cx.rank(x))}
    if cx.attr("exclusive", 0):
        attrs["exclusive"] = True
    if cx.attr("reverse", 0):
        attrs["reverse"] = True
    return [cx.emit("cumsum", [x], attrs, onnx_type=x.onnx_type)]
