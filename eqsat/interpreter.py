"""The reference interpreter: the meaning of a graph, computed with numpy.

Floating-point ops compute in f32 and round their result to the node's dtype, so a
bf16 graph behaves like hardware that accumulates in f32 and stores bf16.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping

import numpy as np

from eqsat.errors import UserError
from eqsat.ir.graph import Graph, Node
from eqsat.ir.types import DType, TensorType


class BindingError(UserError):
    """A caller supplied missing or ill-shaped values for inputs or params."""


def _compute_view(x: np.ndarray) -> np.ndarray:
    return x.astype(np.float32) if x.dtype.kind == "V" or x.dtype.name == "bfloat16" else x


def narrow(x: np.ndarray, dtype: DType) -> np.ndarray:
    """Store a computed array in `dtype` (f32 -> bf16 rounds to nearest even; a wider
    integer saturates, as hwsim stores integers: see eqsat/quant/fixedpoint.py)."""
    x = np.asarray(x)
    if x.dtype == dtype.np_dtype:
        return x
    if dtype.is_int and x.dtype.kind in "iu":
        info = np.iinfo(dtype.np_dtype)
        return np.asarray(np.clip(x, info.min, info.max), dtype=dtype.np_dtype)
    return x.astype(dtype.np_dtype)


def check_binding(
    name: str, value: np.ndarray, expected: TensorType, where: str = ""
) -> np.ndarray:
    """`value` as the type `expected`; floats are converted, anything else must match."""
    value = np.asarray(value)
    where = f"{where}: " if where else ""
    if tuple(value.shape) != expected.shape:
        raise BindingError(
            f"{where}'{name}' must have shape [{', '.join(map(str, expected.shape))}], "
            f"got [{', '.join(map(str, value.shape))}]"
        )
    if value.dtype != expected.dtype.np_dtype:
        if expected.dtype.is_float and np.issubdtype(value.dtype, np.floating):
            return value.astype(expected.dtype.np_dtype)
        if expected.dtype.is_int and value.dtype.kind in "iub":
            # Integers of another width (int64 token ids, bool masks): if they fit.
            info = np.iinfo(expected.dtype.np_dtype)
            if value.size == 0 or (info.min <= int(value.min()) and int(value.max()) <= info.max):
                return value.astype(expected.dtype.np_dtype)
            raise BindingError(
                f"{where}'{name}' holds values in [{int(value.min())}, {int(value.max())}], "
                f"outside the range of {expected.dtype}"
            )
        raise BindingError(f"{where}'{name}' must be {expected.dtype}, got numpy {value.dtype}")
    return value


# The largest tensor the reference interpreter materializes (EQSAT_MAX_TENSOR_BYTES
# overrides): a model that declares f32[100000, 100000] checks fine, but running it
# should say why it won't rather than die allocating.
MAX_TENSOR_BYTES = int(os.environ.get("EQSAT_MAX_TENSOR_BYTES", 4 << 30))


class TensorTooLargeError(UserError):
    pass


def available_memory() -> int:
    """Bytes this process could still allocate: MemAvailable where /proc says it, else
    half the machine's RAM (EQSAT_MAX_MODEL_BYTES overrides)."""
    explicit = os.environ.get("EQSAT_MAX_MODEL_BYTES")
    if explicit:
        return int(explicit)
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    from eqsat.budget import machine_memory

    return machine_memory() // 2 or 8 << 30


def check_sizes(graph: Graph) -> None:
    """Refuse, before any work, a graph whose live tensors exceed MAX_TENSOR_BYTES, or
    whose inputs and params together exceed the memory this machine has available."""
    live = graph.live()
    for i, node in graph:
        if live[i] and node.type.nbytes > MAX_TENSOR_BYTES:
            what = f"'{node.name}'" if node.name else f"the result of {node.op}"
            raise TensorTooLargeError(
                f"{what} is {node.type} ({node.type.nbytes / 2**30:.1f} GiB); the reference "
                f"interpreter stops at {MAX_TENSOR_BYTES / 2**30:.1f} GiB per tensor "
                "(bind smaller dimensions with --dim, or raise EQSAT_MAX_TENSOR_BYTES)"
            )
    leaves = sum(n.type.nbytes for _, n in graph.inputs + graph.params)
    free = available_memory()
    if leaves > free:
        raise TensorTooLargeError(
            f"model {graph.name}: its inputs and params take {leaves / 2**30:,.1f} GiB, more "
            f"than the {free / 2**30:,.1f} GiB this machine has available, so it cannot be "
            "run here; optimize, compile and roofline work from its shapes alone (bind "
            "smaller dimensions with --dim to run it, or set EQSAT_MAX_MODEL_BYTES)"
        )


def evaluate_nodes(graph: Graph, bindings: Mapping[str, np.ndarray]) -> list[np.ndarray | None]:
    """Values of all live nodes (None for dead ones), in the nodes' dtypes."""
    check_sizes(graph)
    live = graph.live()
    values: list[np.ndarray | None] = [None] * len(graph.nodes)
    for i, node in graph:
        if live[i]:
            values[i] = _evaluate_node(node, values, bindings, graph.constants)
    return values


def evaluate_selected(
    graph: Graph, bindings: Mapping[str, np.ndarray], targets: Iterable[int]
) -> dict[int, np.ndarray]:
    """The values of the `targets` nodes, evaluating only what they depend on (weights
    prepared at load time need the params, not the inputs)."""
    wanted = set(targets)
    need = [i in wanted for i in range(len(graph.nodes))]
    for i in range(len(graph.nodes) - 1, -1, -1):
        if need[i]:
            for j in graph.nodes[i].inputs:
                need[j] = True
    values: list[np.ndarray | None] = [None] * len(graph.nodes)
    for i, node in graph:
        if need[i]:
            values[i] = _evaluate_node(node, values, bindings, graph.constants)
    return {i: values[i] for i in wanted}  # type: ignore[misc]


def _evaluate_node(
    node: Node,
    values: list,
    bindings: Mapping[str, np.ndarray],
    constants: Mapping[str, np.ndarray],
) -> np.ndarray:
    if node.op in ("input", "param"):
        name = str(node.attr("name"))
        if name not in bindings:
            raise BindingError(f"no value given for {node.op} '{name}'")
        return check_binding(name, bindings[name], node.type)
    if node.op == "literal":
        name = str(node.attr("name"))
        if name not in constants:
            raise BindingError(f"the model holds no values for literal '{name}'")
        return check_binding(name, constants[name], node.type)
    args = [_compute_view(values[j]) for j in node.inputs]
    result = node.opdef.ref(args, node.attr_dict)
    return narrow(result, node.type.dtype)


def evaluate(graph: Graph, bindings: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Evaluate `graph`; returns each output by name."""
    values = evaluate_nodes(graph, bindings)
    return {name: values[i] for name, i in graph.outputs}


def random_value(t: TensorType, rng: np.random.Generator, scale: float = 1.0) -> np.ndarray:
    if t.dtype.is_int:
        info = np.iinfo(t.dtype.np_dtype)
        lo, hi = max(info.min, -1000), min(info.max, 1000)
        return rng.integers(lo, hi, size=t.shape, endpoint=True).astype(t.dtype.np_dtype)
    return (rng.standard_normal(t.shape) * scale).astype(t.dtype.np_dtype)


def param_scale(shape: tuple[int, ...]) -> float:
    """1/sqrt(fan_in), so that activations keep unit scale through deep models.

    fan_in is the contracted size: K for a [.., K, N] matmul weight, C*KH*KW for an
    OIHW conv weight; vectors (biases, norm scales) get 0.1 around their mean.
    """
    if len(shape) == 4:
        return float(np.prod(shape[1:])) ** -0.5
    if len(shape) >= 2:
        return float(shape[-2]) ** -0.5
    return 0.1


def _draw_inputs(graph: Graph, rng: np.random.Generator) -> dict[str, np.ndarray]:
    return {str(node.attr("name")): random_value(node.type, rng) for _, node in graph.inputs}


def random_inputs(graph: Graph, seed: int = 0) -> dict[str, np.ndarray]:
    """The inputs of `random_bindings(graph, seed)` alone (they are drawn first, so the
    values are the same), without drawing the params: cheap for large models."""
    check_sizes(graph)
    return _draw_inputs(graph, np.random.default_rng(seed))


def random_bindings(graph: Graph, seed: int = 0) -> dict[str, np.ndarray]:
    """Seeded values for every input (standard normal) and param (scaled normal)."""
    check_sizes(graph)
    rng = np.random.default_rng(seed)
    out = _draw_inputs(graph, rng)
    for _, node in graph.params:
        value = random_value(node.type, rng, param_scale(node.type.shape))
        out[str(node.attr("name"))] = value
    return out
