"""An e-graph (or the neighbourhood of one kernel's e-class) as a graphviz drawing:
a box per e-class holding its e-nodes (op and own cycles), an edge from an e-node to
each operand class, the e-nodes the extraction chose filled. Needs the `graphviz`
Python package (the `[plot]` extra); rendering to svg/png needs the `dot` binary,
and without it the .dot source is written instead."""

from __future__ import annotations

import shutil
from collections import deque
from pathlib import Path

from eqsat.costs import UNRUNNABLE_CYCLES
from eqsat.egraph.extraction import PricedEGraph
from eqsat.errors import UserError
from eqsat.fileio import write_atomic

MAX_CLASSES = 400  # a whole e-graph larger than this is drawn around a kernel only


def neighbourhood(priced: PricedEGraph, centre: str, hops: int = 2) -> set[str]:
    """E-classes within `hops` operand or user edges of `centre`."""
    users: dict[str, set[str]] = {}
    for nodes in priced.decoded.classes.values():
        for n in nodes:
            for c in n.children:
                users.setdefault(c, set()).add(n.eclass)
    seen, queue = {centre}, deque([(centre, 0)])
    while queue:
        c, d = queue.popleft()
        if d == hops:
            continue
        near = {k for n in priced.decoded.classes.get(c, []) for k in n.children}
        for k in near | users.get(c, set()):
            if k not in seen:
                seen.add(k)
                queue.append((k, d + 1))
    return seen


def _label(cycles: float | None) -> str:
    if cycles is None:
        return ""
    return "unrunnable" if cycles >= UNRUNNABLE_CYCLES else f"{cycles:,.0f} cyc"


def egraph_dot(priced: PricedEGraph, chosen: set[str], classes: set[str] | None = None):
    """A graphviz.Digraph of `classes` (default: all); `chosen`: e-node ids to fill."""
    try:
        import graphviz
    except ImportError:
        raise UserError(
            "--dot needs the graphviz Python package: install the plot extra "
            "(pip install 'eqsat[plot]')"
        ) from None
    all_classes = priced.decoded.classes
    keep = set(all_classes) if classes is None else classes & set(all_classes)
    dot = graphviz.Digraph("egraph", graph_attr={"compound": "true", "rankdir": "BT"})
    anchor = {}
    for cid in sorted(keep):
        with dot.subgraph(name=f"cluster_{cid}") as sub:
            shape = priced.typed.class_types.get(cid)
            sub.attr(label=f"{cid}: {shape}" if shape else cid, style="rounded", fontsize="9")
            for n in all_classes[cid]:
                cost = priced.costs.get(n.id)
                fill = {"style": "filled", "fillcolor": "palegreen"} if n.id in chosen else {}
                sub.node(n.id, f"{n.op}\\n{_label(cost)}", shape="box", fontsize="9", **fill)
                anchor.setdefault(cid, n.id)
    for cid in keep:
        for n in all_classes[cid]:
            for c in n.children:
                if c in anchor:
                    dot.edge(n.id, anchor[c], lhead=f"cluster_{c}", arrowsize="0.5")
    return dot


def write_dot(dot, path: str | Path) -> str:
    """Write `dot` to `path`: rendered for .svg/.png/.pdf when the `dot` binary exists,
    else (or for .dot/.gv) its source. Returns what was written, for the message."""
    path = Path(path)
    fmt = path.suffix.lstrip(".").lower()
    if fmt in ("dot", "gv", ""):
        write_atomic(path, dot.source)
        return f"wrote the graphviz source to {path}"
    if fmt not in ("svg", "png", "pdf"):
        raise UserError(f"{path}: --dot writes .dot, .gv, .svg, .png or .pdf files")
    if shutil.which("dot") is None:
        source = path.with_suffix(".dot")
        write_atomic(source, dot.source)
        return (
            f"the graphviz `dot` program is not installed, so {path} was not drawn; wrote "
            f"its source to {source} (render it with `dot -T{fmt} {source} -o {path}`)"
        )
    write_atomic(path, dot.pipe(format=fmt))
    return f"wrote {path}"
