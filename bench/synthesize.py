"""Rule synthesis on the issue's acceptance configuration (issue 18, part 3).

    python bench/synthesize.py                      # {add, mul, neg, sub, transpose, matmul}, size 3
    python bench/synthesize.py --ops add,neg --size 2 -o /tmp/syn.rules

Runs `eqsat rules synthesize` (through its CLI entry point, so the figure includes
what a user waits for), then prints the wall time, the counts (terms, candidates
found, derivable, refuted, kept), the identities of rules/algebra.rules and
rules/layout.rules over these ops that the kept rules derive (and the missed ones),
and the result of `eqsat verify-rules` on the written file (100 examples per
direction, the command's default).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

ACCEPTANCE_OPS = "add,mul,neg,sub,transpose,matmul"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ops", default=ACCEPTANCE_OPS)
    ap.add_argument("--size", type=int, default=3)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("-o", "--output", help="keep the rules file here (default: a temp file)")
    ap.add_argument("--json", action="store_true", help="print the figures as JSON too")
    args = ap.parse_args()

    from eqsat.rules import load_rules
    from eqsat.synth.rediscover import rediscover

    with tempfile.TemporaryDirectory() as tmp:
        out = Path(args.output or Path(tmp) / "synthesized.rules")
        cmd = [sys.executable, "-m", "eqsat", "rules", "synthesize", "--ops", args.ops]
        cmd += ["--size", str(args.size), "--seed", str(args.seed), "-o", str(out)]
        cmd += ["--no-progress"]
        t0 = time.perf_counter()
        done = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT)
        wall = time.perf_counter() - t0
        if done.returncode != 0:
            print(done.stdout + done.stderr, file=sys.stderr)
            return 1
        print(f"$ eqsat {' '.join(cmd[3:])}")
        print(done.stdout.rstrip())
        print(f"wall time: {wall:.1f} s")

        rules = load_rules([out])
        texts = [_rule_text(out, r) for r in rules]
        found = rediscover(texts, args.ops.split(","))
        n = found.total
        pct = 100.0 * len(found.rediscovered) / n if n else 0.0
        print(
            f"rediscovered: {len(found.rediscovered)} of {n} identities over these ops in "
            f"rules/algebra.rules and rules/layout.rules ({pct:.0f}%)"
        )
        print(f"  rediscovered: {', '.join(found.rediscovered) or '-'}")
        print(f"  missed: {', '.join(found.missed) or '-'}")
        for name, why in found.not_instantiable:
            print(f"  not instantiable: {name} ({why})")

        t1 = time.perf_counter()
        verify = subprocess.run(
            [sys.executable, "-m", "eqsat", "verify-rules", str(out), "-j", "1", "--seed", "1"],
            capture_output=True,
            text=True,
            cwd=ROOT,
        )
        summary = verify.stdout.strip().splitlines()[-1] if verify.stdout.strip() else ""
        print(
            f"verify-rules on the written file: {summary} (exit {verify.returncode}, "
            f"{time.perf_counter() - t1:.1f} s)"
        )
        if args.json:
            print(
                json.dumps(
                    {
                        "wall_seconds": round(wall, 1),
                        "kept": len(rules),
                        "rediscovered": found.rediscovered,
                        "missed": found.missed,
                        "targets": n,
                        "verify_exit": verify.returncode,
                    }
                )
            )
        return 0 if verify.returncode == 0 else 1


def _rule_text(path: Path, rule) -> str:
    """The rule's own text (its doc line and declaration) from the file."""
    lines = path.read_text(encoding="utf-8").splitlines()
    start = rule.line - 1
    end = start + 1
    while end < len(lines) and lines[end].startswith("    "):
        end += 1
    return f"# {rule.doc}\n" + "\n".join(lines[start:end]) + "\n"


if __name__ == "__main__":
    sys.exit(main())
