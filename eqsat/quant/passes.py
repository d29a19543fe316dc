"""The quantization pass: calibrated ranges -> observe annotations, scales, and the
values of the params the int8 program reads (see eqsat/quant/__init__.py)."""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from eqsat.egraph.program import graph_program
from eqsat.interpreter import evaluate_nodes
from eqsat.ir.graph import Graph, GraphBuilder, Node
from eqsat.ir.types import DType, TensorType
from eqsat.quant.calibrate import DEFAULT_PERCENTILE, check_method, observed_values, range_of
from eqsat.quant.qparams import choose_qparams
from eqsat.quant.rotation import Rotation, plan_rotations
from eqsat.quant.smooth import SmoothGroup, plan_smoothing


@dataclass(frozen=True)
class TensorQuant:
    """The calibrated int8 form of one activation tensor."""

    name: str
    lo: float
    hi: float
    scale: float
    zero_point: int


@dataclass
class QuantPlan:
    graph: Graph  # the model with observe annotations on calibrated matmul inputs
    params: dict[str, np.ndarray]  # values of the new params (quantized weights, ...)
    seeds: str  # egglog: each term the rules build from weights = its new param
    tensors: list[TensorQuant] = field(default_factory=list)
    layers: list[str] = field(default_factory=list)  # weights of the quantizable matmuls, convs
    smoothed: int = 0  # activations smoothed (SmoothQuant), their factors folded away
    act_qparams: dict[int, tuple[float, int]] = field(default_factory=dict)  # by model node
    layer_nodes: list[int] = field(default_factory=list)  # the quantized matmuls, convs
    conv_nodes: set[int] = field(default_factory=set)
    rotations: list[Rotation] = field(default_factory=list)  # --rotate candidates, measured


def quantizable_matmuls(graph: Graph, params: Mapping[str, np.ndarray]) -> list[int]:
    """f32 matmuls x @ w with w a rank-2 param whose value is known and finite, with no
    all-zero column, and the default tile."""
    out = []
    for i, node in graph:
        if node.op != "matmul" or node.attr_dict.get("tile", ()) not in ((), []):
            continue
        x, w = (graph.nodes[j] for j in node.inputs)
        if w.op != "param" or w.type.rank != 2 or w.type.dtype is not DType.F32:
            continue
        if x.type.dtype is not DType.F32 or x.type.rank < 2 or str(w.attr("name")) not in params:
            continue
        value = np.asarray(params[str(w.attr("name"))], dtype=np.float32)
        if not np.isfinite(value).all() or not (np.abs(value).max(axis=0) > 0).all():
            continue  # a dead (all-zero) output channel has no scale: its bias would be lost
        out.append(i)
    return out


def quantizable_convs(graph: Graph, params: Mapping[str, np.ndarray]) -> list[int]:
    """f32 conv2d(x, w) with w a param whose value is known and finite, with no all-zero
    output channel and the default tile (any groups: depthwise convolutions too)."""
    out = []
    for i, node in graph:
        if node.op != "conv2d" or node.attr_dict.get("tile", ()) not in ((), []):
            continue
        x, w = (graph.nodes[j] for j in node.inputs)
        if w.op != "param" or w.type.dtype is not DType.F32 or x.type.dtype is not DType.F32:
            continue
        groups = int(node.attr_dict.get("groups", 1))
        if groups > 1 and w.type.shape[1] == 1 and w.type.shape[0] != groups:
            continue  # a depthwise channel multiplier: its int8 epilogue is not fused
        if str(w.attr("name")) not in params:
            continue
        value = np.asarray(params[str(w.attr("name"))], dtype=np.float32)
        if not np.isfinite(value).all() or not (np.abs(value).max(axis=(1, 2, 3)) > 0).all():
            continue
        out.append(i)
    return out


def _from_conv(graph: Graph, j: int, convs: Collection[int]) -> bool:
    """Is node j a quantized convolution, or one followed by per-channel multiplies and
    adds (bias, batch norm: an operand of rank <= 3)?"""
    node = graph.nodes[j]
    while j not in convs:
        if node.op not in ("add", "mul") or node.type.rank != 4:
            return False
        a, c = node.inputs
        if graph.nodes[c].type.rank <= 3:
            j = a
        elif graph.nodes[a].type.rank <= 3:
            j = c
        else:
            return False
        node = graph.nodes[j]
    return True


def residual_operands(graph: Graph, convs: Collection[int]) -> list[tuple[int, int]]:
    """(add, residual) pairs: each f32 add of two NCHW tensors of one shape where one
    side comes from a quantized convolution (through its bias and batch norm) and the
    other, the residual, is to be observed too, so that the sum can run in the
    convolution's epilogue on the residual's int8 form (rules/quant.rules,
    qconv2d-bias-add-requant)."""
    out = []
    conv_set = set(convs)
    for i, node in graph:
        if node.op != "add" or node.type.rank != 4 or node.type.dtype is not DType.F32:
            continue
        a, c = node.inputs
        if graph.nodes[a].type != node.type or graph.nodes[c].type != node.type:
            continue
        if _from_conv(graph, a, conv_set):
            out.append((i, c))
        elif _from_conv(graph, c, conv_set):
            out.append((i, a))
    return out


def plan_quantization(
    graph: Graph,
    params: Mapping[str, np.ndarray],
    samples: Sequence[Mapping[str, np.ndarray]],
    rounding: str,
    method: str = "minmax",
    percentile: float = DEFAULT_PERCENTILE,
    smooth_alpha: float | None = None,
    only: Collection[int] | None = None,
    activation_scheme: str = "asymmetric",
    rotate: str = "none",
) -> QuantPlan:
    """Calibrate, choose scales, annotate the model and compute the int8 params.
    `smooth_alpha`: SmoothQuant's migration strength (eqsat/quant/smooth.py); None:
    no smoothing. `only`: the matmul/conv nodes to quantize (default: every
    quantizable one). `activation_scheme`: see choose_qparams. `rotate`: auto, none
    or all, the online Hadamard rotation of matmul inputs (eqsat/quant/rotation.py)."""
    live = graph.live()
    keep = (lambda i: live[i]) if only is None else (lambda i: live[i] and i in only)
    matmuls = [i for i in quantizable_matmuls(graph, params) if keep(i)]
    convs = [i for i in quantizable_convs(graph, params) if keep(i)]
    mms = sorted(matmuls + convs)
    mm_inputs = {graph.nodes[i].inputs[0] for i in matmuls}  # may be smoothed: not here
    residuals = [(i, r) for i, r in residual_operands(graph, convs) if r not in mm_inputs]
    acts = sorted({graph.nodes[i].inputs[0] for i in mms} | {r for _, r in residuals})
    check_method(method, percentile)
    values = observed_values(graph, acts, samples, params)
    groups: dict[int, SmoothGroup] = {}
    if smooth_alpha is not None:
        conv_inputs = {graph.nodes[i].inputs[0] for i in convs}
        found = plan_smoothing(graph, matmuls, values, params, smooth_alpha)
        groups = {g.act: g for g in found if g.act not in conv_inputs}
    conv_acts = {graph.nodes[i].inputs[0] for i in convs}
    candidates = [j for j in acts if j not in groups and j not in conv_acts]
    measured = plan_rotations(
        graph, candidates, values, rotate, method, percentile, activation_scheme, _label
    )
    rotations = {r.act: r for r in measured if r.chosen}
    ranges = {
        j: rotations[j].rotated_range
        if j in rotations
        else range_of(
            values[j] / groups[j].factor if j in groups else values[j], method, percentile
        )
        for j in acts
    }
    del values
    qparams = {j: choose_qparams(*ranges[j], activation_scheme) for j in acts}

    names = {str(n.attr("name")) for _, n in graph.inputs + graph.params}
    smooth_params: dict[str, np.ndarray] = {}
    inv_names: dict[int, str] = {}  # smoothed activation -> its 1/s param
    col_names: dict[int, str] = {}  # matmul reading a smoothed activation -> its s param
    for j, g in groups.items():
        inv_names[j] = _fresh(names, f"{_label(graph, j)}.smooth_inv")
        smooth_params[inv_names[j]] = (1.0 / g.factor).astype(np.float32)
        for i in g.matmuls:
            wname = str(graph.nodes[graph.nodes[i].inputs[1]].attr("name"))
            col_names[i] = _fresh(names, f"{wname}.smooth")
            smooth_params[col_names[i]] = g.factor[:, None].copy()

    b = GraphBuilder(graph.name, graph.dims)
    b.graph.constants = dict(graph.constants)
    new: dict[int, int] = {}
    observed: dict[int, int] = {}
    leaves: dict[str, int] = {}

    def leaf(name: str) -> int:
        if name not in leaves:
            v = smooth_params[name]
            leaves[name] = b.leaf("param", name, TensorType(DType.F32, v.shape))
        return leaves[name]

    residual_at = dict(residuals)
    for i, node in graph:
        inputs = [new[j] for j in node.inputs]
        r = residual_at.get(i)
        if r is not None and r not in observed:  # a quantized convolution's residual
            scale, zp = qparams[r]
            attrs = {"scale": scale, "zero_point": zp, "rounding": rounding}
            observed[r] = b.add("observe", (new[r],), attrs)
        if r is not None:
            inputs[node.inputs.index(r)] = observed[r]
        if i in mms:
            x = node.inputs[0]
            if x not in observed:
                scale, zp = qparams[x]
                attrs = {"scale": scale, "zero_point": zp, "rounding": rounding}
                src = new[x]
                if x in groups:  # x * (1/s): folds into x's producer (rules/quant.rules)
                    src = b.add("mul", (src, leaf(inv_names[x])))
                if x in rotations:  # x H, its matmuls read H^T w (rules/rotation.rules)
                    src = b.add("hadamard", (src,), {"block": rotations[x].block})
                observed[x] = b.add("observe", (src,), attrs)
            inputs[0] = observed[x]
            if i in col_names:  # s * w: a compile-time product, seeded below
                inputs[1] = b.add("mul", (leaf(col_names[i]), inputs[1]))
            if x in rotations:  # H^T w: a compile-time term, seeded below
                inputs[1] = rotated_rows(b, inputs[1], rotations[x].block)
        new[i] = b.add(node.op, inputs, node.attr_dict, node.name)
    for name, i in graph.outputs:
        b.output(name, new[i])

    seeds = _Seeds(graph, names, smooth_params)
    users = graph.users()
    weight_terms: dict[int, int] = {}  # matmul -> its weight's term in the seeds
    for i in mms:
        x, w = graph.nodes[i].inputs
        scale, _ = qparams[x]
        wname = str(graph.nodes[w].attr("name"))
        if i in convs:
            seeds.conv_weights(w, wname, scale)
            continue  # no conv bias rule: the bias stays a float add
        term = seeds.param(w)
        if i in col_names:
            term = seeds.product(seeds.new_param(col_names[i]), term)
            wname = col_names[i]
        if x in rotations:  # H^T w, f32 (an unquantized layer reads it) and int8
            term = rotated_rows(seeds.b, term, rotations[x].block)
            wname = f"{wname}.rot"
            seeds.pair(term, wname)
        weight_terms[i] = term
        s = seeds.weights(term, wname, scale)
        for u in users[i]:  # a bias add: add(x@w, b) or add(b, x@w), b a rank-1 param
            un = graph.nodes[u]
            if un.op != "add":
                continue
            other = un.inputs[1] if un.inputs[0] == i else un.inputs[0]
            bn = graph.nodes[other]
            n = graph.nodes[w].type.shape[1]
            is_bias = bn.op == "param" and bn.type.shape == (n,) and bn.type.dtype is DType.F32
            if is_bias and str(bn.attr("name")) in params:
                seeds.bias(other, str(bn.attr("name")), s)
    for j, g in groups.items():  # what the smoothing rules build: seeded products
        inv = seeds.new_param(inv_names[j])
        for p in g.norm_params:
            seeds.pair(seeds.product(seeds.param(p), inv), f"{_label(graph, p)}.smooth")
        if g.fold == "gated":
            m = g.gated_matmul
            wm = graph.nodes[m].inputs[1]
            folded = seeds.product(weight_terms.get(m, seeds.param(wm)), inv)
            base = f"{graph.nodes[wm].attr('name')}.smooth_cols"
            seeds.pair(folded, base)
            if m in weight_terms:
                seeds.weights(folded, base, qparams[graph.nodes[m].inputs[0]][0])
    tensors = [TensorQuant(_label(graph, j), ranges[j][0], ranges[j][1], *qparams[j]) for j in acts]
    values = {**smooth_params, **seeds.evaluate({**params, **smooth_params})}
    layers = [str(graph.nodes[graph.nodes[i].inputs[1]].attr("name")) for i in mms]
    plan = QuantPlan(b.graph, values, seeds.egglog(), tensors, layers, len(groups))
    plan.act_qparams = qparams
    plan.layer_nodes = mms
    plan.conv_nodes = set(convs)
    plan.rotations = measured
    return plan


def rotated_rows(b: GraphBuilder, w: int, block: int) -> int:
    """H^T w = transpose(hadamard(transpose(w))): w's rows rotated, as
    rules/rotation.rules' hadamard-matmul-cancel matches it."""
    t = b.add("transpose", (w,), {"perm": [1, 0]})
    return b.add("transpose", (b.add("hadamard", (t,), {"block": block}),), {"perm": [1, 0]})


def _fresh(names: set[str], base: str) -> str:
    """`base`, or `base.1`, `base.2`, ...: a param name not yet taken (then taken)."""
    name, k = base, 1
    while name in names:
        name, k = f"{base}.{k}", k + 1
    names.add(name)
    return name


def _label(graph: Graph, j: int) -> str:
    node = graph.nodes[j]
    if node.op == "input":
        return str(node.attr("name"))
    return node.name or f"%{j}"


class _Seeds:
    """The weight-side terms of rules/quant.rules, built exactly as the rules build
    them, each paired with a new param that holds its value."""

    var_prefix = "$qseed"  # the egglog variables of the seed terms (one set per pass)

    def __init__(
        self, graph: Graph, names: set[str], extra: Mapping[str, np.ndarray] | None = None
    ) -> None:
        self.graph = graph
        self.b = GraphBuilder(self.var_prefix.lstrip("$") + "s", cse=True)
        self.leaf: dict[int, int] = {}
        self.pairs: list[tuple[int, int, str]] = []  # (term, new param, param name)
        self.names = names  # taken param names (shared with the pass)
        self.extra = dict(extra or {})  # new params the pass added (smoothing factors)

    def param(self, j: int) -> int:
        """The seeds' leaf for param node j of the model."""
        if j not in self.leaf:
            node: Node = self.graph.nodes[j]
            self.leaf[j] = self.b.leaf("param", str(node.attr("name")), node.type)
        return self.leaf[j]

    _param = param

    def new_param(self, name: str) -> int:
        """The seeds' leaf for a param the pass added."""
        v = self.extra[name]
        return self.b.leaf("param", name, TensorType(DType.F32, tuple(v.shape)))

    def product(self, a: int, b: int) -> int:
        return self.b.add("mul", (a, b))

    def _fresh(self, base: str) -> str:
        return _fresh(self.names, base)

    def pair(self, term: int, base: str) -> None:
        """Seed `term = new param` (named from `base`) unless `term` is seeded already."""
        if not any(p[0] == term for p in self.pairs):
            self._pair(term, base)

    def _pair(self, term: int, base: str) -> None:
        t: TensorType = self.b.graph.nodes[term].type
        name = self._fresh(base)
        self.pairs.append((term, self.b.leaf("param", name, t), name))

    def _const(self, value: float) -> int:
        return self.b.const(value, TensorType(DType.F32, ()))

    def weights(self, pw: int, wname: str, scale: float) -> int:
        """For the weight term pw: ws = max|w| / 127 per column; q(w) = cast(w / ws);
        s = ws * S. Returns s."""
        add = self.b.add
        absmax = add(
            "reduce_max",
            (add("maximum", (pw, add("neg", (pw,)))),),
            {"axes": [0], "keepdims": True},
        )
        ws = add("div", (absmax, self._const(127.0)))
        wq = add("cast", (add("div", (pw, ws)),), {"dtype": "i8"})
        s = add("mul", (ws, self._const(scale)))
        if not any(p[0] == wq for p in self.pairs):
            self._pair(wq, f"{wname}.q")
        self._pair(s, f"{wname}.s")
        return s

    def conv_weights(self, w: int, wname: str, scale: float) -> None:
        """ws = max|w| / 127 per output channel ([O, 1, 1, 1]); q(w) = cast(w / ws);
        s = reshape(ws, [O, 1, 1]) * S, as rules/quant.rules' quantize-conv2d builds them."""
        add = self.b.add
        pw = self._param(w)
        absmax = add(
            "reduce_max",
            (add("maximum", (pw, add("neg", (pw,)))),),
            {"axes": [1, 2, 3], "keepdims": True},
        )
        ws = add("div", (absmax, self._const(127.0)))
        wq = add("cast", (add("div", (pw, ws)),), {"dtype": "i8"})
        o = self.graph.nodes[w].type.shape[0]
        s = add("mul", (add("reshape", (ws,), {"shape": [o, 1, 1]}), self._const(scale)))
        if not any(p[0] == wq for p in self.pairs):
            self._pair(wq, f"{wname}.q")
        self._pair(s, f"{wname}.s")

    def bias(self, bj: int, bname: str, s: int) -> None:
        """q(b) = cast(b / s, i32): the bias at the accumulator's scale."""
        term = self.b.add("cast", (self.b.add("div", (self._param(bj), s)),), {"dtype": "i32"})
        self._pair(term, f"{bname}.q")

    def evaluate(self, params: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        g = self.b.graph
        g.outputs = [(name, term) for term, _, name in self.pairs]
        values = evaluate_nodes(g, params)
        return {name: values[term] for term, _, name in self.pairs}

    def egglog(self) -> str:
        """Commands adding the seed terms and their params, and their unions."""
        g = self.b.graph
        g.outputs = [(f"o{k}", n) for k, (t, p, _) in enumerate(self.pairs) for n in (t, p)]
        text, names = graph_program(g)
        text = re.sub(r"\$n(\d+)", lambda m: f"{self.var_prefix}{m.group(1)}", text)
        rename = {k: v.replace("$n", self.var_prefix) for k, v in names.items()}
        unions = [f"(union {rename[t]} {rename[p]})" for t, p, _ in self.pairs]
        return text + "\n".join(unions) + "\n"
