"""Render a trace written by `eqsat profile --trace` as a PNG timeline (no browser):
one row per lane (kernels, DMA queues, matrix and vector units, launch), a bar per
slice, and the DRAM bandwidth counter underneath. Needs the `[plot]` extra.

    python bench/render_trace.py TRACE.json OUT.png [--start US --end US] [--title T]

The README's trace picture is made with:

    eqsat profile examples/bert_layer.model --hw datacenter -q --trace /tmp/bert.json
    python bench/render_trace.py /tmp/bert.json bench/figures/trace_bert_layer.png
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

COLORS = {"kernel": "0.75", "load": "tab:blue", "store": "tab:cyan", "matrix": "tab:red",
          "vector": "tab:green", "launch": "0.4"}  # fmt: skip


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("trace")
    ap.add_argument("out")
    ap.add_argument("--start", type=float, default=0.0, help="first microsecond shown")
    ap.add_argument("--end", type=float, default=None, help="last microsecond shown")
    ap.add_argument("--title", default=None)
    args = ap.parse_args()
    trace = json.loads(Path(args.trace).read_text())
    events = trace["traceEvents"]
    lanes = {e["tid"]: e["args"]["name"] for e in events if e.get("name") == "thread_name"}
    order = sorted(lanes)
    rows = {tid: len(order) - 1 - i for i, tid in enumerate(order)}
    end = args.end or max(e["ts"] + e.get("dur", 0) for e in events if e["ph"] in "XC")
    bars = defaultdict(list)
    for e in events:
        if e["ph"] != "X" or e["ts"] + e["dur"] < args.start or e["ts"] > end:
            continue
        bars[(e["tid"], e["cat"])].append((e["ts"], e["dur"]))
    fig, (ax, bw) = plt.subplots(
        2, 1, figsize=(13, 4.6), sharex=True, gridspec_kw={"height_ratios": [4, 1]}
    )
    for (tid, cat), spans in bars.items():
        ax.broken_barh(spans, (rows[tid] - 0.4, 0.8), facecolors=COLORS.get(cat, "0.5"),
                       edgecolors="white" if cat == "kernel" else "none", linewidth=0.5)  # fmt: skip
    kernel_tid = next(t for t, n in lanes.items() if n == "kernels")
    wide = [e for e in events if e["ph"] == "X" and e["tid"] == kernel_tid]
    for e in wide:
        if e["dur"] > (end - args.start) / 25 and args.start <= e["ts"] <= end:
            ax.text(e["ts"] + e["dur"] / 2, rows[kernel_tid], e["name"], ha="center",
                    va="center", fontsize=6, clip_on=True)  # fmt: skip
    ax.set_yticks([rows[t] for t in order], [lanes[t] for t in order])
    ax.set_xlim(args.start, end)
    other = trace.get("otherData", {})
    ax.set_title(args.title or f"{other.get('hardware', '')}: {other.get('cycles', 0):,} cycles")
    counter = sorted((e["ts"], e["args"]["bytes_per_cycle"]) for e in events if e["ph"] == "C")
    if counter:
        ts, values = zip(*counter, strict=True)
        bw.step(ts, values, where="post", color="tab:blue", lw=0.8)
    bw.set_ylabel("DRAM B/cycle", fontsize=8)
    bw.set_xlabel("time (us)")
    fig.tight_layout()
    fig.savefig(args.out, dpi=120)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
