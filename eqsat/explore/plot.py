"""The exploration's Pareto plot (matplotlib, the [plot] extra)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from eqsat.explore.points import Point
from eqsat.flags import UsageError


def require_matplotlib() -> None:
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        raise UsageError(
            "--plot needs matplotlib, which is not installed: pip install 'eqsat[plot]'"
        ) from None


def plot_pareto(points: Sequence[Point], front: Sequence[int], title: str, path: Path) -> None:
    """Cycles against MACs, SRAM as the marker size; the front joined by a line. The
    image is written whole (a temporary file renamed) or not at all."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from eqsat.fileio import write_atomic

    fig, ax = plt.subplots(figsize=(7, 4.5))
    sram = [p.area_sram_bytes for p in points]
    smax = max(sram) or 1
    sizes = [30 + 170 * s / smax for s in sram]
    ax.scatter(
        [p.area_macs for p in points],
        [p.cycles for p in points],
        s=sizes,
        c="#9aa5b1",
        label="design points (marker size: SRAM bytes)",
    )
    best = sorted((points[i] for i in front), key=lambda p: (p.area_macs, p.cycles))
    ax.plot(
        [p.area_macs for p in best],
        [p.cycles for p in best],
        "o-",
        color="#c0392b",
        label="Pareto front",
    )
    for p in best:
        ax.annotate(
            p.changes,
            (p.area_macs, p.cycles),
            fontsize=7,
            xytext=(4, 4),
            textcoords="offset points",
        )
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("MACs in the array (area proxy)")
    ax.set_ylabel("cycles" + (" (estimated)" if points and points[0].estimated else " (simulated)"))
    ax.set_title(title)
    ax.legend(fontsize=8)
    fig.tight_layout()
    import io

    buf = io.BytesIO()
    fig.savefig(buf, format=path.suffix.lstrip(".") or "png", dpi=120)
    plt.close(fig)
    write_atomic(path, buf.getvalue())
