"""Where `eqsat run` departs from ONNX Runtime, node by node, given identical inputs.

Run: python bench/onnx_node_diff.py MODEL.onnx [--dim S=16 ...] [--ops QLinearAdd,...]
     [--seed 7] [--per-type 1000]

ONNX Runtime runs MODEL once (without its graph optimizations, so that every node runs
as written) with every node's outputs exposed as graph outputs. Then each node (of the
--ops types, at most --per-type of each) is imported alone into eqsat, its inputs fed
with ORT's values of them (initializers stay initializers; integer inputs computed
from shapes become constants), run by the reference interpreter and compared with
ORT's output of that node. Prints per op type: nodes compared, nodes that differ,
elements that differ, and the largest difference (in units of the last place for
float outputs, in integer steps for quantized ones).
"""

from __future__ import annotations

import argparse
import collections
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

SKIP = {"Constant", "Shape", "Gather", "Unsqueeze", "Concat", "ConstantOfShape", "Range"}


def all_intermediates(model, feeds: dict) -> dict[str, np.ndarray]:
    """Every node output's value, by ORT without graph optimizations."""
    import onnx
    import onnxruntime as ort

    m = onnx.ModelProto()
    m.CopyFrom(model)
    have = {o.name for o in m.graph.output}
    for node in m.graph.node:
        for o in node.output:
            if o and o not in have:
                m.graph.output.append(onnx.ValueInfoProto(name=o))
                have.add(o)
    options = ort.SessionOptions()
    options.log_severity_level = 3
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    session = ort.InferenceSession(
        m.SerializeToString(), options, providers=["CPUExecutionProvider"]
    )
    names = [o.name for o in session.get_outputs()]
    return dict(zip(names, session.run(None, feeds), strict=True))


def one_node_model(model, node, values: dict, inits: dict):
    """A model of NODE alone: initializer inputs copied, integer inputs (shapes) as
    initializers, the others graph inputs; (model proto, feeds)."""
    from onnx import helper, numpy_helper

    graph_inputs, initializers, feeds = [], [], {}
    for name in node.input:
        if not name or name in feeds or any(t.name == name for t in initializers):
            continue
        if name in inits:
            initializers.append(inits[name])
            continue
        v = values[name]
        if (v.dtype.kind in "iub" and v.dtype not in (np.uint8, np.int8)) or v.dtype == bool:
            initializers.append(numpy_helper.from_array(v, name))
            continue
        elem = helper.np_dtype_to_tensor_dtype(v.dtype)
        graph_inputs.append(helper.make_tensor_value_info(name, elem, list(v.shape)))
        feeds[name] = v
    outputs = [
        helper.make_tensor_value_info(
            o, helper.np_dtype_to_tensor_dtype(values[o].dtype), list(values[o].shape)
        )
        for o in node.output
        if o
    ]
    g = helper.make_graph([node], "one", graph_inputs, outputs, initializers)
    m = helper.make_model(g, opset_imports=list(model.opset_import))
    m.ir_version = model.ir_version
    return m, feeds


def eqsat_outputs(m, feeds: dict) -> dict[str, np.ndarray]:
    import onnx

    from eqsat.interpreter import evaluate
    from eqsat.loading import load_model

    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / "node.onnx"
        onnx.save(m, str(p))
        loaded = load_model(p, {})
        got = evaluate(loaded.graph, loaded.bindings(0, feeds))
        return loaded.onnx.results(got)


def difference(got: np.ndarray, want: np.ndarray) -> tuple[int, float]:
    """(elements that differ, largest difference: integer steps, or float ulps)."""
    got = np.asarray(got).reshape(want.shape)
    if want.dtype.kind in "iub":
        d = np.abs(got.astype(np.int64) - want.astype(np.int64))
        return int(np.count_nonzero(d)), float(d.max(initial=0))
    g, w = got.astype(np.float32), want.astype(np.float32)
    ulp = np.spacing(np.maximum(np.abs(w), np.float32(1e-30)))
    d = np.abs(g.astype(np.float64) - w.astype(np.float64)) / ulp
    both_nan = np.isnan(g) & np.isnan(w)
    d = np.where(both_nan, 0.0, d)
    return int(np.count_nonzero(d)), float(np.nanmax(d, initial=0.0))


def main() -> int:
    import onnx
    from onnx_quantized_models import sample_feeds

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("model")
    p.add_argument("--dim", action="append", default=[], metavar="NAME=N")
    p.add_argument("--ops", default="", help="op types to compare (default: all)")
    p.add_argument("--per-type", type=int, default=1000)
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--show", type=int, default=3, help="differing nodes to name per type")
    args = p.parse_args()
    dims = dict((k, int(v)) for k, v in (d.split("=") for d in args.dim))
    model = onnx.load(args.model)
    feeds = sample_feeds(Path(args.model), dims, seed=args.seed)
    values = dict(feeds)
    values.update(all_intermediates(model, feeds))
    inits = {t.name: t for t in model.graph.initializer}
    wanted = set(args.ops.split(",")) if args.ops else None
    stats: dict[str, list] = collections.defaultdict(lambda: [0, 0, 0, 0, 0.0, []])
    for node in model.graph.node:
        if node.op_type in SKIP or (wanted and node.op_type not in wanted):
            continue
        s = stats[node.op_type]
        if s[0] >= args.per_type:
            continue
        try:
            m, f = one_node_model(model, node, values, inits)
            got = eqsat_outputs(m, f)
        except Exception as err:  # a node that does not import alone: say so, go on
            print(f"{node.name} ({node.op_type}): {type(err).__name__}: {err}", file=sys.stderr)
            continue
        s[0] += 1
        differs = False
        for o in (o for o in node.output if o):
            n, worst = difference(got[o], values[o])
            s[2] += n
            s[3] += values[o].size
            s[4] = max(s[4], worst)
            differs |= n > 0
        if differs:
            s[1] += 1
            if len(s[5]) < args.show:
                s[5].append(node.name)
    print(f"{'op':<24}{'nodes':>6}{'differ':>7}{'elements differ':>22}{'max':>10}  examples")
    for op_type, (n, bad, el, tot, worst, names) in sorted(stats.items()):
        print(f"{op_type:<24}{n:>6}{bad:>7}{el:>12}/{tot:<9}{worst:>10.3g}  {' '.join(names)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
