"""Extraction at scale on the extraction-gym data set: greedy and ILP against a baseline.

Run: python bench/extraction_gym.py DATA_DIR [--time-limit S] [--only TEXT] [--no-ilp]
     [--json OUT.json] [--reuse PREV.json]

DATA_DIR is a local copy of extraction-gym's ``data/`` folder (egraph-serialize JSON
files from TENSAT, egg, rover, flexc, babble, herbie, lean-egg, ...; nothing is
downloaded here). Every file is extracted in-process (no CLI start-up per file) by:
- ``fgd``: extraction-gym's faster-greedy-dag, re-implemented below from its
  description (extraction-gym is Rust and its crates cannot be fetched here), as the
  baseline our greedy must not lose to;
- ``greedy``: eqsat.extract.greedy_extract;
- ``ilp``: eqsat.extract.ilp_extract with the time limit (60 s by default).
Every answer is judged by eqsat.extract.check (reads the raw JSON, shares no code with
the extractors). "Best known" per file is the cheapest valid answer of the three (an
ILP answer proved optimal is the optimum). Files with negative costs (maxsat) are
extracted like the others (greedy gives a valid answer, the ILP's model uses a class
only where a chosen node needs it). Root ids that name no class
(most lean-egg files) are dropped as ``eqsat extract`` drops them; a file left with
no root is counted, not extracted.

``--reuse PREV.json`` (a ``--json`` file of an earlier run) takes from it the ILP rows
proved optimal (the optimum does not depend on the time limit) and the baseline's
costs, and runs the rest again: a long-limit run then spends its time on the files
that did not finish.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import time
from collections import defaultdict, deque
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from rich.console import Console  # noqa: E402
from rich.progress import (  # noqa: E402
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
)
from rich.table import Table  # noqa: E402

from eqsat.extract import EGraph, ExtractError, greedy_extract, ilp_extract  # noqa: E402
from eqsat.extract.check import CheckFailure, check_extraction  # noqa: E402
from eqsat.extract.result import OPTIMAL  # noqa: E402
from eqsat.extract.serialized import parse_json_dict  # noqa: E402

# Relative tolerance for "equal cost" and "within 1%" comparisons.
_EQUAL = 1e-9


@dataclass
class Row:
    """One file's outcome (costs are DAG costs from the roots; None = not run or invalid)."""

    file: str
    group: str
    nodes: int = 0
    classes: int = 0
    roots: int = 0
    missing_roots: int = 0
    status: str = "ok"  # ok | refused_negative_cost | no_root | error
    note: str = ""
    load_s: float = 0.0
    fgd_cost: float | None = None
    fgd_s: float = 0.0
    greedy_cost: float | None = None
    greedy_s: float = 0.0
    ilp_cost: float | None = None
    ilp_status: str = ""
    ilp_lower: float | None = None
    ilp_gap: float | None = None
    ilp_s: float = 0.0
    ilp_reused: bool = False  # taken from --reuse (proved optimal there)
    invalid: str = ""  # extractors whose answer failed the check, with the reason

    @property
    def best(self) -> float | None:
        found = [c for c in (self.fgd_cost, self.greedy_cost, self.ilp_cost) if c is not None]
        return min(found) if found else None


def faster_greedy_dag(egraph: EGraph) -> dict[str, str]:
    """extraction-gym's faster-greedy-dag, written anew from its description.

    Each class keeps a "cost set": the classes of its current best term DAG with the
    own cost of each, and their sum. A worklist of nodes starts at the leaves; a node
    whose child classes all have cost sets gets the union of their sets (the largest
    copied, the others merged in) plus itself; it replaces its class's set when the
    sum is strictly lower (a set containing its own class is a cycle and is refused),
    and then the nodes using that class are queued again. The fixpoint's choice for
    every class is returned ({class id: node id}), for the caller to judge from the
    roots.
    """
    kids = egraph.child_sets
    node_class = egraph.node_class.tolist()
    costs = egraph.costs.tolist()
    usable = egraph.usable.tolist()
    parents = egraph.parents
    sets: list[dict[int, float] | None] = [None] * egraph.n_classes
    totals = [math.inf] * egraph.n_classes
    chosen = [-1] * egraph.n_classes
    queue = deque(n for n in range(egraph.n_nodes) if usable[n] and not kids[n])
    queued = [False] * egraph.n_nodes
    for n in queue:
        queued[n] = True
    while queue:
        n = queue.popleft()
        queued[n] = False
        c = node_class[n]
        children = kids[n]
        if c in children or any(sets[d] is None for d in children):
            continue
        if len(children) == 1 and costs[n] + totals[children[0]] > totals[c]:
            continue
        if children:
            largest = max(children, key=lambda d: len(sets[d]))  # type: ignore[arg-type]
            merged = dict(sets[largest])  # type: ignore[arg-type]
            for d in children:
                if d != largest:
                    merged.update(sets[d])  # type: ignore[arg-type]
            if c in merged:
                continue
        else:
            merged = {}
        merged[c] = costs[n]
        total = sum(merged.values())
        if total < totals[c]:
            sets[c], totals[c], chosen[c] = merged, total, n
            for p in parents[c]:
                if usable[p] and not queued[p]:
                    queued[p] = True
                    queue.append(p)
    ids, nids = egraph.class_ids, egraph.node_ids
    return {ids[c]: nids[n] for c, n in enumerate(chosen) if n >= 0}


def _negative_costs(data: Any) -> int:
    nodes = data.get("nodes", {}) if isinstance(data, dict) else {}
    return sum(
        1
        for node in nodes.values()
        if isinstance(node, dict) and isinstance(node.get("cost"), int | float) and node["cost"] < 0
    )


def _judge(
    row: Row, name: str, data: Any, choice: dict[str, str], roots: list[str]
) -> float | None:
    try:
        return check_extraction(data, choice, roots)
    except CheckFailure as exc:
        row.invalid += f"{name}: {exc}; "
        return None


def run_file(
    path: Path, data_dir: Path, time_limit: float, with_ilp: bool, previous: Row | None = None
) -> Row:
    """Load, extract three ways, and check one file (reusing ``previous`` where it may)."""
    rel = path.relative_to(data_dir)
    row = Row(file=str(rel), group=rel.parts[0] if len(rel.parts) > 1 else "")
    start = time.perf_counter()
    data = json.loads(path.read_text(encoding="utf-8"))
    negative = _negative_costs(data)
    if negative:  # maxsat: rewards; the ILP uses a class only where a chosen node needs it
        row.note = f"{negative} nodes with a negative cost"
    try:
        egraph = parse_json_dict(data, source=str(rel))
        row.nodes, row.classes = egraph.n_nodes, egraph.n_classes
        row.missing_roots = len(egraph.missing_roots)
        roots = [egraph.class_ids[r] for r in egraph.default_roots()]
    except ExtractError as exc:
        row.status = "no_root" if "no root class has a node" in str(exc) else "error"
        row.note = str(exc)
        return row
    row.roots = len(roots)
    row.load_s = time.perf_counter() - start

    if previous is not None and previous.fgd_cost is not None:
        row.fgd_cost, row.fgd_s = previous.fgd_cost, previous.fgd_s
    else:
        start = time.perf_counter()
        fgd = faster_greedy_dag(egraph)
        row.fgd_s = time.perf_counter() - start
        row.fgd_cost = _judge(row, "fgd", data, fgd, roots)
    reuse_ilp = previous is not None and previous.ilp_status == OPTIMAL
    if reuse_ilp:
        for name in ("ilp_cost", "ilp_status", "ilp_lower", "ilp_gap", "ilp_s"):
            setattr(row, name, getattr(previous, name))
        row.ilp_reused = True
        with_ilp = False

    try:
        greedy = greedy_extract(egraph, roots)
        ilp = ilp_extract(egraph, roots, time_limit=time_limit) if with_ilp else None
    except ExtractError as exc:
        row.status, row.note = "error", str(exc)
        return row
    row.greedy_s = greedy.seconds
    row.greedy_cost = _judge(row, "greedy", data, greedy.choice, roots)
    if ilp is not None:
        row.ilp_s = ilp.seconds
        row.ilp_status = ilp.status
        row.ilp_lower = ilp.lower_bound
        row.ilp_gap = ilp.gap
        row.ilp_cost = _judge(row, "ilp", data, ilp.choice, roots)
    return row


def _ratio(cost: float | None, best: float | None) -> float | None:
    if cost is None or best is None:
        return None
    if best <= 0:
        return 1.0 if cost <= best + _EQUAL else None
    return cost / best


def geomean(values: list[float]) -> float:
    return math.exp(statistics.fmean(math.log(v) for v in values)) if values else math.nan


def summarize(rows: list[Row], time_limit: float) -> dict[str, Any]:
    """The figures of the table (see ``print_summary``)."""
    done = [r for r in rows if r.status == "ok"]
    out: dict[str, Any] = {
        "files": len(rows),
        "extracted": len(done),
        "refused_negative_cost": sum(r.status == "refused_negative_cost" for r in rows),
        "no_root": sum(r.status == "no_root" for r in rows),
        "errors": sum(r.status == "error" for r in rows),
        "with_missing_roots": sum(r.missing_roots > 0 for r in done),
        "time_limit_s": time_limit,
    }
    for name in ("fgd", "greedy", "ilp"):
        ran = [r for r in done if name != "ilp" or r.ilp_status]
        ratios = [_ratio(getattr(r, f"{name}_cost"), r.best) for r in ran]
        valid = [q for q in ratios if q is not None]
        worst = max(
            ran, key=lambda r: _ratio(getattr(r, f"{name}_cost"), r.best) or 0, default=None
        )
        seconds = [getattr(r, f"{name}_s") for r in ran]
        out[name] = {
            "ran": len(ran),
            "valid": sum(getattr(r, f"{name}_cost") is not None for r in ran),
            "geomean_vs_best": geomean(valid),
            "worst_vs_best": max(valid, default=math.nan),
            "worst_file": worst.file if worst is not None else "",
            "seconds_total": sum(seconds),
            "seconds_median": statistics.median(seconds) if seconds else math.nan,
            "seconds_max": max(seconds, default=math.nan),
        }
    both = [r for r in done if r.greedy_cost is not None and r.fgd_cost is not None]
    worse = [r for r in both if r.greedy_cost > r.fgd_cost * (1 + _EQUAL) + _EQUAL]
    out["greedy_vs_fgd"] = {
        "compared": len(both),
        "greedy_cheaper": sum(r.greedy_cost < r.fgd_cost * (1 - _EQUAL) - _EQUAL for r in both),
        "greedy_costlier": len(worse),
        "costlier_files": [r.file for r in worse],
    }
    ilp_rows = [r for r in done if r.ilp_status]
    optimal = [r for r in ilp_rows if r.ilp_status == OPTIMAL]
    at_limit = [r for r in ilp_rows if r.ilp_status != OPTIMAL]
    near = [
        r
        for r in optimal
        if r.ilp_cost is not None and r.best is not None and r.ilp_cost <= r.best * 1.01 + _EQUAL
    ]
    gaps = [r.ilp_gap for r in at_limit if r.ilp_gap is not None]
    out["ilp_detail"] = {
        "optimal": len(optimal),
        "optimal_reused_from_earlier_run": sum(r.ilp_reused for r in optimal),
        "optimal_within_1pct_of_best": len(near),
        "not_finished": len(at_limit),
        "returned_greedy_cost_at_limit": sum(
            r.ilp_cost is not None
            and r.greedy_cost is not None
            and abs(r.ilp_cost - r.greedy_cost) <= _EQUAL * max(1.0, abs(r.greedy_cost))
            for r in at_limit
        ),
        "improved_on_greedy_at_limit": sum(
            r.ilp_cost is not None and r.greedy_cost is not None and r.ilp_cost < r.greedy_cost
            for r in at_limit
        ),
        "median_gap_at_limit": statistics.median(gaps) if gaps else math.nan,
        "not_finished_files": [r.file for r in at_limit],
    }
    groups: dict[str, list[Row]] = defaultdict(list)
    for r in done:
        groups[r.group].append(r)
    out["groups"] = {
        g: {
            "files": len(rs),
            "greedy_geomean": geomean(
                [q for r in rs if (q := _ratio(r.greedy_cost, r.best)) is not None]
            ),
            "fgd_geomean": geomean(
                [q for r in rs if (q := _ratio(r.fgd_cost, r.best)) is not None]
            ),
            "ilp_geomean": geomean(
                [q for r in rs if (q := _ratio(r.ilp_cost, r.best)) is not None]
            ),
            "ilp_optimal": sum(r.ilp_status == OPTIMAL for r in rs),
            "ilp_seconds": sum(r.ilp_s for r in rs),
        }
        for g, rs in sorted(groups.items())
    }
    out["invalid_answers"] = [f"{r.file}: {r.invalid}" for r in done if r.invalid]
    return out


def print_summary(summary: dict[str, Any], console: Console) -> None:
    s = summary
    console.print(
        f"files {s['files']}: extracted {s['extracted']}, refused (negative costs) "
        f"{s['refused_negative_cost']}, no root with a node {s['no_root']}, errors {s['errors']}; "
        f"{s['with_missing_roots']} extracted files named some root ids that are no class"
    )
    table = Table(title=f"extraction-gym, ILP time limit {s['time_limit_s']:g} s")
    for col in ("extractor", "ran", "valid", "geomean vs best", "worst", "worst file"):
        table.add_column(col)
    for col in ("total s", "median s", "max s"):
        table.add_column(col, justify="right")
    for name in ("fgd", "greedy", "ilp"):
        e = s[name]
        table.add_row(
            name,
            str(e["ran"]),
            str(e["valid"]),
            f"{e['geomean_vs_best']:.4f}",
            f"{e['worst_vs_best']:.3f}",
            e["worst_file"],
            f"{e['seconds_total']:.1f}",
            f"{e['seconds_median']:.3f}",
            f"{e['seconds_max']:.1f}",
        )
    console.print(table)
    g = s["greedy_vs_fgd"]
    console.print(
        f"greedy vs faster-greedy-dag on {g['compared']} files: cheaper on "
        f"{g['greedy_cheaper']}, costlier on {g['greedy_costlier']} {g['costlier_files'][:10]}"
    )
    d = s["ilp_detail"]
    console.print(
        f"ILP: proved optimal {d['optimal']} ({d['optimal_reused_from_earlier_run']} of them "
        f"taken from --reuse; {d['optimal_within_1pct_of_best']} within 1% of "
        f"best), not finished {d['not_finished']} (returned greedy's cost on "
        f"{d['returned_greedy_cost_at_limit']}, improved on greedy on "
        f"{d['improved_on_greedy_at_limit']}, median gap {d['median_gap_at_limit']:.2%})"
    )
    if d["not_finished_files"]:
        console.print("  not finished: " + ", ".join(d["not_finished_files"]))
    groups = Table(title="per source")
    for col in ("source", "files", "fgd", "greedy", "ilp", "ilp optimal", "ilp s"):
        groups.add_column(col)
    for name, e in s["groups"].items():
        groups.add_row(
            name,
            str(e["files"]),
            f"{e['fgd_geomean']:.4f}",
            f"{e['greedy_geomean']:.4f}",
            f"{e['ilp_geomean']:.4f}",
            str(e["ilp_optimal"]),
            f"{e['ilp_seconds']:.1f}",
        )
    console.print(groups)
    for line in s["invalid_answers"]:
        console.print(f"[red]invalid[/red] {line}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("data_dir", type=Path, help="local copy of extraction-gym's data/")
    parser.add_argument("--time-limit", type=float, default=60.0, help="ILP seconds (60)")
    parser.add_argument("--only", default="", help="only files whose path contains TEXT")
    parser.add_argument("--no-ilp", action="store_true", help="greedy and the baseline only")
    parser.add_argument("--json", type=Path, metavar="OUT", help="write rows and summary")
    parser.add_argument(
        "--reuse", type=Path, metavar="PREV", help="take optimal ILP rows from an earlier --json"
    )
    args = parser.parse_args(argv)
    previous: dict[str, Row] = {}
    if args.reuse:
        rows_before = json.loads(args.reuse.read_text())["rows"]
        previous = {r["file"]: Row(**r) for r in rows_before if r["status"] == "ok"}
    files = sorted(p for p in args.data_dir.rglob("*.json") if args.only in str(p))
    if not files:
        print(f"no .json files under {args.data_dir}", file=sys.stderr)
        return 2
    console = Console(stderr=True)
    rows: list[Row] = []
    columns = (
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("{task.fields[current]}"),
    )
    with Progress(*columns, console=console, transient=True) as progress:
        task = progress.add_task("extracting", total=len(files), current="")
        for path in files:
            progress.update(task, current=str(path.relative_to(args.data_dir)))
            rel = str(path.relative_to(args.data_dir))
            rows.append(
                run_file(path, args.data_dir, args.time_limit, not args.no_ilp, previous.get(rel))
            )
            progress.advance(task)
            if not console.is_terminal:  # no live bar in a log: one line per file
                r = rows[-1]
                console.print(
                    f"{len(rows)}/{len(files)} {r.file} {r.status} greedy {r.greedy_cost} "
                    f"ilp {r.ilp_cost} ({r.ilp_status}, {r.ilp_s:.1f} s)",
                    highlight=False,
                    soft_wrap=True,
                )
    summary = summarize(rows, args.time_limit)
    print_summary(summary, Console())
    if args.json:
        args.json.write_text(
            json.dumps({"summary": summary, "rows": [asdict(r) for r in rows]}, indent=1)
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
