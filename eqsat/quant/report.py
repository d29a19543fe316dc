"""The `--quantize auto` report: per layer group its precision, scales, ranges,
sensitivity, share of the noise and cycles saved; per output the predicted and measured
SQNR; the candidates (mixed and each uniform precision) with their cycles and SQNR.
As JSON (REPORT.json's `quantization`) and as a table on stdout."""

from __future__ import annotations

import io
import math
from collections.abc import Mapping

import numpy as np

from eqsat.ir.graph import Graph
from eqsat.quant.weight_only import DEFAULT_GROUP
from eqsat.quant.weight_only import SCHEMES as WEIGHT_ONLY

SCHEMA = "eqsat.quant.auto/1"


def _db(v: float | None) -> float | None:
    """JSON has no infinity: an exact value (inf dB) is null."""
    return None if v is None or not math.isfinite(v) else round(float(v), 3)


def _sqnr(d: Mapping[str, float]) -> dict[str, float | None]:
    return {k: _db(v) for k, v in d.items()}


def weight_scales(w: np.ndarray, precision: str, conv: bool) -> dict | None:
    """The scales a precision stores for weight w: their granularity, count and range."""
    w = np.asarray(w, dtype=np.float32)
    if precision == "int8":
        axes = (1, 2, 3) if conv else (0,)
        s = np.abs(w).max(axis=axes) / np.float32(127.0)
        kind = "per output channel"
    elif precision in WEIGHT_ONLY and WEIGHT_ONLY[precision].bits != 16:
        from eqsat.ops.weight_only import group_scales

        scheme = WEIGHT_ONLY[precision]
        s = group_scales(w, DEFAULT_GROUP, scheme.bits, scheme.fmt)
        kind = f"per group of {DEFAULT_GROUP} rows per column"
    else:
        return None
    return {"granularity": kind, "count": int(s.size), "min": float(s.min()), "max": float(s.max())}


def layer_rows(run, graph: Graph) -> list[dict]:
    """One row per layer group (JSON-ready)."""
    auto = run.auto
    plan = run.plan
    tensors = dict(zip(sorted(plan.act_qparams), plan.tensors, strict=True))
    total = [sum(c.chosen.noise[k] for c in auto.choices) for k in range(len(auto.outputs))]
    rows = []
    for c in auto.choices:
        worst = max(range(len(auto.outputs)), key=lambda k: c.chosen.noise[k], default=None)
        share = (
            c.chosen.noise[worst] / total[worst] if worst is not None and total[worst] > 0 else 0.0
        )
        weights = []
        for i in c.layers:
            wnode = graph.nodes[graph.nodes[i].inputs[1]]
            name = str(wnode.attr("name"))
            value = run.params.get(name)
            entry: dict = {"name": name, "shape": list(wnode.type.shape)}
            if value is not None:
                v = np.asarray(value, dtype=np.float32)
                entry["range"] = [float(v.min()), float(v.max())]
                entry["scales"] = weight_scales(v, c.precision, graph.nodes[i].op == "conv2d")
            weights.append(entry)
        x = graph.nodes[c.node].inputs[0]
        t = tensors.get(x) if c.precision == "int8" else None
        rows.append(
            {
                "layers": [graph.nodes[i].name or f"%{i}" for i in c.layers],
                "weights": weights,
                "precision": c.precision,
                "activation": None
                if t is None
                else {"lo": t.lo, "hi": t.hi, "scale": t.scale, "zero_point": t.zero_point},
                "sensitivity_db": _db(c.sensitivity_db),
                "noise_share": round(share, 4),
                "est_cycles": c.chosen.cycles,
                "float_est_cycles": c.float_cycles,
                "saved_cycles": c.saved_cycles,
                "options": [
                    {
                        "precision": o.precision,
                        "est_cycles": o.cycles,
                        "sensitivity_db": _db(o.sensitivity_db),
                        "measured": o.measured,
                    }
                    for o in c.options
                ],
            }
        )
    return rows


def auto_report(run, optimized: Graph) -> dict:
    """REPORT.json's `quantization` for --quantize auto."""
    from eqsat.quant.run import int8_kernels
    from eqsat.quant.weight_only_run import weight_only_kernels

    auto = run.auto
    graph = auto.graph
    return {
        "schema": SCHEMA,
        "scheme": "auto",
        "sqnr_min_db": auto.sqnr_min,
        "calibration": run.calibration,
        "precisions": list(auto.precisions),
        "chosen": auto.chosen,
        "sqnr_db": {
            "predicted": _sqnr(auto.predicted),
            "confirmed": _sqnr(auto.confirmed),
            "measured": _sqnr(run.sqnr),
        },
        "candidates": [
            {
                "name": c.name,
                "est_cycles": c.cycles,
                "sqnr_db": _sqnr(c.sqnr),
                "predicted_sqnr_db": _sqnr(c.predicted),
                "meets_budget": c.meets(auto.sqnr_min),
            }
            for c in auto.candidates
        ],
        "int8_kernels": int8_kernels(optimized),
        "weight_only_kernels": weight_only_kernels(optimized),
        "layer_groups": len(auto.choices),
        "layers": layer_rows(run, graph),
    }


def _fmt_db(v: float | None) -> str:
    return "inf" if v is None or not math.isfinite(v) else f"{v:.1f}"


def auto_summary(run, optimized: Graph) -> list[str]:
    """The summary lines: the choice, the SQNR predicted and measured, the candidates,
    and a table of the layer groups."""
    from rich.console import Console
    from rich.table import Table

    auto = run.auto
    counts: dict[str, int] = {}
    for c in auto.choices:
        counts[c.precision] = counts.get(c.precision, 0) + 1
    mix = ", ".join(f"{n} {p}" for p, n in sorted(counts.items(), key=lambda kv: -kv[1]))
    saved = sum(c.saved_cycles for c in auto.choices)
    lines = [
        f"auto (>= {auto.sqnr_min:g} dB; {run.calibration}): kept {auto.chosen}; "
        f"{len(auto.choices)} layer groups: {mix}; {saved:,} est. cycles saved by the layers",
        "SQNR vs float: predicted "
        + ", ".join(f"{k} {_fmt_db(v)} dB" for k, v in auto.predicted.items())
        + "; measured "
        + ", ".join(f"{k} {_fmt_db(v)} dB" for k, v in run.sqnr.items()),
    ]
    if auto.candidates:
        lines.append(
            "candidates (est. cycles, measured worst SQNR): "
            + ", ".join(
                f"{c.name} {c.cycles:,} {_fmt_db(min(c.sqnr.values(), default=math.inf))} dB"
                + ("" if c.meets(auto.sqnr_min) else " (misses)")
                for c in auto.candidates
                if c.cycles is not None
            )
        )
    table = Table(title=None, show_edge=False, pad_edge=False)
    for col, just in (
        ("layer group (weights)", "left"),
        ("precision", "left"),
        ("sensitivity dB", "right"),
        ("noise share", "right"),
        ("act. scale / zp", "right"),
        ("est. cycles saved", "right"),
    ):
        table.add_column(col, justify=just)  # type: ignore[arg-type]
    tensors = dict(zip(sorted(run.plan.act_qparams), run.plan.tensors, strict=True))
    rows = layer_rows(run, auto.graph)
    for c, row in zip(auto.choices, rows, strict=True):
        t = tensors.get(auto.graph.nodes[c.node].inputs[0]) if c.precision == "int8" else None
        names = c.weight if len(c.weight) <= 48 else c.weight[:45] + "..."
        table.add_row(
            names,
            c.precision,
            _fmt_db(c.sensitivity_db),
            f"{row['noise_share']:.0%}",
            "" if t is None else f"{t.scale:.3g} / {t.zero_point}",
            f"{c.saved_cycles:,}",
        )
    buf = io.StringIO()
    Console(file=buf, width=120, force_terminal=False, color_system=None).print(table)
    lines += buf.getvalue().rstrip("\n").splitlines()
    return lines
