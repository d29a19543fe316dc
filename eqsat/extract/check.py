"""An independent check of an extraction against the raw egraph-serialize JSON.

It shares no code with the extractors or with ``EGraph`` (it reads the parsed JSON
dict itself), so a fault in the parser, the pruning or the ILP decoding cannot hide
in both: benchmarks and tests judge every answer with it. An answer is valid when
every root class is chosen, each chosen node exists and belongs to the class it is
chosen for, every child class of a chosen node reachable from the roots is chosen,
and the chosen nodes reachable from the roots form no cycle.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

#: ``CheckFailure.kind`` values, one per way an answer can be broken.
MISSING_ROOT = "missing_root"
UNKNOWN_NODE = "unknown_node"
WRONG_CLASS = "wrong_class"
MISSING_CHILD = "missing_child"
CYCLE = "cycle"


class CheckFailure(AssertionError):
    """An extraction is not a valid term DAG; ``kind`` says which rule it breaks."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(f"{kind}: {message}")
        self.kind = kind


def check_extraction(
    data: Mapping[str, Any], choice: Mapping[str, str], roots: Iterable[str]
) -> float:
    """Validate ``choice`` ({class id: node id}) from ``roots`` on the egraph-serialize
    dict ``data``; return its DAG cost (each reachable class paid once). Raises
    CheckFailure naming the first violation found."""
    nodes = data["nodes"]
    _ENTER, _LEAVE = 0, 1
    state: dict[str, int] = {}  # class -> 1 on the current path, 2 finished
    total = 0.0
    for root in roots:
        root = str(root)
        if root not in choice:
            raise CheckFailure(MISSING_ROOT, f"root class {root!r} has no chosen node")
        stack: list[tuple[int, str]] = [(_ENTER, root)]
        while stack:
            step, cls = stack.pop()
            if step == _LEAVE:
                state[cls] = 2
                continue
            seen = state.get(cls)
            if seen == 2:
                continue
            if seen == 1:
                raise CheckFailure(CYCLE, f"class {cls!r} is reached again from its own term")
            node_id = choice.get(cls)
            if node_id is None:
                raise CheckFailure(MISSING_CHILD, f"class {cls!r} is used but has no chosen node")
            node = nodes.get(node_id)
            if node is None:
                raise CheckFailure(UNKNOWN_NODE, f"class {cls!r}: node {node_id!r} is not a node")
            if str(node["eclass"]) != cls:
                raise CheckFailure(
                    WRONG_CLASS,
                    f"node {node_id!r} is chosen for class {cls!r} but is in {node['eclass']!r}",
                )
            state[cls] = 1
            total += float(node["cost"])
            stack.append((_LEAVE, cls))
            for child in node["children"]:
                child_class = str(nodes[child]["eclass"])
                if state.get(child_class) == 1:
                    raise CheckFailure(
                        CYCLE, f"class {child_class!r} is its own descendant (via {cls!r})"
                    )
                if state.get(child_class) != 2:
                    stack.append((_ENTER, child_class))
    return total
