"""Syntax tree -> model text. parse_model(print_model(m)) == m."""

from __future__ import annotations

from frontend import ast


def format_number(value: int | float) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    text = repr(float(value))
    return text if any(c in text for c in ".en") else text + ".0"


def format_value(value: ast.AttrValue) -> str:
    if isinstance(value, tuple):
        return "[" + ", ".join(str(v) for v in value) + "]"
    if isinstance(value, str):
        return value
    return format_number(value)


def format_const_value(value: ast.ConstValue) -> str:
    if isinstance(value, ast.External):
        return "external"
    if isinstance(value, tuple):
        return "[" + ", ".join(format_number(v) for v in value) + "]"
    if isinstance(value, str):
        return value
    return format_number(value)


def format_type(t: ast.TypeSpec) -> str:
    return f"{t.dtype}[{', '.join(str(d) for d in t.dims)}]"


def format_expr(e: ast.Expr) -> str:
    if isinstance(e, ast.Ref):
        return e.name
    parts = [format_expr(a) for a in e.args]
    parts += [f"{a.name}={format_value(a.value)}" for a in e.attrs]
    return f"{e.op}({', '.join(parts)})"


def format_item(item: ast.Item) -> str:
    if isinstance(item, ast.DimDecl):
        return f"dim {item.name}" + ("" if item.default is None else f" = {item.default}")
    if isinstance(item, ast.LeafDecl):
        return f"{item.kind} {item.name}: {format_type(item.type)}"
    if isinstance(item, ast.ConstDecl):
        return f"const {item.name}: {format_type(item.type)} = {format_const_value(item.value)}"
    if isinstance(item, ast.Assign):
        return f"{item.name} = {format_expr(item.expr)}"
    if isinstance(item, ast.RegionAssign):
        return "\n".join(format_region(item, "  "))
    return "output " + ", ".join(item.names)


def format_region(item: ast.RegionAssign, indent: str) -> list[str]:
    """`a, b = if (...) { ... } else { ... }` or a loop, as indented lines."""
    region = item.region
    head = ", ".join(item.names) + " = "
    if isinstance(region, ast.IfRegion):
        lines = [head + f"if ({region.cond}) {{"]
        lines += _body_lines(region.then, indent)
        lines.append("} else {")
        lines += _body_lines(region.orelse, indent)
    else:
        args = [region.max_trips, region.cond]
        args += [f"carried {c.name} = {c.init}" for c in region.carried]
        args += [f"index {region.index}"] if region.index is not None else []
        lines = [head + f"loop ({', '.join(args)}) {{"]
        lines += _body_lines(region.body, indent)
    lines.append("}")
    return lines


def _body_lines(body: ast.Body, indent: str) -> list[str]:
    lines = []
    for item in body.items:
        lines += [indent + line for line in _item_lines(item, indent)]
    lines.append(indent + "yield " + ", ".join(body.yields))
    return lines


def _item_lines(item: ast.Item, indent: str) -> list[str]:
    if isinstance(item, ast.RegionAssign):
        lines = format_region(item, indent)
        comment = " ".join(item.comment.split())
        if comment:
            lines[0] += f"  # {comment}"
        return lines
    return [_with_comment(item)]


def _with_comment(item: ast.Item) -> str:
    text = format_item(item)
    comment = getattr(item, "comment", "")
    comment = " ".join(comment.split())  # one line, whatever the importer was given
    return f"{text}  # {comment}" if comment else text


def print_model(model: ast.Model) -> str:
    lines = [f"model {model.name} {{"]
    for item in model.items:
        lines += ["  " + line for line in _item_lines(item, "  ")]
    lines.append("}")
    return "\n".join(lines) + "\n"
