"""The roofline chart and the sweep's throughput and latency, drawn with matplotlib
(the optional `[plot]` extra: `pip install eqsat[plot]`)."""

from __future__ import annotations

from pathlib import Path

from eqsat.batch_sweep import SweepPoint, ridge_point
from eqsat.errors import UserError
from eqsat.fileio import write_atomic
from hwsim import Hardware


def require_matplotlib() -> None:
    """A UserError saying how to install it, if matplotlib is missing."""
    _pyplot()


def _pyplot():
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise UserError(
            "--plot needs matplotlib: install the plot extra (pip install 'eqsat[plot]')"
        ) from None
    return plt


def plot_sweep(
    path: str | Path,
    points: list[SweepPoint],
    chosen: SweepPoint | None,
    hw: Hardware,
    dim: str,
    dtype: str,
    title: str,
) -> None:
    """Left: the roofline (FLOP/cycle against FLOP/byte, log-log) with the model at each
    swept value and the kernels of the chosen one; right: throughput and latency
    against the swept value. The format follows the file's suffix (png, svg, pdf)."""
    plt = _pyplot()
    suffix = Path(path).suffix.lstrip(".").lower() or "png"
    if suffix not in ("png", "svg", "pdf"):
        raise UserError(f"{path}: --plot writes .png, .svg or .pdf files")
    fig, (roof_ax, sweep_ax) = plt.subplots(1, 2, figsize=(12, 4.8))
    peak = 2 * hw.macs_per_cycle[dtype]
    ridge = ridge_point(hw, dtype)
    xs = [p.intensity for p in points if p.intensity != float("inf")]
    for k in chosen.kernels if chosen else ():
        if k.dram_bytes and k.cycles:
            xs.append(k.intensity)
    lo, hi = min([*xs, ridge]) / 4, max([*xs, ridge]) * 4
    roof_ax.plot([lo, ridge, hi], [lo * hw.dram_bytes_per_cycle, peak, peak], "k-", lw=1.5)
    roof_ax.axvline(ridge, color="0.7", ls=":", lw=1)
    roof_ax.annotate(f"ridge {ridge:.0f} FLOP/B", (ridge, peak), xytext=(4, -14),
                     textcoords="offset points", fontsize=8)  # fmt: skip
    for p in points:
        achieved = p.flops / p.runtime_cycles() if p.runtime_cycles() else 0
        roof_ax.plot(p.intensity, achieved, "o", color="tab:blue")
        roof_ax.annotate(f"{dim}={p.value}", (p.intensity, achieved), xytext=(4, 4),
                         textcoords="offset points", fontsize=7)  # fmt: skip
    if chosen is not None:
        for k in chosen.kernels:
            if k.dram_bytes and k.cycles and k.flops:
                roof_ax.plot(k.intensity, k.flops / k.cycles, ".", color="tab:orange", alpha=0.7)
        roof_ax.plot([], [], ".", color="tab:orange", label=f"kernels at {dim}={chosen.value}")
    roof_ax.plot([], [], "o", color="tab:blue", label="whole model")
    roof_ax.set(xscale="log", yscale="log", xlabel="arithmetic intensity (FLOP/byte)",
                ylabel="FLOP/cycle", title=f"roofline on {hw.name} ({dtype})")  # fmt: skip
    roof_ax.legend(fontsize=8, loc="lower right")
    values = [p.value for p in points]
    latency_ms = [p.runtime_cycles() / (hw.clock_ghz * 1e6) for p in points]
    throughput = [v / (ms / 1e3) if ms else 0 for v, ms in zip(values, latency_ms, strict=True)]
    sweep_ax.plot(values, throughput, "o-", color="tab:blue", label="throughput")
    sweep_ax.set(xscale="log", xlabel=dim, ylabel="items / s", title="sweep")
    lat_ax = sweep_ax.twinx()
    lat_ax.plot(values, latency_ms, "s--", color="tab:red", label="latency")
    lat_ax.set_ylabel("latency (ms)")
    if chosen is not None:
        sweep_ax.axvline(
            chosen.value, color="tab:green", ls=":", label=f"chosen {dim}={chosen.value}"
        )
    lines = sweep_ax.get_legend_handles_labels()
    more = lat_ax.get_legend_handles_labels()
    sweep_ax.legend(lines[0] + more[0], lines[1] + more[1], fontsize=8, loc="upper left")
    fig.suptitle(title)
    fig.tight_layout()
    import io

    buf = io.BytesIO()
    fig.savefig(buf, format=suffix, dpi=110)
    plt.close(fig)
    write_atomic(path, buf.getvalue())
