"""The model zoo, end to end: export, import, run against ONNX Runtime, optimize and
simulate on both presets.

Run (needs the `[zoo]` extra: torch, torchvision, transformers, onnxruntime):

    python bench/zoo.py                      # the seven zoo models, both presets
    python bench/zoo.py --models bert_base,resnet50 --json zoo.json
    python bench/zoo.py --models convnext_tiny,swin_t,mistral   # beyond the zoo, small
    python bench/zoo.py --export-tiny tests/data/onnx   # the test suite's tiny files

Each model is built from its config with random weights (bench/zoo_models.py), exported
with torch.onnx (cached under the user's cache dir, keyed by model and versions),
imported with its dynamic axes bound to the example sizes, and run by eqsat's
reference interpreter and by ONNX Runtime on the same inputs (normwise relative
error). Then, per preset: optimize (time), simulate as written and optimized with
--verify, and the share of the model's roofline bound reached. Prints one table.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import logging
import os
import sys
import time
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np  # noqa: E402

from backend import compile_graph  # noqa: E402
from eqsat.loading import load_model  # noqa: E402
from eqsat.pipeline import optimize  # noqa: E402
from eqsat.roofline import model_roofline  # noqa: E402
from eqsat.rulesets import DEFAULT_RULES_DIR, compile_rule_paths  # noqa: E402
from eqsat.summary import human_count, summarize  # noqa: E402
from eqsat.verify.onnxruntime import normwise_error, onnx_feeds  # noqa: E402
from eqsat.verify.translation import validate_program  # noqa: E402
from hwsim import load_hardware, simulate  # noqa: E402

PRESETS = ("edge", "datacenter")
# Files checked in for the tests: one or both exporters per family, under 2 MB in all.
TINY_FILES = {
    "resnet18": ("torchscript",),
    "resnet50": ("dynamo",),
    "mobilenet_v2": ("torchscript",),
    "mobilenet_v3": ("dynamo",),
    "bert_base": ("torchscript", "dynamo"),
    "gpt2": ("torchscript", "dynamo"),
    "llama": ("dynamo",),
    "vit_b16": ("torchscript",),
    "t5_encoder": ("torchscript",),
}


def cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "eqsat" / "zoo"


def export(model, folder: Path) -> Path:
    """The model's ONNX file, exported once per model, exporter and library versions."""
    import torch
    import transformers

    from frontend.torch_export import export_onnx

    key = f"{model.name}-{model.exporter}-{torch.__version__}-{transformers.__version__}"
    path = folder / f"{model.name}-{hashlib.sha1(key.encode()).hexdigest()[:10]}.onnx"
    if not path.exists():
        folder.mkdir(parents=True, exist_ok=True)
        export_onnx(model.module, model.inputs, path, model.dynamic, model.exporter)
    return path


def ort_outputs(path: Path, feeds: dict) -> dict:
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.log_severity_level = 3
    session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    names = [o.name for o in session.get_outputs()]
    return dict(zip(names, session.run(None, feeds), strict=True))


def _stage(name: str, what: str) -> None:
    """A progress line on stderr: a model's stages can take minutes each."""
    print(f"  {name}: {what}", file=sys.stderr, flush=True)


def measure(name: str, build, presets, verify: bool, simulate_it: bool) -> dict:
    _stage(name, "building and exporting")
    model = build(False)
    path = export(model, cache_dir())
    _stage(name, f"importing {path.name}")
    dims = {
        d: int(model.inputs[_position(model, key)].shape[axis])
        for key, axes in model.dynamic.items()
        for axis, d in axes.items()
    }
    t = time.perf_counter()
    loaded = load_model(path, dims)
    t_import = time.perf_counter() - t
    imported = loaded.onnx
    graph = loaded.graph
    feeds = onnx_feeds(__import__("onnx").load(str(path), load_external_data=False), graph.dims)
    _stage(name, "running ONNX Runtime and the reference interpreter")
    want = ort_outputs(path, feeds)
    bindings = {**loaded.bindings(0), **imported.feeds(feeds)}
    from eqsat.interpreter import evaluate

    got = imported.results(evaluate(graph, bindings))
    error = max(normwise_error(got[k], want[k]) for k in want)
    s = summarize(graph)
    row = {
        "model": name,
        "family": model.family,
        "ops": sum(s.ops.values()),
        "params": s.param_count,
        "import_s": round(t_import, 2),
        "max_rel_error_vs_ort": error,
        "presets": {},
    }
    rules = compile_rule_paths([DEFAULT_RULES_DIR])
    for preset in presets:
        hw = load_hardware(preset)
        _stage(name, f"optimizing for {preset}")
        t = time.perf_counter()
        result = optimize(graph, rules, hw)
        entry = {
            "optimize_s": round(time.perf_counter() - t, 2),
            "est_before": result.before.cycles,
            "est_after": result.after.cycles,
        }
        if simulate_it:
            roof = model_roofline(graph, hw)
            entry["roofline_cycles"] = roof.cycles
            for label, g in (("as_written", graph), ("optimized", result.graph)):
                _stage(name, f"simulating {label.replace('_', ' ')} on {preset}")
                compiled = compile_graph(g, hw)
                rep = simulate(compiled.program, hw, compiled.feeds(bindings)).report
                entry[f"cycles_{label}"] = rep.cycles
                entry[f"roofline_{label}"] = roof.fraction(rep.cycles)
                if verify and label == "optimized":
                    validation = validate_program(graph, compiled, hw, (0, 1, 2), None, None)
                    entry["verify_rel_error"] = validation.worst
        row["presets"][preset] = entry
        print(f"  {name} on {preset}: {entry}", file=sys.stderr, flush=True)
    return row


def _position(model, key) -> int:
    if isinstance(key, int):
        return key
    import inspect

    params = list(inspect.signature(model.module.forward).parameters)
    return params.index(key)


def print_table(rows: list[dict], presets) -> None:
    head = ["model", "ops", "params", "import s", "rel. error vs ORT"]
    for p in presets:
        head += [f"{p}: optimize s", f"{p}: cycles as written -> optimized", f"{p}: roofline"]
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for r in rows:
        cells = [
            r["model"],
            str(r["ops"]),
            human_count(r["params"]),
            f"{r['import_s']:.2f}",
            f"{r['max_rel_error_vs_ort']:.1e}",
        ]
        for p in presets:
            e = r["presets"].get(p, {})
            cells.append(f"{e.get('optimize_s', 0):.1f}")
            if "cycles_optimized" in e:
                a, b = e["cycles_as_written"], e["cycles_optimized"]
                cells += [f"{a:,} -> {b:,} ({b / a - 1:+.1%})", f"{e['roofline_optimized']:.0%}"]
            else:
                cells += ["-", "-"]
        print("| " + " | ".join(cells) + " |")


def table_from_json(path: str, presets=PRESETS) -> None:
    """Print the table of a --json file again (for README)."""
    print_table(json.loads(Path(path).read_text()), presets)


def export_tiny(folder: Path) -> None:
    from zoo_models import EXTRA, ZOO

    from frontend.torch_export import export_onnx

    folder.mkdir(parents=True, exist_ok=True)
    for name, exporters in TINY_FILES.items():
        model = {**ZOO, **EXTRA}[name](True)
        for exporter in exporters:
            suffix = "ts" if exporter == "torchscript" else "dynamo"
            path = folder / f"{name}_{suffix}.onnx"
            export_onnx(model.module, model.inputs, path, model.dynamic, exporter)
            print(f"{path}: {path.stat().st_size / 1024:.0f} KiB")


def main() -> None:
    from zoo_models import MORE, ZOO

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--models",
        help=f"comma-separated subset of the zoo ({', '.join(ZOO)}; the default) and of "
        f"more architectures at small sizes ({', '.join(MORE)})",
    )
    ap.add_argument("--presets", default=",".join(PRESETS))
    ap.add_argument("--json", metavar="OUT.json", help="write the figures as JSON")
    ap.add_argument("--no-simulate", action="store_true", help="stop after optimizing")
    ap.add_argument("--no-verify", action="store_true", help="simulate without --verify")
    ap.add_argument("--export-tiny", metavar="DIR", help="write the tiny test files and exit")
    ap.add_argument("--table", metavar="ZOO.json", help="print the table of an earlier --json run")
    args = ap.parse_args()
    if args.table:
        table_from_json(args.table, args.presets.split(","))
        return
    warnings.filterwarnings("ignore")
    logging.disable(logging.WARNING)
    if args.export_tiny:
        export_tiny(Path(args.export_tiny))
        return
    names = args.models.split(",") if args.models else list(ZOO)
    presets = args.presets.split(",")
    rows = []
    known = {**ZOO, **MORE}
    unknown = [n for n in names if n not in known]
    if unknown:
        ap.error(f"unknown model(s) {', '.join(unknown)}; known: {', '.join(known)}")
    for name in names:
        rows.append(measure(name, known[name], presets, not args.no_verify, not args.no_simulate))
    print_table(rows, presets)
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=2, default=float) + "\n")
    np.set_printoptions()


if __name__ == "__main__":
    main()
