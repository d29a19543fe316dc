"""ONNX conformance: the ONNX backend node tests, run through eqsat.

The cases are regenerated from the installed onnx package
(`onnx.backend.test.case.node.collect_testcases()`, nothing is downloaded): a one-node
model (or a function expanded into primitive ops), inputs and expected outputs. For
each case eqsat imports the model, runs it with the reference interpreter and
compares with the expected outputs at the case's own tolerances (rtol/atol, as
ONNX's backend runner does), after converting results to the ONNX output types.

Node tests feed every operand as a graph input, also the ones real exporters write
as constants (shapes, axes, pads, slice bounds, scalar exponents); where the importer
says an input must be known when the model is compiled, the case is imported again
with that input's test value as a constant.
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from eqsat.errors import UserError
from eqsat.fold import fold_constants
from eqsat.interpreter import evaluate
from frontend import check_model
from frontend.onnx import UnsupportedOpError, import_onnx, supported_ops


@dataclass(frozen=True)
class CaseResult:
    name: str
    op: str  # the op under test (the node of a one-node case, else the expanded op)
    passed: bool
    message: str = ""
    constants: tuple[str, ...] = ()  # inputs bound as constants


@functools.cache
def node_cases() -> tuple:
    """Every node test case of the installed onnx package (about 1,900)."""
    import onnx.backend.test.case.node as node

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return tuple(node.collect_testcases())


def claimed_ops() -> set[str]:
    return set(supported_ops().get("ai.onnx", []))


def op_under_test(case) -> str:
    nodes = case.model.graph.node
    if len(nodes) == 1:
        return nodes[0].op_type
    name = case.name.removeprefix("test_").removesuffix("_expanded")
    return f"{name} (expanded)"


def claimed_cases() -> Iterator:
    """Cases whose every node is an op the importer claims (in the default domain)."""
    ops = claimed_ops()
    for case in node_cases():
        nodes = case.model.graph.node
        if nodes and all(n.op_type in ops and n.domain in ("", "ai.onnx") for n in nodes):
            yield case


def run_case(case) -> CaseResult:
    op = op_under_test(case)
    constants: dict[str, np.ndarray] = {}
    input_names = [vi.name for vi in case.model.graph.input]
    for raw_inputs, raw_expected in case.data_sets:
        inputs, expected = _arrays(raw_inputs), _arrays(raw_expected)
        feeds = dict(zip(input_names, inputs, strict=False))
        for _ in range(len(input_names) + 1):
            try:
                imported = import_onnx(
                    case.model, symbolic=False, constant_inputs=constants, file=case.name
                )
                break
            except UnsupportedOpError as err:
                if err.needs_known not in feeds or err.needs_known in constants:
                    return CaseResult(case.name, op, False, err.message, tuple(constants))
                constants[err.needs_known] = feeds[err.needs_known]
            except UserError as err:
                return CaseResult(case.name, op, False, str(err), tuple(constants))
        try:
            if imported.model is None:  # every output empty: known at import
                got = imported.results({})
            else:
                graph = fold_constants(
                    check_model(imported.model, None, imported.arrays, case.name)
                )
                params = {k: v for k, v in imported.arrays.items() if k in graph.bound_names()}
                runtime = {k: v for k, v in feeds.items() if k not in constants}
                got = imported.results(evaluate(graph, {**imported.feeds(runtime), **params}))
        except UserError as err:
            return CaseResult(case.name, op, False, str(err), tuple(constants))
        names = [vi.name for vi in case.model.graph.output]
        for name, want in zip(names, expected, strict=False):
            message = _compare(name, got.get(name), np.asarray(want), case.rtol, case.atol)
            if message:
                return CaseResult(case.name, op, False, message, tuple(constants))
    return CaseResult(case.name, op, True, "", tuple(constants))


def _arrays(values) -> list:
    """Test data as numpy arrays (some cases store TensorProtos)."""
    from onnx import TensorProto, numpy_helper

    return [numpy_helper.to_array(v) if isinstance(v, TensorProto) else v for v in values]


def _compare(name: str, got, want: np.ndarray, rtol: float, atol: float) -> str:
    if got is None:
        return f"output '{name}' is missing"
    got = np.asarray(got)
    if got.shape != want.shape:
        return f"output '{name}': shape {got.shape}, expected {want.shape}"
    if want.dtype.kind in "fc" or want.dtype.name in ("bfloat16", "float16"):
        g, w = got.astype(np.float64), want.astype(np.float64)
        ok = np.isclose(g, w, rtol=rtol, atol=atol, equal_nan=True)
    else:
        ok = got == want
    if not np.all(ok):
        bad = int(np.size(ok) - np.count_nonzero(ok))
        return f"output '{name}': {bad} of {ok.size} elements differ (rtol {rtol:g}, atol {atol:g})"
    return ""


__all__ = ["CaseResult", "claimed_cases", "node_cases", "op_under_test", "run_case"]
