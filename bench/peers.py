"""eqsat against its peers on the same simulator: a phase-ordered pipeline, ONNX
Runtime's optimized graph and TVM's fused groups, on the examples and the model zoo.

Run with the `[zoo]` and `[peers]` extras (torch, onnxruntime, apache-tvm, onnxslim),
e.g. /work/zoovenv/bin/python:

    python bench/peers.py                                  # everything, both presets
    python bench/peers.py --models bert_base,resnet50 --presets datacenter --json p.json
    python bench/peers.py --table p.json                   # the table of an earlier run

Columns, per preset, all simulated by hwsim (cycles):
- as written: the model as imported, one kernel per op (`--no-optimize`).
- fixed-order: eqsat.phases: each rules file alone (algebra, dce, layout, winograd,
  fusion, tiling, then the others by name), saturated, extracted, then the next: a
  phase-ordered pass pipeline with the same rules and cost model as eqsat.
- ORT: ONNX Runtime 's optimized graph (bench/peers_ort.py: ORT_ENABLE_ALL on the CPU
  provider, after onnxruntime.transformers.optimizer for BERT and GPT-2), imported
  and run as written, one ORT node per kernel. A com.microsoft fused node runs as
  the registry kernels of what it means (FusedMatMul and Gemm as one matmul kernel,
  BiasGelu as add + gelu, SkipLayerNormalization as add + layernorm, Attention as
  its products, softmax and layout ops): where the registry has no kernel of ORT's
  composition, ORT's fused node costs more here than it does in ORT; that is in
  ORT's disfavour and is counted in the JSON (`ort.multi_kernel_nodes`).
- TVM: apache-tvm's Relax ONNX frontend, LegalizeOps, AnnotateTIROpPattern and
  FuseOps (bench/peers_tvm.py); each fused group runs as the registry kernels that
  compute its ops (bench/peers_groups.py): one kernel where the registry has one of
  that composition (`fused_matmul_add_relu` -> matmul_bias_relu), else several. The
  JSON lists, per group composition, the kernels it became; the table counts
  groups that needed more than one kernel. TVM's layout, scheduling and tiling
  are not carried over (the simulator's backend tiles every column alike).
- eqsat: `optimize` with every rules file in one e-graph.

Every simulated program is checked against the reference interpreter of the graph it
was compiled from (eqsat.verify.translation.validate, seed 0, the simulated run whose
cycles are reported), so no column is fast because it is wrong. The examples are
eqsat text models with no ONNX form, so they have no ORT or TVM column.
"""

from __future__ import annotations

import argparse
import collections
import json
import logging
import math
import platform
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from backend import compile_graph  # noqa: E402
from eqsat.config import DEFAULT_LIMITS, Limits  # noqa: E402
from eqsat.ir.graph import Graph  # noqa: E402
from eqsat.loading import load_model  # noqa: E402
from eqsat.phases import compile_phases, optimize_phased, phase_files  # noqa: E402
from eqsat.pipeline import optimize  # noqa: E402
from eqsat.rulesets import DEFAULT_RULES_DIR, compile_rule_paths  # noqa: E402
from eqsat.verify.translation import validate  # noqa: E402
from hwsim import load_hardware, simulate  # noqa: E402

PRESETS = ("edge", "datacenter")
ZOO_NAMES = ("resnet18", "resnet50", "mobilenet_v2", "bert_base", "gpt2", "llama", "vit_b16")
COLUMNS = ("as_written", "fixed_order", "ort", "tvm", "eqsat")
HEADS = {"bert_base": (12, 768), "gpt2": (12, 768)}  # ORT transformers optimizer


def say(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def example_names() -> list[str]:
    from eqsat.control.load import file_has_regions

    paths = sorted((ROOT / "examples").glob("*.model"))
    return [
        p.stem for p in paths if not file_has_regions(p)
    ]  # if/loop models: bench/control_flow.py


def zoo_file(name: str) -> Path:
    """The cached zoo export of `name` (bench/zoo.py builds it when missing)."""
    from zoo import cache_dir

    found = sorted(cache_dir().glob(f"{name}-*.onnx"), key=lambda p: p.stat().st_mtime)
    if found:
        return found[-1]
    from zoo import export
    from zoo_models import ZOO

    return export(ZOO[name](False), cache_dir())


def simulated(original: Graph, program: Graph, hw) -> dict:
    """Cycles of `program` on `hw`, checked against `original`'s reference."""
    compiled = compile_graph(program, hw)
    cycles: list[int] = []

    def run(bindings):
        result = simulate(compiled.program, hw, compiled.feeds(bindings))
        cycles.append(result.report.cycles)
        return compiled.results(result.outputs)

    check = validate(original, run, "the simulated program", seeds=(0,))
    return {"cycles": cycles[0], "rel_error": check.worst, "tolerance": check.tolerance}


def kernels(graph: Graph) -> int:
    return sum(1 for _, n in graph if not n.is_leaf)


class Rules:
    """Rule sets compiled once per run, and the optimizer's limits."""

    def __init__(self, limits: Limits = DEFAULT_LIMITS) -> None:
        self.limits = limits
        self.all = compile_rule_paths([DEFAULT_RULES_DIR])
        self.phases = compile_phases(phase_files())
        self.fusion = compile_rule_paths([DEFAULT_RULES_DIR / "fusion.rules"])


def measure_eqsat_columns(graph: Graph, rules: Rules, presets, row: dict) -> None:
    for preset in presets:
        hw = load_hardware(preset)
        entry = row["presets"].setdefault(preset, {"cycles": {}, "verify": {}, "kernels": {}})
        t = time.perf_counter()
        phased = optimize_phased(graph, rules.phases, hw, rules.limits)
        t_phased = time.perf_counter() - t
        t = time.perf_counter()
        best = optimize(graph, rules.all, hw, rules.limits)
        t_eqsat = time.perf_counter() - t
        entry["seconds"] = {"fixed_order": round(t_phased, 2), "eqsat": round(t_eqsat, 2)}
        for column, program in (
            ("as_written", graph),
            ("fixed_order", phased.graph),
            ("eqsat", best.graph),
        ):
            result = simulated(graph, program, hw)
            entry["cycles"][column] = result["cycles"]
            entry["verify"][column] = result["rel_error"]
            entry["kernels"][column] = kernels(program)
            say(f"  {row['model']} {preset} {column}: {result['cycles']:,} cycles")


def measure_grouped(
    column: str, graph: Graph, groups, labels, rules: Rules, presets, row: dict
) -> None:
    """A peer's grouping of `graph`, per preset: simulate and summarize the groups."""
    from peers_groups import group_program

    for preset in presets:
        hw = load_hardware(preset)
        program = group_program(graph, groups, labels, rules.fusion, hw)
        result = simulated(graph, program.graph, hw)
        entry = row["presets"][preset]
        entry["cycles"][column] = result["cycles"]
        entry["verify"][column] = result["rel_error"]
        entry["kernels"][column] = kernels(program.graph)
        compositions = collections.Counter(
            (_label(g.label), tuple(g.ops), tuple(g.kernels)) for g in program.groups
        )
        row[column].setdefault("groups", {})[preset] = [
            {"group": label, "ops": list(ops), "kernels": list(ks), "count": n}
            for (label, ops, ks), n in sorted(compositions.items())
        ]
        row[column].setdefault("multi_kernel_groups", {})[preset] = sum(
            n for (_, _, ks), n in compositions.items() if len(ks) > 1
        )
        row[column]["split_groups"] = program.split
        say(f"  {row['model']} {preset} {column}: {result['cycles']:,} cycles")


def _label(name: str) -> str:
    """fused_matmul3_add5 -> fused_matmul_add (TVM numbers functions of each shape)."""
    import re

    return re.sub(r"(?<=[a-z])\d+(?=_|$)", "", name)


def measure_ort(name: str, path: Path, dims: dict, rules: Rules, presets, row: dict, tmp) -> None:
    from peers_groups import onnx_node_of
    from peers_ort import ort_graph

    heads, hidden = HEADS.get(name, (0, 0))
    kind = {"bert_base": "bert", "gpt2": "gpt2"}.get(name)
    t = time.perf_counter()
    ort = ort_graph(path, kind, heads, hidden)
    file = tmp / f"{name}-ort.onnx"
    _save(ort.model, file)
    del ort.model
    graph = load_model(file, dims).graph  # at the sizes the other columns ran at
    node_outputs = [list(n.output) for n in _load_nodes(file)]
    of = onnx_node_of(graph, node_outputs)
    groups = [ort.groups[k] if k is not None else None for k in of]
    labels = list(ort.kinds)
    row["ort"] = {
        "level": ort.level,
        "fusions": ort.fusions,
        "notes": ort.notes,
        "ops": kernels(graph),
        "untraced_ops": sum(1 for i, n in graph if not n.is_leaf and of[i] is None),
        "prepare_s": round(time.perf_counter() - t, 2),
    }
    measure_grouped("ort", graph, groups, labels, rules, presets, row)
    row["ort"]["multi_kernel_nodes"] = row["ort"].pop("multi_kernel_groups")


def measure_tvm(name: str, path: Path, dims: dict, rules: Rules, presets, row: dict, tmp) -> None:
    import onnx
    from peers_groups import onnx_node_of
    from peers_tvm import prepare_for_tvm

    t = time.perf_counter()
    prepared = prepare_for_tvm(onnx.load(str(path)), dims)
    file = tmp / f"{name}-tvm.onnx"
    _save(prepared.model, file)
    node_outputs = [list(n.output) for n in prepared.model.graph.node]
    grouping = prepared.grouping
    del prepared
    graph = load_model(file).graph
    of = onnx_node_of(graph, node_outputs)
    owner: dict[int, int] = {}
    for g, group in enumerate(grouping.groups):
        for k in group.onnx_nodes:
            owner[k] = g  # a node TVM split over groups: the group of its last part
    groups = [owner.get(k) if k is not None else None for k in of]
    labels = [g.name for g in grouping.groups]
    row["tvm"] = {
        "version": grouping.version,
        "groups_total": len(grouping.groups),
        "fused_groups": sum(g.fused for g in grouping.groups),
        "untraced_tir_calls": grouping.unattributed,
        "ops": kernels(graph),
        # Ops TVM put in no traced group run one kernel each (reshapes are views: free).
        "ops_in_no_group": dict(
            collections.Counter(n.op for i, n in graph if not n.is_leaf and groups[i] is None)
        ),
        "prepare_s": round(time.perf_counter() - t, 2),
    }
    measure_grouped("tvm", graph, groups, labels, rules, presets, row)


def _save(model, file: Path) -> None:
    import onnx

    onnx.save(model, str(file), save_as_external_data=True, location=file.name + ".data")


def _load_nodes(file: Path):
    import onnx

    return onnx.load(str(file), load_external_data=False).graph.node


def measure(name: str, rules: Rules, presets, peers: bool) -> dict:
    say(f"{name}:")
    is_example = name in example_names()
    path = ROOT / "examples" / f"{name}.model" if is_example else zoo_file(name)
    graph = load_model(path).graph  # the weights' values are not needed: runs are seeded
    row: dict = {
        "model": name,
        "source": "example" if is_example else path.name,
        "dims": dict(graph.dims),
        "ops": kernels(graph),
        "presets": {},
    }
    measure_eqsat_columns(graph, rules, presets, row)
    del graph
    if is_example or not peers:
        return row
    with tempfile.TemporaryDirectory() as tmp:
        for column, fn in (("ort", measure_ort), ("tvm", measure_tvm)):
            try:
                fn(name, path, row["dims"], rules, presets, row, Path(tmp))
            except Exception as err:  # a peer that cannot take the model: say so
                row[column] = {"error": f"{type(err).__name__}: {err}"[:500]}
                say(f"  {name} {column}: failed: {row[column]['error']}")
    return row


def ratios(entry: dict) -> dict:
    cycles = entry["cycles"]
    e = cycles.get("eqsat")
    return {c: e / cycles[c] for c in COLUMNS if c != "eqsat" and cycles.get(c) and e}


def geomean(values) -> float | None:
    values = [v for v in values if v]
    return math.exp(sum(map(math.log, values)) / len(values)) if values else None


NAMES = {"as_written": "as written", "fixed_order": "fixed-order", "ort": "ORT", "tvm": "TVM"}
NAMES["eqsat"] = "eqsat"


def print_table(rows: list[dict], presets) -> None:
    """One table per preset: simulated cycles per column, eqsat's ratio to each."""
    others = ("as_written", "fixed_order", "ort", "tvm")
    for p in presets:
        print(f"\n{p}: simulated cycles (ratio: eqsat / column)\n")
        head = ["model", *(NAMES[c] for c in COLUMNS), *(f"eqsat / {NAMES[c]}" for c in others)]
        print("| " + " | ".join(head) + " |")
        print("|---|" + "---:|" * (len(head) - 1))
        for r in rows:
            e = r["presets"].get(p)
            if e is None:
                continue
            rs = ratios(e)
            cells = [r["model"]]
            cells += [f"{e['cycles'][c]:,}" if c in e["cycles"] else "-" for c in COLUMNS]
            cells += [f"{rs[c]:.3f}" if c in rs else "-" for c in others]
            print("| " + " | ".join(cells) + " |")
        zoo = [r for r in rows if r["source"] != "example" and p in r["presets"]]
        means = []
        for c in others:
            g = geomean([ratios(r["presets"][p]).get(c) for r in zoo])
            means.append(f"{g:.3f}" if g else "-")
        print(f"| zoo geomean | | | | | | {' | '.join(means)} |")
    notes = []
    for r in rows:
        for c in ("ort", "tvm"):
            info = r.get(c)
            if not info:
                continue
            if "error" in info:
                notes.append(f"- {r['model']} {NAMES[c]}: not measured ({info['error']})")
                continue
            multi = info.get("multi_kernel_groups") or info.get("multi_kernel_nodes") or {}
            counts = ", ".join(f"{n} on {p}" for p, n in multi.items())
            what = "fused groups" if c == "tvm" else "nodes"
            total = info.get("fused_groups", "")
            notes.append(
                f"- {r['model']} {NAMES[c]}: {what} run as more than one registry kernel: "
                f"{counts}" + (f" (of {total} fused groups)" if total else "")
            )
    if notes:
        print("\n" + "\n".join(notes))


def commit() -> str:
    """HEAD's short hash, `+changes` when the working tree differs from it."""
    try:
        head = subprocess.run(
            ["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        status = subprocess.run(
            ["git", "-C", str(ROOT), "status", "--porcelain", "--untracked-files=no"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return head + ("+changes" if status else "")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--models",
        help="comma-separated subset of the examples "
        f"({', '.join(example_names())}) and the zoo ({', '.join(ZOO_NAMES)})",
    )
    ap.add_argument("--presets", default=",".join(PRESETS))
    ap.add_argument("--json", metavar="OUT.json", help="write the figures as JSON")
    ap.add_argument("--no-peers", action="store_true", help="leave out ORT and TVM")
    ap.add_argument("--table", metavar="PEERS.json", help="print the table of an earlier run")
    ap.add_argument(
        "--time-limit",
        type=float,
        default=DEFAULT_LIMITS.time_limit,
        metavar="S",
        help="seconds for each optimization (eqsat and fixed-order; default "
        f"{DEFAULT_LIMITS.time_limit:g}): a loaded machine needs more, or the optimizer "
        "keeps the program as written",
    )
    args = ap.parse_args()
    presets = args.presets.split(",")
    if args.table:
        data = json.loads(Path(args.table).read_text())
        print_table(data["rows"], presets)
        return
    warnings.filterwarnings("ignore")
    logging.disable(logging.WARNING)
    names = args.models.split(",") if args.models else example_names() + list(ZOO_NAMES)
    unknown = [n for n in names if n not in example_names() and n not in ZOO_NAMES]
    if unknown:
        ap.error(f"unknown model {', '.join(unknown)}")
    rules = Rules(Limits(time_limit=args.time_limit))
    rows = []
    for name in names:
        rows.append(measure(name, rules, presets, not args.no_peers))
        if args.json:  # after every model, so that a long run leaves its figures
            _write(args.json, rows)
    print_table(rows, presets)


def _write(path: str, rows: list[dict]) -> None:
    from peers_tvm import tvm_version

    meta = {
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "commit": commit(),
        "python": platform.python_version(),
        "tvm": tvm_version(),
        "onnxruntime": _version("onnxruntime"),
        "onnxslim": _version("onnxslim"),
    }
    Path(path).write_text(json.dumps({"meta": meta, "rows": rows}, indent=1, default=float) + "\n")


def _version(module: str) -> str | None:
    try:
        return str(__import__(module).__version__)
    except ImportError:
        return None


if __name__ == "__main__":
    main()
