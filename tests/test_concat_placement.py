"""Concatenation without copies (eqsat/concat_placement.py): producers write straight
into their block of a concat's buffer, a concat whose parts already lie in a larger
one's buffer is a block of it (DenseNet's growing feature maps share one buffer per
block), the backend emits a copy only for what no producer wrote, and the cost model
prices exactly those copies."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from backend import compile_graph
from eqsat.concat_placement import concat_regions
from eqsat.interpreter import evaluate, random_bindings
from eqsat.pipeline import optimize
from eqsat.program_cost import program_cost
from eqsat.weights import prepared_nodes
from frontend import check_model, parse_model
from hwsim import load_hardware, simulate
from tests.optimize_helpers import default_rules
from tests.strategies import scaled
from tests.test_concat_chains import dense_block


def _concat_kernels(graph, compiled) -> set[int]:
    return {
        k.node
        for k in compiled.kernels
        if k.role == "main" and k.node >= 0 and graph.nodes[k.node].op == "concat"
    }


def _simulate(graph, hw_name: str, seed: int = 0):
    hw = load_hardware(hw_name)
    compiled = compile_graph(graph, hw)
    bindings = random_bindings(graph, seed)
    result = simulate(compiled.program, hw, compiled.feeds(bindings))
    return compiled, result, compiled.results(result.outputs), evaluate(graph, bindings)


def _check_agreement(graph, compiled) -> None:
    """The backend copies exactly what the placement says (no producer ignored its
    block: the cost model prices the program the backend emits)."""
    placement, live, prepared = concat_regions(graph), graph.live(), prepared_nodes(graph)
    want = {
        i
        for i, n in graph
        if live[i] and i not in prepared and n.op == "concat" and placement.copied_parts(graph, i)
    }
    assert _concat_kernels(graph, compiled) == want


@pytest.mark.parametrize("hw_name", ["edge", "datacenter"])
def test_a_dense_block_keeps_its_feature_maps_in_one_buffer(hw_name: str) -> None:
    hw = load_hardware(hw_name)
    source = check_model(parse_model(dense_block(layers=5)))
    graph = optimize(source, default_rules(), hw).graph
    compiled, result, got, want = _simulate(graph, hw_name)
    for name in want:
        np.testing.assert_allclose(got[name], want[name], rtol=1e-5, atol=1e-5)
    placement = concat_regions(graph)
    concats = [i for i, n in graph if n.op == "concat"]
    assert len({placement.regions[i].root for i in concats}) == 1  # one buffer
    # only the first concat copies the block input (the graph's input, which the host
    # writes into a buffer of its own); every later one is a block of the last
    assert len(_concat_kernels(graph, compiled)) == 1
    _check_agreement(graph, compiled)
    estimate = program_cost(graph, hw).cycles
    assert abs(estimate - result.report.cycles) <= 0.05 * result.report.cycles


def _inception(split: bool) -> str:
    """Four branches of one input concatenated (GoogLeNet's inception module)."""
    n = 2 if split else 1
    return f"""model inception {{
  input x: f32[{n}, 8, 6, 6]
  param w1: f32[4, 8, 1, 1]
  param w2: f32[6, 8, 3, 3]
  param w3: f32[2, 8, 1, 1]
  a = relu(conv2d(x, w1))
  b = relu(conv2d(x, w2, padding=[1, 1]))
  c = relu(conv2d(max_pool2d(x, kernel=[3, 3], stride=[1, 1], padding=[1, 1, 1, 1]), w3))
  d = neg(x)
  y = concat(a, b, c, d, axis=1)
  output y
}}"""


@pytest.mark.parametrize("hw_name", ["edge", "datacenter"])
def test_branches_write_into_their_concat(hw_name: str) -> None:
    graph = check_model(parse_model(_inception(split=False)))
    compiled, _, got, want = _simulate(graph, hw_name)
    np.testing.assert_allclose(got["y"], want["y"], rtol=1e-5, atol=1e-5)
    assert not _concat_kernels(graph, compiled)
    _check_agreement(graph, compiled)


def test_a_concat_of_two_images_still_copies() -> None:
    """With a batch of two, a part is not one contiguous block of the result."""
    graph = check_model(parse_model(_inception(split=True)))
    compiled, _, got, want = _simulate(graph, "edge")
    np.testing.assert_allclose(got["y"], want["y"], rtol=1e-5, atol=1e-5)
    assert concat_regions(graph).regions == {}
    assert len(_concat_kernels(graph, compiled)) == 1


def test_the_estimate_prices_only_the_copies_left() -> None:
    graph = check_model(parse_model(_inception(split=False)))
    hw = load_hardware("edge")
    before = program_cost(graph, hw)
    unplaced = check_model(parse_model(_inception(split=True).replace("f32[2, 8", "f32[1, 8")))
    assert program_cost(unplaced, hw).kernels == before.kernels  # same text, same placement
    copy = program_cost(check_model(parse_model(_with_output_part())), hw)
    assert copy.kernels == before.kernels + 1  # a part that is an output is copied


def _with_output_part() -> str:
    text = _inception(split=False)
    return text.replace("  output y", "  output y\n  output a")


# ---------------------------------------------------------------- any arrangement

_OPS = ("relu", "neg", "abs")


@st.composite
def concat_programs(draw) -> str:
    """Values of [1, C, 4, 4]: the input, a param, elementwise results, convolutions,
    max pools (stored channels-last or not, as the backend decides), and concats of
    any of them on the channel axis (nested, shared between concats, a part twice,
    parts that are outputs too)."""
    values: list[tuple[str, int]] = [("x", 2), ("p", 3)]
    lines = ["model concats {", "  input x: f32[1, 2, 4, 4]", "  param p: f32[1, 3, 4, 4]"]
    outputs: list[str] = []
    for k in range(draw(st.integers(2, 7))):
        name = f"v{k}"
        kind = draw(st.sampled_from(("ewise", "conv", "pool", "concat", "concat")))
        if kind == "concat":
            parts = draw(st.lists(st.sampled_from(values), min_size=1, max_size=4))
            c = sum(pc for _, pc in parts)
            lines.append(f"  {name} = concat({', '.join(p for p, _ in parts)}, axis=1)")
        else:
            src, c = draw(st.sampled_from(values))
            if kind == "ewise":
                lines.append(f"  {name} = {draw(st.sampled_from(_OPS))}({src})")
            elif kind == "pool":
                lines.append(
                    f"  {name} = max_pool2d({src}, kernel=[3, 3], stride=[1, 1], "
                    "padding=[1, 1, 1, 1])"
                )
            else:
                o = draw(st.integers(1, 4))
                lines.insert(3, f"  param w{k}: f32[{o}, {c}, 1, 1]")
                lines.append(f"  {name} = conv2d({src}, w{k})")
                c = o
        values.append((name, c))
        if draw(st.integers(0, 3)) == 0:
            outputs.append(name)
    outputs.append(values[-1][0])
    lines += [f"  output {o}" for o in dict.fromkeys(outputs)]
    return "\n".join([*lines, "}"])


@settings(max_examples=scaled(40), deadline=None)
@given(text=concat_programs(), seed=st.integers(0, 2**16))
def test_any_arrangement_of_concats_computes_the_model(text: str, seed: int) -> None:
    graph = check_model(parse_model(text))
    compiled, _, got, want = _simulate(graph, "edge", seed)
    for name in want:
        np.testing.assert_allclose(got[name], want[name], rtol=1e-5, atol=1e-6)
    _check_agreement(graph, compiled)
