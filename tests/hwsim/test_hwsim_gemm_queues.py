"""GEMM kernels priced by replaying their loop on the simulator's queues
(hwsim/gemm_queues.py): the scheduler is the simulator's, instruction for
instruction, and the loop it replays is the one backend/gemm.py emits, so a GEMM's
estimate is the simulated span (a small DMA-bound convolution included, which the
closed form put 25% too low), to a cycle or two of rounding."""

from __future__ import annotations

import collections

import pytest

from backend import compile_graph
from eqsat.costs import op_cost
from eqsat.interpreter import random_bindings
from eqsat.ir.graph import GraphBuilder
from eqsat.ir.types import DType, TensorType
from hwsim import Kernel, load_hardware, simulate, timing
from hwsim.gemm_queues import COMPUTE, LOAD, STORE, QueueProgram, run_queues

F32 = DType.F32
QUEUE = {"load": LOAD, "compute": COMPUTE, "store": STORE}


def _graph(op: str, shapes, attrs):
    b = GraphBuilder(op)
    args = [
        b.leaf("input" if k == 0 else "param", f"a{k}", TensorType(F32, s))
        for k, s in enumerate(shapes)
    ]
    b.output("y", b.add(op, args, attrs, "out"))
    return b.graph


CASES = [  # the convolutions of examples/cnn.model, then matmuls with and without epilogue
    ("conv2d_bias_relu", [(4, 1, 28, 28), (8, 1, 3, 3), (8, 1, 1)], {"padding": [1, 1]}),
    ("conv2d_bias_relu", [(4, 8, 28, 28), (16, 8, 3, 3), (16, 1, 1)],
     {"padding": [1, 1], "stride": [2, 2]}),
    ("conv2d_bias_relu", [(4, 16, 14, 14), (32, 16, 3, 3), (32, 1, 1)],
     {"padding": [1, 1], "stride": [2, 2]}),
    ("matmul", [(100, 70), (70, 50)], {}),
    ("matmul_bias", [(4, 32), (32, 10), (10,)], {}),
    ("matmul_bias_relu", [(96, 256), (256, 200), (200,)], {}),
]  # fmt: skip


def _simulated(graph, hw):
    compiled = compile_graph(graph, hw)
    bindings = random_bindings(graph, 0)
    report = simulate(compiled.program, hw, compiled.feeds(bindings), check_races=False).report
    return compiled, {k.name: k.cycles for k in report.kernels}


@pytest.mark.parametrize("hw_name", ["edge", "datacenter"])
@pytest.mark.parametrize(("op", "shapes", "attrs"), CASES)
def test_the_estimate_of_a_gemm_kernel_is_its_simulated_span(op, shapes, attrs, hw_name):
    hw = load_hardware(hw_name)
    graph = _graph(op, shapes, attrs)
    compiled, spans = _simulated(graph, hw)
    node = next(i for i, n in graph if n.name == "out")
    n = graph.nodes[node]
    model = op_cost(hw, op, [graph.nodes[j].type for j in n.inputs], n.type, n.attr_dict)
    sim = sum(spans[k.name] for k in compiled.kernels if k.node == node)
    assert abs(model.cycles - sim) <= 2, (model.cycles, sim)  # rounding of partial cycles


def _as_queue_program(hw, instrs) -> QueueProgram:
    """A kernel's real instructions as abstract ones; each wait on a token pairs with
    the oldest signal of it not yet consumed (the Pipeline's tokens pair up in order)."""
    prog, signals = QueueProgram(), collections.defaultdict(collections.deque)
    for ins in instrs:
        deps = tuple(signals[t].popleft() for t in ins.wait)
        i = prog.add(QUEUE[ins.queue], timing.instruction_cost(hw, ins)[1], deps)
        for t in ins.signal:
            signals[t].append(i)
    return prog


@pytest.mark.parametrize("hw_name", ["edge", "datacenter"])
def test_the_queues_schedule_instructions_as_the_simulator_does(hw_name):
    hw = load_hardware(hw_name)
    op, shapes, attrs = CASES[0]
    compiled, spans = _simulated(_graph(op, shapes, attrs), hw)
    kernels: dict[str, list] = {}
    name = None
    for ins in compiled.program.instrs:
        if isinstance(ins, Kernel):
            name = ins.name
            kernels[name] = []
        else:
            kernels[name].append(ins)  # type: ignore[index]
    assert len(kernels) == 2  # the padded image, then the GEMM
    for name, instrs in kernels.items():
        replayed = hw.launch_cycles + run_queues(hw, _as_queue_program(hw, instrs))
        assert replayed == spans[name], name
