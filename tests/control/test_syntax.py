"""The model format's `if` and `loop` regions: parse/print round trip, and the typed,
located errors of the checker."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from eqsat.control.check import check_control_model
from eqsat.control.program import IfRegion, LoopRegion, Stage
from frontend import ast, check_model, parse_model, print_model
from frontend.checker import RegionError
from frontend.errors import (
    DuplicateNameError,
    ModelError,
    ModelSyntaxError,
    TypeMismatchError,
    UnboundNameError,
)
from tests.control.helpers import DECODE_LOOP, EARLY_EXIT

HEAD = """model t {
  input x: f32[2, 4]
  input n: i32[]
  const one: i8[] = 1
  c = greater(reduce_max(x), reduce_mean(x))
"""


def model(body: str) -> str:
    return HEAD + body + "}\n"


@pytest.mark.parametrize("path", [EARLY_EXIT, DECODE_LOOP], ids=lambda p: p.stem)
def test_examples_round_trip(path) -> None:
    m = parse_model(path.read_text(), str(path))
    text = print_model(m)
    assert parse_model(text) == m
    assert print_model(parse_model(text)) == text


names = st.sampled_from(["a", "b", "h", "k", "acc"])
unary = st.sampled_from(["relu", "neg", "tanh", "exp"])


@st.composite
def region_models(draw) -> str:
    """Models with an if and a loop whose bodies are chains of unary ops."""
    depth_then = draw(st.integers(0, 3))
    depth_else = draw(st.integers(0, 3))
    depth_loop = draw(st.integers(0, 3))
    index = draw(st.booleans())

    def chain(prefix: str, start: str, depth: int) -> tuple[list[str], str]:
        lines, cur = [], start
        for k in range(depth):
            name = f"{prefix}{k}"
            lines.append(f"    {name} = {draw(unary)}({cur})")
            cur = name
        return lines, cur

    then_lines, then_out = chain("t", "x", depth_then)
    else_lines, else_out = chain("e", "x", depth_else)
    loop_lines, loop_out = chain("l", "h", depth_loop)
    header = "n, c, carried h = y" + (", index i" if index else "")
    return model(
        "  y = if (c) {\n"
        + "".join(line + "\n" for line in then_lines)
        + f"    yield {then_out}\n  }} else {{\n"
        + "".join(line + "\n" for line in else_lines)
        + f"    yield {else_out}\n  }}\n"
        + f"  z = loop ({header}) {{\n"
        + "".join(line + "\n" for line in loop_lines)
        + f"    yield c, {loop_out}\n  }}\n"
        + "  output z\n"
    )


@given(region_models())
def test_round_trip_and_structure(text: str) -> None:
    m = parse_model(text)
    assert parse_model(print_model(m)) == m
    program = check_control_model(m)
    kinds = [type(s) for s in program.steps]
    assert kinds == [Stage, IfRegion, LoopRegion]
    assert program.outputs == ["z"]


def test_static_checker_refuses_regions_at_the_region() -> None:
    text = model("  y = if (c) {\n    yield x\n  } else {\n    yield x\n  }\n  output y\n")
    with pytest.raises(RegionError) as err:
        check_model(parse_model(text, "m.model"))
    assert str(err.value).startswith("m.model:6:3: error:")


CASES = [
    (  # branches yield different types
        "  y = if (c) {\n    yield x\n  } else {\n    s = reduce_sum(x)\n    yield s\n  }\n"
        "  output y\n",
        TypeMismatchError,
        (10, 11),
        "the then branch yields f32[2, 4], the else branch f32[]",
    ),
    (  # branches yield different counts
        "  y = if (c) {\n    yield x\n  } else {\n    yield x, x\n  }\n  output y\n",
        RegionError,
        (9, 11),
        "the branches yield 1 and 2 values",
    ),
    (  # a condition of several elements
        "  y = if (x) {\n    yield x\n  } else {\n    yield x\n  }\n  output y\n",
        TypeMismatchError,
        (6, 11),
        "the condition 'x' must hold one element",
    ),
    (  # a float trip count
        "  m = reduce_max(x)\n  h = loop (m, c, carried h = x) {\n    yield c, h\n  }\n"
        "  output h\n",
        TypeMismatchError,
        (7, 13),
        "the trip count 'm' must be an integer",
    ),
    (  # carried type changes
        "  h = loop (n, c, carried h = x) {\n    s = reduce_sum(h)\n    yield c, s\n  }\n"
        "  output h\n",
        TypeMismatchError,
        (8, 14),
        "carried 'h' is f32[2, 4] but the body yields f32[]",
    ),
    (  # a loop body must yield the condition and every carried value
        "  h = loop (n, c, carried h = x) {\n    yield h\n  }\n  output h\n",
        RegionError,
        (7, 11),
        "must yield the next condition and 1 carried value(s)",
    ),
    (  # nested regions
        "  h = loop (n, c, carried h = x) {\n    g = if (c) {\n      yield h\n    } else {\n"
        "      yield h\n    }\n    yield c, g\n  }\n  output h\n",
        RegionError,
        (7, 5),
        "regions do not nest",
    ),
    (  # a body's names are its own
        "  y = if (c) {\n    a = relu(x)\n    yield a\n  } else {\n    yield x\n  }\n  output a\n",
        UnboundNameError,
        (12, 10),
        "'a' is not defined",
    ),
    (  # a body may not redefine an outer name
        "  y = if (c) {\n    x = relu(x)\n    yield x\n  } else {\n    yield x\n  }\n  output y\n",
        DuplicateNameError,
        (7, 5),
        "'x' is already defined",
    ),
    (  # as many names on the left as values yielded
        "  y, z = if (c) {\n    yield x\n  } else {\n    yield x\n  }\n  output y\n",
        RegionError,
        (6, 3),
        "2 name(s) on the left but the branches yield 1",
    ),
]


@pytest.mark.parametrize("body, cls, where, message", CASES)
def test_errors_are_typed_and_located(body, cls, where, message) -> None:
    with pytest.raises(cls) as err:
        check_control_model(parse_model(model(body), "m.model"))
    line, col = where
    text = str(err.value)
    assert text.startswith(f"m.model:{line}:{col}: error:"), text
    assert message in text
    assert isinstance(err.value, ModelError)


def test_yield_must_end_a_body() -> None:
    text = model("  y = if (c) {\n    yield x\n    a = relu(x)\n  } else {\n    yield x\n  }\n")
    with pytest.raises(ModelSyntaxError) as err:
        parse_model(text, "m.model")
    assert str(err.value).startswith("m.model:8:5:")


def test_stages_export_only_what_later_steps_read() -> None:
    text = model(
        "  u = relu(x)\n  v = neg(x)\n  y = if (c) {\n    yield u\n  } else {\n    yield x\n"
        "  }\n  w = add(y, v)\n  output w\n"
    )
    program = check_control_model(parse_model(text))
    first = program.steps[0]
    assert isinstance(first, Stage)
    assert sorted(n for n, _ in first.graph.outputs) == ["c", "u", "v"]
    assert program.steps[1].reads() == {"c", "u", "x"}
    assert isinstance(program.steps[-1], Stage)
    assert [n for n, _ in program.steps[-1].graph.outputs] == ["w"]


def test_region_items_are_syntax_nodes() -> None:
    m = parse_model(EARLY_EXIT.read_text())
    regions = [i for i in m.items if isinstance(i, ast.RegionAssign)]
    assert len(regions) == 1 and isinstance(regions[0].region, ast.IfRegion)
    assert regions[0].region.cond == "confident"
