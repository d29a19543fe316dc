"""`eqsat diff`: two profiles of one model side by side, kernel by kernel."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from eqsat.errors import UserError
from eqsat.summary import human_bytes, text_table


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "diff",
        help="compare two profiles of a model kernel by kernel",
        description=(
            "Compare two runs written by `eqsat profile --json` (two rule sets, two "
            "hardware files, float and int8, before and after a change): per kernel name, "
            "cycles and DRAM bytes in each and the change; kernels only one run has are "
            "listed as added or removed. Totals last."
        ),
    )
    p.add_argument("a", metavar="A.json", help="the first profile (the baseline)")
    p.add_argument("b", metavar="B.json", help="the second profile")
    p.set_defaults(func=run)


def _load(path: str) -> dict:
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as err:
        raise UserError(f"{path}: cannot read ({err.strerror or err})") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        raise UserError(
            f"{path}: not a JSON profile ({err}); write one with `eqsat profile --json`"
        ) from None
    if (
        not isinstance(data, dict)
        or not isinstance(data.get("kernels"), list)
        or "cycles" not in data
    ):
        raise UserError(f"{path}: not a profile: expected what `eqsat profile --json` writes")
    for k in data["kernels"]:
        if not isinstance(k, dict) or not {"name", "cycles", "dram_bytes"} <= set(k):
            raise UserError(f"{path}: a kernel entry lacks name, cycles or dram_bytes")
    return data


def _change(a: float, b: float) -> str:
    return f"{(b - a) / a * 100:+.1f}%" if a else ""


def diff_rows(a: dict, b: dict) -> list[tuple[str, ...]]:
    ka = {k["name"]: k for k in a["kernels"]}
    kb = {k["name"]: k for k in b["kernels"]}
    names = list(ka) + [n for n in kb if n not in ka]
    rows = []
    for n in names:
        x, y = ka.get(n), kb.get(n)
        if x and y:
            rows.append((n, f"{x['cycles']:,}", f"{y['cycles']:,}", _change(x["cycles"], y["cycles"]),
                         human_bytes(x["dram_bytes"]), human_bytes(y["dram_bytes"])))  # fmt: skip
        elif x:
            rows.append((n, f"{x['cycles']:,}", "removed", "", human_bytes(x["dram_bytes"]), "-"))
        else:
            rows.append((n, "added", f"{y['cycles']:,}", "", "-", human_bytes(y["dram_bytes"])))
    da = sum(k["dram_bytes"] for k in a["kernels"])
    db = sum(k["dram_bytes"] for k in b["kernels"])
    rows.append(("total", f"{a['cycles']:,}", f"{b['cycles']:,}", _change(a["cycles"], b["cycles"]),
                 human_bytes(da), human_bytes(db)))  # fmt: skip
    return rows


def run(args: argparse.Namespace) -> int:
    a, b = _load(args.a), _load(args.b)
    head = ("kernel", "A cycles", "B cycles", "change", "A DRAM", "B DRAM")
    lines = text_table([head, *diff_rows(a, b)], left=(0,))
    print(f"A: {args.a} ({a.get('hardware', '?')})   B: {args.b} ({b.get('hardware', '?')})")
    print("\n".join(lines))
    return 0
