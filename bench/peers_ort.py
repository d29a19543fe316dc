"""ONNX Runtime's optimized graph of a model, with the kernels ORT would run.

`ort_graph` asks ORT (CPU provider) for its optimized graph (`optimized_model_filepath`
of an ORT_ENABLE_ALL session) and, for BERT and GPT-2, first runs
`onnxruntime.transformers.optimizer` (Attention, SkipLayerNormalization, BiasGelu /
FastGelu fusions; EmbedLayerNormalization is turned off because eqsat's importer does
not read it).

ORT runs one kernel per node of that graph, so each node is one group for
bench/peers_groups.py: a com.microsoft fused node, which eqsat imports as the ops it
means, runs as the registry kernels that compute those ops (a FusedMatMul's scale
or a Gemm's bias in the matmul's epilogue, BiasGelu as add + gelu because the
registry has no add-gelu kernel, SkipLayerNormalization as add + layernorm).

Two steps of ORT_ENABLE_ALL are specific to x86 CPUs and are undone here rather than
dropped silently: the NCHWc layout transformer (com.microsoft.nchwc Conv with
ReorderInput/ReorderOutput) has no meaning on the accelerator, so when it appears
the graph of ORT_ENABLE_EXTENDED (the same fusions without the layout change) is
used instead; and com.microsoft FusedConv (Conv + optional residual Add + activation,
which eqsat's importer does not read) is written back as its standard ONNX nodes,
which stay one group.
"""

from __future__ import annotations

import collections
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import onnx
from onnx import helper, numpy_helper

MS = "com.microsoft"
TRANSFORMER_TYPES = {"bert_base": "bert", "gpt2": "gpt2"}


@dataclass
class OrtGraph:
    model: onnx.ModelProto  # what eqsat imports
    groups: list[int]  # per node of `model`: the ORT kernel (ORT's node) it belongs to
    kinds: list[str]  # per ORT node: its op type (domain:op for contrib ops)
    level: str  # the session level whose graph this is
    fusions: dict[str, int] = field(default_factory=dict)  # com.microsoft op -> count
    notes: list[str] = field(default_factory=list)


def ort_graph(
    path: str | Path,
    transformer: str | None = None,
    num_heads: int = 0,
    hidden_size: int = 0,
) -> OrtGraph:
    """ORT's optimized graph of the ONNX file `path`; `transformer` ("bert",
    "gpt2") runs ORT's transformers optimizer first."""
    notes: list[str] = []
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(path)
        if transformer:
            src = _transformers_optimized(src, Path(tmp), transformer, num_heads, hidden_size)
            notes.append(f"onnxruntime.transformers.optimizer (model_type={transformer})")
        model = _session_optimized(src, Path(tmp), "ORT_ENABLE_ALL")
        level = "ORT_ENABLE_ALL"
        if any(n.domain == f"{MS}.nchwc" for n in model.graph.node):
            model = _session_optimized(src, Path(tmp), "ORT_ENABLE_EXTENDED")
            level = "ORT_ENABLE_EXTENDED"
            notes.append("NCHWc layout (x86) left out: ORT_ENABLE_EXTENDED's graph")
    fusions = collections.Counter(n.op_type for n in model.graph.node if n.domain == MS)
    kinds = [f"{n.domain}:{n.op_type}" if n.domain else n.op_type for n in model.graph.node]
    model, groups = expand_fused_conv(model)
    return OrtGraph(model, groups, kinds, level, dict(sorted(fusions.items())), notes)


def _session_optimized(src: Path, tmp: Path, level: str) -> onnx.ModelProto:
    import onnxruntime as ort

    out = tmp / f"{src.stem}-{level}.onnx"
    options = ort.SessionOptions()
    options.graph_optimization_level = getattr(ort.GraphOptimizationLevel, level)
    options.optimized_model_filepath = str(out)
    options.log_severity_level = 3
    if _needs_external(src):
        options.add_session_config_entry(
            "session.optimized_model_external_initializers_file_name", out.stem + ".data"
        )
        options.add_session_config_entry(
            "session.optimized_model_external_initializers_min_size_in_bytes", "1024"
        )
    ort.InferenceSession(str(src), options, providers=["CPUExecutionProvider"])
    return onnx.load(str(out))


def _needs_external(src: Path) -> bool:
    return src.stat().st_size > 1_900_000_000 or any(src.parent.glob(src.name + ".data"))


def _transformers_optimized(
    src: Path, tmp: Path, kind: str, num_heads: int, hidden_size: int
) -> Path:
    from onnxruntime.transformers import optimizer
    from onnxruntime.transformers.fusion_options import FusionOptions

    options = FusionOptions(kind)
    options.enable_embed_layer_norm = False
    optimized = optimizer.optimize_model(
        str(src),
        model_type=kind,
        num_heads=num_heads,
        hidden_size=hidden_size,
        optimization_options=options,
        opt_level=0,
    )
    out = tmp / f"{src.stem}-{kind}.onnx"
    optimized.save_model_to_file(str(out))
    return out


def expand_fused_conv(model: onnx.ModelProto) -> tuple[onnx.ModelProto, list[int]]:
    """com.microsoft FusedConv nodes written as Conv [+ Add] + activation; the node
    groups (one per original node)."""
    out = onnx.ModelProto()
    out.CopyFrom(model)
    del out.graph.node[:]
    groups: list[int] = []
    for g, node in enumerate(model.graph.node):
        if node.domain == MS and node.op_type == "FusedConv":
            nodes = _conv_nodes(node, out.graph, g)
        else:
            nodes = [node]
        out.graph.node.extend(nodes)
        groups += [g] * len(nodes)
    return out, groups


_ACTIVATIONS = {"Relu", "Sigmoid", "Tanh", "Clip", "LeakyRelu", "HardSigmoid"}


def _conv_nodes(node: onnx.NodeProto, graph: onnx.GraphProto, g: int) -> list[onnx.NodeProto]:
    attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
    activation = attrs.pop("activation", b"").decode() or None
    params = list(attrs.pop("activation_params", []))
    if activation is not None and activation not in _ACTIVATIONS:
        raise ValueError(f"FusedConv activation {activation} is not written back")
    y = node.output[0]
    stem = f"{node.name or 'FusedConv'}_{g}"
    conv_inputs = list(node.input[:3])
    nodes = [helper.make_node("Conv", conv_inputs, [f"{stem}/conv"], name=f"{stem}/Conv", **attrs)]
    last = f"{stem}/conv"
    if len(node.input) > 3 and node.input[3]:
        nodes.append(
            helper.make_node("Add", [last, node.input[3]], [f"{stem}/sum"], name=f"{stem}/Add")
        )
        last = f"{stem}/sum"
    if activation is None:
        nodes[-1].output[0] = y
        return nodes
    extra: dict = {}
    inputs = [last]
    if activation == "Clip":
        import numpy as np

        for k, value in zip(("min", "max"), params, strict=False):
            name = f"{stem}/clip_{k}"
            graph.initializer.append(numpy_helper.from_array(np.array(value, np.float32), name))
            inputs.append(name)
    elif activation == "LeakyRelu" and params:
        extra["alpha"] = params[0]
    elif activation == "HardSigmoid" and params:
        extra["alpha"], extra["beta"] = params[0], params[1]
    nodes.append(helper.make_node(activation, inputs, [y], name=f"{stem}/{activation}", **extra))
    return nodes


__all__ = ["OrtGraph", "expand_fused_conv", "ort_graph"]
