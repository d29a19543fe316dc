"""A test block's model fragment -> a checked graph; its hardware; the graph with the
terms of its `equal(...)` expectations as extra outputs. Every mistake is a RuleError
at the rules file's FILE:LINE:COL."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from eqsat.errors import SourceError
from eqsat.fold import fold_constants
from eqsat.ir.graph import Graph
from eqsat.rules import ast
from eqsat.rules.errors import (
    ArityError,
    ExpectationError,
    RuleAttributeError,
    TestHardwareError,
    TestModelError,
    UnknownOpError,
)
from eqsat.rules.testblock import relocated
from hwsim.hardware import Hardware, HardwareError, load_hardware


def _error_class(err: SourceError) -> type[SourceError]:
    """The rules error a model frontend error becomes."""
    from frontend import errors as fe

    return {
        fe.UnknownOpError: UnknownOpError,
        fe.ArityError: ArityError,
        fe.AttributeError_: RuleAttributeError,
    }.get(type(err), TestModelError)


def fragment_graph(test: ast.TestDecl, file: str, text: str) -> Graph:
    """The checked, constant-folded graph of the fragment (as `eqsat optimize` loads a
    model)."""
    from frontend import check_model

    try:
        graph = check_model(test.model)
    except SourceError as err:
        raise relocated(err, _error_class(err), file, text) from None
    return fold_constants(graph)


def test_hardware(test: ast.TestDecl, file: str, text: str, default: str) -> Hardware:
    """`on hw=NAME`: a preset, or a .toml file relative to the rules file."""
    spec = test.hw or default
    if test.hw is not None and spec not in _presets():
        path = Path(spec).expanduser()
        spec = str(path if path.is_absolute() else Path(file).parent / path)
    try:
        return load_hardware(spec)
    except (HardwareError, OSError) as err:
        pos = test.hw_pos or test.pos
        message = str(err).removeprefix(f"{spec}: error: ")
        raise TestHardwareError(
            f"hardware '{test.hw or default}': {message}", file, pos.line, pos.col, text
        ) from None


def _presets() -> tuple[str, ...]:
    from hwsim.hardware import PRESETS

    return tuple(PRESETS)


@dataclass(frozen=True)
class EqualPair:
    expect: ast.ExpectEqual
    left: int  # node of the augmented graph
    right: int


def graph_with_terms(test: ast.TestDecl, file: str, text: str) -> tuple[Graph, list[EqualPair]]:
    """The fragment with each `equal(a, b)` term as an output of its own, so that both
    enter the e-graph; and where each term is."""
    from frontend import check_model, parse_model

    model_text = test.model.source or ""
    close = model_text.rstrip().rfind("}")
    lines, outputs = [], []
    equals = [e for e in test.expects if isinstance(e, ast.ExpectEqual)]
    for k, e in enumerate(equals):
        for side, term in (("l", e.left_text), ("r", e.right_text)):
            name = f"_expect{k}_{side}"
            lines.append(f"{name} = {term}")
            outputs.append(name)
    extra = "\n".join(lines) + (f"\noutput {', '.join(outputs)}\n" if outputs else "")
    try:
        model = parse_model(model_text[:close] + extra + "}\n", file)
        graph = check_model(model)
    except SourceError as err:
        bad = max(err.line - model_text[:close].count("\n") - 1, 0) // 2
        e = equals[min(bad, len(equals) - 1)] if equals else None
        if e is None or err.line <= model_text[:close].count("\n"):
            raise relocated(err, _error_class(err), file, text) from None
        raise ExpectationError(
            f"equal({e.left_text}, {e.right_text}): {err.message}",
            file,
            e.pos.line,
            e.pos.col,
            text,
        ) from None
    graph = fold_constants(graph)
    where = dict(graph.outputs)
    pairs = [
        EqualPair(e, where[f"_expect{k}_l"], where[f"_expect{k}_r"]) for k, e in enumerate(equals)
    ]
    return graph, pairs
