"""The block report in words (the optimize summary) and as JSON (--report)."""

from __future__ import annotations

from typing import Any

from eqsat.blocks.blockwise import BlockReport
from eqsat.ir.graph import Graph


def _name(graph: Graph, i: int) -> str:
    n = graph.nodes[i]
    return n.name or f"%{i} ({n.op})"


def summary_lines(report: BlockReport, graph: Graph) -> list[str]:
    plan = report.plan
    distinct = plan.distinct
    groups = ", ".join(
        f"{len(g)}x {len(g[0].nodes)} ops from {_name(graph, g[0].nodes[0])}"
        for g in distinct.values()
    )
    lines = [
        f"blocks: {len(plan.blocks)} blocks, {len(distinct)} distinct, each optimized once "
        f"({groups}) on {report.scheduler}"
    ]
    if report.cache_hits:
        lines.append(
            f"  compile cache: {report.cache_hits} of {len(distinct)} distinct blocks reused"
        )
    widths = sorted({len(c.crossing) for c in plan.cuts})
    if plan.cuts:
        lines.append(
            f"  {len(plan.cuts)} cuts, after {_name(graph, plan.cuts[0].after)}"
            + (f" ... {_name(graph, plan.cuts[-1].after)}" if len(plan.cuts) > 1 else "")
            + f"; values crossing a cut: {', '.join(map(str, widths))}"
        )
    if plan.long_range:
        groups: dict[tuple, list[int]] = {}
        for lr in plan.long_range:
            key = (lr.rules, lr.consumer_op, graph.nodes[lr.node].op)
            groups.setdefault(key, []).append(lr.node)
        for (rules, consumer, producer), nodes in list(groups.items())[:4]:
            names = ", ".join(_name(graph, i) for i in nodes[:2])
            more = f" and {len(nodes) - 2} more" if len(nodes) > 2 else ""
            lines.append(
                f"  a whole-graph run could also apply {', '.join(rules[:3])} where {consumer} "
                f"reads {producer} across a cut ({names}{more})"
            )
        if len(groups) > 4:
            lines.append(f"  ... and {len(groups) - 4} more kinds of such places")
    if plan.refused:
        lines.append(
            f"  {len(plan.refused)} places not cut because rules match across them "
            f"(e.g. after {_name(graph, plan.refused[0][0])}: {', '.join(plan.refused[0][1][:3])})"
        )
    return lines


def report_json(report: BlockReport, graph: Graph) -> dict[str, Any]:
    plan = report.plan
    return {
        "blocks": [
            {"key": b.key[:16], "ops": len(b.nodes), "first": _name(graph, b.nodes[0])}
            for b in plan.blocks
        ],
        "distinct": len(plan.distinct),
        "cuts": [
            {"after": _name(graph, c.after), "crossing": [_name(graph, i) for i in c.crossing]}
            for c in plan.cuts
        ],
        "refused_cuts": [
            {"after": _name(graph, i), "rules": list(rules)} for i, rules in plan.refused
        ],
        "across_cuts": [
            {"value": _name(graph, lr.node), "consumer": lr.consumer_op, "rules": list(lr.rules)}
            for lr in plan.long_range
        ],
        "cache_hits": report.cache_hits,
        "scheduler": report.scheduler,
        "distinct_blocks": [
            {
                "key": key[:16],
                "uses": len(plan.distinct[key]),
                "e_nodes": o.nodes,
                "rounds": o.rounds,
                "stop": o.stop_reason,
                "seconds": round(o.seconds, 4),
                "cached": o.cached,
            }
            for key, o in report.outcomes.items()
        ],
    }
