"""The two programs `eqsat rules why` compares: model files, or terms in the model
language whose leaves `--input NAME:TYPE` declares."""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path

from eqsat.errors import SourceError, UserError
from eqsat.ir.graph import Graph

_DECL = re.compile(r"\s*([A-Za-z_][A-Za-z0-9_.]*)\s*:\s*(\S.*)")


def parse_decl(text: str) -> tuple[str, str]:
    """`x:f32[8, 16]` -> ("x", "f32[8, 16]")."""
    m = _DECL.fullmatch(text)
    if m is None:
        raise UserError(f"--input {text!r}: write NAME:TYPE, e.g. x:f32[8, 16]")
    return m.group(1), m.group(2).strip()


def load_side(spec: str, inputs: Mapping[str, str], label: str) -> tuple[Graph, str]:
    """A model file (text or .onnx) if `spec` names one, else a term over `inputs`;
    returns the graph and how to call it in messages."""
    from eqsat.loading import load_model

    if Path(spec).is_file():
        return load_model(spec).graph, spec
    if spec.endswith((".model", ".onnx")) or ("/" in spec and "(" not in spec):
        raise UserError(f"{spec}: no such model file")
    return term_graph(spec, inputs, label), spec


def term_graph(term: str, inputs: Mapping[str, str], label: str) -> Graph:
    """A one-output model computing `term`; `label` names it in errors (<left>, ...)."""
    from eqsat.fold import fold_constants
    from frontend import check_model, parse_model

    if "\n" in term:
        raise UserError(f"{label}: a term is one line")
    lines = [f"  input {name}: {ty}" for name, ty in inputs.items()]
    head = "model term {\n" + "\n".join(lines) + "\n"
    text = head + f"  result = {term}\n  output result\n}}\n"
    try:
        graph = check_model(parse_model(text, label))
    except SourceError as err:
        line = head.count("\n") + 1
        if err.line != line:
            raise UserError(f"{label}: {err.message}") from None
        col = max(err.col - len("  result = "), 1)
        hint = ""
        if "not defined" in err.message:
            hint = "; declare each leaf of a term with --input NAME:TYPE (x:f32[8, 16])"
        raise SourceError(err.message + hint, label, 1, col, term) from None
    return fold_constants(graph)
