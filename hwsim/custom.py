"""Custom instructions declared as data in a hardware file (`[[instruction]]`).

A hardware file may add vector-unit instructions beyond the ISA's own: each has a
name, named operands, its meaning as a composition of elementwise functions of them
(`semantics = "mul(silu(a), b)"`), limits on its operands (dtypes, rank, whether they
may broadcast), a cost and the patterns it replaces (rule-language text the compiler
reads; hwsim only keeps it). The simulator executes `custom.NAME dst <- a, b, ...`
by evaluating the composition with its own tile semantics (semantics.py, vecmath.py)
and charges the declared cost.

Cost: either a formula (`cost = "issue + ceil(n / 32)"`) over the instruction's
sizes - `n` (elements written), `rows`, `cols`, each operand's name (the elements of
its tile: a broadcast row or column counts its own) - and the machine's `lanes`,
`issue` and `launch` cycles; or a roofline table (`cost = { ops_per_element = 6 }`,
optionally `sram_bytes_per_cycle`): issue + max(ceil(n * ops / lanes), ceil(bytes /
sram_bytes_per_cycle)), bytes being every operand tile and the result.

Formulas and semantics are read with Python's `ast` parser (parsing never runs
anything) and only a whitelist of node kinds is accepted; evaluation is ours.
"""

from __future__ import annotations

import ast
import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from . import semantics


def _silu(x: np.ndarray) -> np.ndarray:
    return x * semantics.unary("sigmoid", x)


def _gelu(x: np.ndarray, approximate: str = "tanh") -> np.ndarray:
    return semantics.unary("gelu" if approximate == "tanh" else "gelu_erf", x)


def _unary(op: str) -> Callable[[np.ndarray], np.ndarray]:
    return lambda x: semantics.unary(op, x)


def _binary(op: str) -> Callable[[np.ndarray, np.ndarray], np.ndarray]:
    return lambda a, b: semantics.binary(op, a, b)


# The elementwise functions (by their registry names) the vector unit can run inside
# one instruction, with the machine's own arithmetic.
_UNARY = "neg relu exp sqrt rsqrt reciprocal sigmoid tanh abs erf log sin cos floor ceil trunc"
_BINARY = {"add": "add", "sub": "sub", "mul": "mul", "div": "div", "pow": "pow"}
_BINARY |= {"maximum": "max", "minimum": "min"}
FUNCTIONS: dict[str, Callable[..., np.ndarray]] = {
    **{name: _unary(name) for name in _UNARY.split()},
    **{name: _binary(op) for name, op in _BINARY.items()},
    "gelu": _gelu,
    "silu": _silu,
}
ARITY = {name: 2 if name in _BINARY else 1 for name in FUNCTIONS}
ATTRS: dict[str, tuple[str, ...]] = {"gelu": ("approximate",)}
DTYPES = ("f32", "bf16")  # operand dtypes an instruction may take (values are f32 on chip)
KEYS = ("name", "operands", "semantics", "dtypes", "max_rank", "broadcast", "cost", "replaces")
FORMULA_FUNCS: dict[str, Callable[..., float]] = {
    "ceil": math.ceil,
    "floor": math.floor,
    "min": min,
    "max": max,
    "log2": math.log2,
    "sqrt": math.sqrt,
    "abs": abs,
}
MACHINE_VARS = ("lanes", "issue", "launch")
_NAME = re.compile(r"[a-z][a-z0-9_]*")


class DeclarationError(Exception):
    """A bad `[[instruction]]`: `key` names the offending key and `col` the 1-based
    column inside its string value (None: the key itself)."""

    def __init__(self, msg: str, key: str, col: int | None = None) -> None:
        super().__init__(msg)
        self.key, self.col = key, col


# ------------------------------------------------------------------ semantics


@dataclass(frozen=True)
class Apply:
    """One function application in an instruction's semantics."""

    op: str
    args: tuple[Apply | str, ...]  # a str is an operand name
    attrs: tuple[tuple[str, Any], ...] = ()
    col: int = 1  # where it starts in the semantics text


def parse_semantics(text: str) -> Apply:
    """'mul(silu(a), b)' -> Apply tree; DeclarationError (key 'semantics') if malformed."""
    tree = _parse_expr(text, "semantics")
    out = _apply(tree)
    if isinstance(out, str):
        raise DeclarationError(
            "semantics must apply a function, not be a bare operand", "semantics", 1
        )
    return out


def _parse_expr(text: str, key: str) -> ast.expr:
    if not isinstance(text, str) or not text.strip():
        raise DeclarationError(f"'{key}' must be a non-empty expression string", key)
    try:
        return ast.parse(text.strip(), mode="eval").body
    except SyntaxError as e:
        col = (e.offset or 1) + len(text) - len(text.lstrip())
        raise DeclarationError(f"syntax error in {key} {text!r}: {e.msg}", key, col) from None


def _col(node: ast.AST) -> int:
    return getattr(node, "col_offset", 0) + 1


def _apply(node: ast.expr) -> Apply | str:
    if isinstance(node, ast.Name):
        if not _NAME.fullmatch(node.id):
            raise DeclarationError(
                f"operand '{node.id}' must be a lowercase name", "semantics", _col(node)
            )
        return node.id
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
        args = tuple(_apply(a) for a in node.args)
        attrs = []
        for kw in node.keywords:
            if kw.arg is None:
                raise DeclarationError("'**' is not allowed in semantics", "semantics", _col(kw))
            attrs.append((kw.arg, _attr_value(kw.value)))
        return Apply(node.func.id, args, tuple(attrs), _col(node))
    raise DeclarationError(
        "semantics is calls of functions on operand names, e.g. mul(silu(a), b); "
        f"'{ast.unparse(node)}' is not one (constants are not supported)",
        "semantics",
        _col(node),
    )


def _attr_value(node: ast.expr) -> Any:
    if isinstance(node, ast.Name):
        return {"true": True, "false": False}.get(node.id, node.id)
    if isinstance(node, ast.Constant) and isinstance(node.value, int | float | str):
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        inner = _attr_value(node.operand)
        if isinstance(inner, int | float) and not isinstance(inner, bool):
            return -inner
    if isinstance(node, ast.List):
        return tuple(_attr_value(e) for e in node.elts)
    raise DeclarationError(
        f"attribute value '{ast.unparse(node)}' must be a number, a name or a list",
        "semantics",
        _col(node),
    )


def format_semantics(e: Apply | str) -> str:
    if isinstance(e, str):
        return e
    parts = [format_semantics(a) for a in e.args]
    for k, v in e.attrs:
        parts.append(f"{k}={str(v).lower() if isinstance(v, bool) else v}")
    return f"{e.op}({', '.join(parts)})"


def operand_names(e: Apply | str) -> list[str]:
    """Operand names in order of first use."""
    if isinstance(e, str):
        return [e]
    out: list[str] = []
    for a in e.args:
        out += [n for n in operand_names(a) if n not in out]
    return out


def applications(e: Apply | str) -> list[Apply]:
    if isinstance(e, str):
        return []
    return [x for a in e.args for x in applications(a)] + [e]


def evaluate(e: Apply | str, env: Mapping[str, np.ndarray]) -> np.ndarray:
    """The composition on tiles (f32 values; numpy broadcasting of rows and columns)."""
    if isinstance(e, str):
        return env[e]
    args = [evaluate(a, env) for a in e.args]
    with np.errstate(all="ignore"):
        return FUNCTIONS[e.op](*args, **dict(e.attrs))


def check_functions(e: Apply) -> None:
    """Every function is one the vector unit runs, with its arity and attributes.
    Not checked when a file is loaded: a compiler checks its own op names first
    (eqsat/custom_instr), and the simulator checks this before running a program."""
    for a in applications(e):
        if a.op not in FUNCTIONS:
            known = ", ".join(sorted(FUNCTIONS))
            raise DeclarationError(
                f"'{a.op}' is not an elementwise function the vector unit can run inside "
                f"an instruction (it runs: {known})",
                "semantics",
                a.col,
            )
        if len(a.args) != ARITY[a.op]:
            raise DeclarationError(
                f"'{a.op}' takes {ARITY[a.op]} operand(s), got {len(a.args)}", "semantics", a.col
            )
        for k, _ in a.attrs:
            if k not in ATTRS.get(a.op, ()):
                raise DeclarationError(f"'{a.op}' has no attribute '{k}'", "semantics", a.col)


# ------------------------------------------------------------------ cost formulas

_BINOPS: dict[type, Callable[[float, float], float]] = {
    ast.Add: lambda a, b: a + b,
    ast.Sub: lambda a, b: a - b,
    ast.Mult: lambda a, b: a * b,
    ast.Div: lambda a, b: a / b,
    ast.FloorDiv: lambda a, b: a // b,
    ast.Mod: lambda a, b: a % b,
    ast.Pow: lambda a, b: a**b,
}


@dataclass(frozen=True)
class Formula:
    """A cycle formula, checked when declared, evaluated per instruction."""

    text: str
    tree: Any = field(default=None, compare=False)  # the checked ast: text decides equality

    def __call__(self, env: Mapping[str, float]) -> float:
        return _eval_formula(self.tree, env)


def parse_formula(text: str, names: Sequence[str]) -> Formula:
    """Check the formula's syntax, node kinds and names (DeclarationError, key 'cost')."""
    tree = _parse_expr(text, "cost")
    offset = len(text) - len(text.lstrip())
    called = {id(n.func) for n in ast.walk(tree) if isinstance(n, ast.Call)}
    for node in ast.walk(tree):
        col = _col(node) + offset
        if isinstance(node, ast.Name) and id(node) not in called and node.id not in names:
            raise DeclarationError(
                f"unknown name '{node.id}' in cost formula; use {', '.join(names)}", "cost", col
            )
        if isinstance(node, ast.Call):
            func = node.func.id if isinstance(node.func, ast.Name) else ""
            if func not in FORMULA_FUNCS or node.keywords:
                raise DeclarationError(
                    f"unknown function '{ast.unparse(node.func)}' in cost formula; use "
                    f"{', '.join(FORMULA_FUNCS)}",
                    "cost",
                    col,
                )
        elif not isinstance(
            node,
            ast.Expression
            | ast.BinOp
            | ast.UnaryOp
            | ast.Name
            | ast.Load
            | ast.operator
            | ast.unaryop
            | ast.Constant,
        ) or (isinstance(node, ast.operator) and type(node) not in _BINOPS):
            raise DeclarationError(
                f"'{ast.unparse(node) if isinstance(node, ast.expr) else type(node).__name__}' "
                "is not allowed in a cost formula (numbers, names, + - * / // % **, "
                "ceil floor min max log2 sqrt abs)",
                "cost",
                col,
            )
        if isinstance(node, ast.Constant) and (
            isinstance(node.value, bool) or not isinstance(node.value, int | float)
        ):
            raise DeclarationError("cost formulas take numbers only", "cost", col)
        if isinstance(node, ast.UnaryOp) and not isinstance(node.op, ast.USub | ast.UAdd):
            raise DeclarationError("only unary + and - are allowed in cost formulas", "cost", col)
    return Formula(text, tree)


def _eval_formula(node: ast.expr, env: Mapping[str, float]) -> float:
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Name):
        return env[node.id]
    if isinstance(node, ast.UnaryOp):
        v = _eval_formula(node.operand, env)
        return -v if isinstance(node.op, ast.USub) else v
    if isinstance(node, ast.BinOp):
        a, b = _eval_formula(node.left, env), _eval_formula(node.right, env)
        if isinstance(node.op, ast.Pow) and abs(b) > 64:
            raise ValueError("exponent above 64 in a cost formula")
        return _BINOPS[type(node.op)](a, b)
    assert isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
    return FORMULA_FUNCS[node.func.id](*(_eval_formula(a, env) for a in node.args))


@dataclass(frozen=True)
class Roofline:
    """Lane work per element and, optionally, the SRAM port's bytes per cycle."""

    ops_per_element: float
    sram_bytes_per_cycle: float | None = None


# ------------------------------------------------------------------ the declaration


@dataclass(frozen=True)
class Instruction:
    """One declared instruction. `where` maps each key to its (line, col) in `path`."""

    name: str
    operands: tuple[str, ...]
    semantics: Apply
    dtypes: tuple[str, ...]
    max_rank: int | None
    broadcast: bool
    cost: Formula | Roofline
    replaces: tuple[str, ...]
    path: str = ""
    where: tuple[tuple[str, tuple[int, int]], ...] = ()

    @property
    def semantics_text(self) -> str:
        return format_semantics(self.semantics)

    def location(self, key: str, col: int | None = None) -> str:
        """FILE:LINE:COL of `key` (col: inside its string value) for error messages."""
        pos = dict(self.where).get(key) or dict(self.where).get("name")
        if pos is None:
            return self.path
        line, kcol = pos
        return f"{self.path}:{line}:{kcol if col is None else col}"

    def cycles(
        self, lanes: int, issue: int, launch: int, rows: int, cols: int, sizes: Sequence[int]
    ) -> int:
        """Cycles of one instruction writing rows x cols, its operand tiles `sizes`
        elements each (at least one cycle)."""
        n = rows * cols
        if isinstance(self.cost, Roofline):
            lane = math.ceil(n * self.cost.ops_per_element / lanes)
            port = 0
            if self.cost.sram_bytes_per_cycle:
                port = math.ceil(4 * (n + sum(sizes)) / self.cost.sram_bytes_per_cycle)
            return max(1, issue + max(lane, port))
        env = {"n": n, "rows": rows, "cols": cols, "lanes": lanes, "issue": issue, "launch": launch}
        env.update(zip(self.operands, sizes, strict=True))
        try:
            value = self.cost(env)
        except (ArithmeticError, ValueError) as e:
            raise ValueError(
                f"{self.location('cost')}: error: instruction '{self.name}': cost formula "
                f"{self.cost.text!r} fails for n={n}, rows={rows}, cols={cols}: {e}"
            ) from None
        return max(1, math.ceil(value))

    def lane_ops(self) -> float:
        """Vector-unit work per element (the roofline's), for reports."""
        if isinstance(self.cost, Roofline):
            return self.cost.ops_per_element
        return float(len(applications(self.semantics)))

    def run(self, args: Sequence[np.ndarray]) -> np.ndarray:
        return evaluate(self.semantics, dict(zip(self.operands, args, strict=True)))


def parse_instruction(data: Any) -> Instruction:
    """Check one `[[instruction]]` table (raises DeclarationError naming the key)."""
    if not isinstance(data, dict):
        raise DeclarationError("each [[instruction]] must be a table", "instruction")
    for key in data:
        if key not in KEYS:
            raise DeclarationError(
                f"unknown key '{key}' in [[instruction]]; use one of: {', '.join(KEYS)}", key
            )
    for key in ("name", "semantics", "cost"):
        if key not in data:
            raise DeclarationError(f"[[instruction]] needs '{key}'", "name")
    name = data["name"]
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise DeclarationError(
            f"instruction name {name!r} must be lowercase letters, digits and '_'", "name"
        )
    sem = parse_semantics(data["semantics"])  # its functions: check_functions
    used = operand_names(sem)
    operands = data.get("operands", used)
    if not isinstance(operands, list) or not all(isinstance(o, str) for o in operands):
        raise DeclarationError("'operands' must be a list of names", "operands")
    if len(set(operands)) != len(operands) or set(operands) != set(used):
        raise DeclarationError(
            f"operands [{', '.join(operands)}] do not match the names the semantics uses "
            f"({', '.join(used)}): list each operand once, as the semantics names it",
            "operands" if "operands" in data else "semantics",
        )
    dtypes = data.get("dtypes", ["f32"])
    if not isinstance(dtypes, list) or not dtypes or any(d not in DTYPES for d in dtypes):
        raise DeclarationError(
            f"'dtypes' must be a non-empty list of {', '.join(DTYPES)}, got {dtypes!r}", "dtypes"
        )
    max_rank = data.get("max_rank")
    if max_rank is not None and (
        not isinstance(max_rank, int) or isinstance(max_rank, bool) or max_rank < 1
    ):
        raise DeclarationError("'max_rank' must be a positive integer", "max_rank")
    broadcast = data.get("broadcast", True)
    if not isinstance(broadcast, bool):
        raise DeclarationError("'broadcast' must be true or false", "broadcast")
    cost = _parse_cost(data["cost"], operands)
    replaces = data.get("replaces", [format_semantics(sem)])
    if isinstance(replaces, str):
        replaces = [replaces]
    if (
        not isinstance(replaces, list)
        or not replaces
        or not all(isinstance(r, str) for r in replaces)
    ):
        raise DeclarationError("'replaces' must be a pattern string or a list of them", "replaces")
    return Instruction(
        name, tuple(operands), sem, tuple(dtypes), max_rank, broadcast, cost, tuple(replaces)
    )


def _parse_cost(value: Any, operands: Sequence[str]) -> Formula | Roofline:
    if isinstance(value, str):
        clash = set(operands) & {"n", "rows", "cols", *MACHINE_VARS}
        if clash:
            raise DeclarationError(
                f"operand name '{sorted(clash)[0]}' is a cost variable; rename the operand",
                "operands",
            )
        return parse_formula(value, ["n", "rows", "cols", *operands, *MACHINE_VARS])
    if isinstance(value, dict):
        ops = value.get("ops_per_element")
        port = value.get("sram_bytes_per_cycle")
        extra = set(value) - {"ops_per_element", "sram_bytes_per_cycle"}
        ok = isinstance(ops, int | float) and not isinstance(ops, bool) and ops > 0
        if (
            not ok
            or extra
            or (port is not None and not (isinstance(port, int | float) and port > 0))
        ):
            raise DeclarationError(
                "a roofline cost is { ops_per_element = N (> 0), sram_bytes_per_cycle = B "
                "(optional, > 0) }",
                "cost",
            )
        return Roofline(float(ops), None if port is None else float(port))
    raise DeclarationError(
        "'cost' must be a formula string or a table { ops_per_element = N }", "cost"
    )
