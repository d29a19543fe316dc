"""Fuzz the command line with hostile files of every kind, in worker processes that
also catch hangs and crashes (tests/fuzz/ holds the mutators and the runner).

    python bench/fuzz.py                       # 10,000 cases over all kinds, 2 workers
    python bench/fuzz.py --cases 500 --kinds npz,asm --seed 7
    python bench/fuzz.py --replay npz:1234     # one case in this process, with its output

Per case: success (exit 0), a clean error (exit 1 or 2 with a message), or a problem:
a traceback, or "hang or crash" (no answer within --timeout seconds: the case hung,
or killed its worker, which the pool then replaces).
Prints counts per kind and outcome, and each distinct problem with a case that
reproduces it; exits 1 if there was any problem. Each worker caps its address space
(--memory, default 4 GiB), so an input that makes eqsat allocate without bound shows
up as a crash or traceback instead of exhausting the machine.
"""

from __future__ import annotations

import argparse
import collections
import multiprocessing as mp
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.fuzz.runner import KINDS, run_case, signature  # noqa: E402


def _init_worker(memory: int) -> None:
    import resource
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent handles Ctrl-C
    resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
    import eqsat.cli  # noqa: F401 - import once, not inside the first case's time
    from tests.fuzz import corpus

    corpus.models(), corpus.rules(), corpus.hardware(), corpus.onnx_models()
    corpus.mlp_inputs(), corpus.assembly(), corpus.egraph_json()


def _work(task: tuple[str, int]) -> tuple[str, int, str, str, float]:
    kind, seed = task
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        outcome = run_case(kind, seed, Path(tmp))
    result = "ok" if outcome.code == 0 else "error"
    detail = ""
    if not outcome.ok:
        result, detail = outcome.problem, signature(outcome)
    return kind, seed, result, detail, time.perf_counter() - t0


class Pool:
    """Workers that are replaced when one hangs or dies, so one case cannot stop the run."""

    def __init__(self, workers: int, memory: int) -> None:
        self.workers, self.memory = workers, memory
        self.pool = self._new()

    def _new(self) -> mp.pool.Pool:
        return mp.get_context("fork").Pool(self.workers, _init_worker, (self.memory,))

    def restart(self) -> None:
        self.pool.terminate()
        self.pool.join()
        self.pool = self._new()


def run(cases: list[tuple[str, int]], workers: int, timeout: float, memory: int):
    pool = Pool(workers, memory)
    results = []
    start = time.perf_counter()
    i = 0
    while i < len(cases):
        batch = cases[i : i + 64]
        pending = [(task, pool.pool.apply_async(_work, (task,))) for task in batch]
        for task, res in pending:
            try:
                results.append(res.get(timeout=timeout))
            except mp.TimeoutError:
                results.append((*task, "hang or crash", f"no answer in {timeout:g} s", timeout))
                pool.restart()
                # The rest of the batch is resubmitted to the new workers.
                rest = [t for t, _ in pending[pending.index((task, res)) + 1 :]]
                cases[i + len(batch) : i + len(batch)] = rest
                break
            except Exception as exc:
                results.append((*task, "harness error", repr(exc)[:200], 0.0))
        i += len(batch)
        done = len(results)
        rate = done / (time.perf_counter() - start)
        print(f"\r{done:,}/{len(cases):,} cases, {rate:.1f}/s", end="", file=sys.stderr, flush=True)
    print(file=sys.stderr)
    pool.pool.terminate()
    return results


def report(results, seconds: float) -> int:
    by_kind = collections.defaultdict(collections.Counter)
    problems = collections.defaultdict(list)
    for kind, seed, result, detail, _ in results:
        by_kind[kind][result] += 1
        if result not in ("ok", "error"):
            problems[(kind, result, detail)].append(seed)
    columns = ["ok", "error", *sorted({r for c in by_kind.values() for r in c} - {"ok", "error"})]
    print(f"{'kind':<10}" + "".join(f"{c:>18}" for c in columns) + f"{'total':>8}")
    for kind in KINDS:
        if kind in by_kind:
            c = by_kind[kind]
            print(
                f"{kind:<10}" + "".join(f"{c[x]:>18,}" for x in columns) + f"{sum(c.values()):>8,}"
            )
    total = collections.Counter()
    for c in by_kind.values():
        total.update(c)
    print(
        f"{'all':<10}" + "".join(f"{total[x]:>18,}" for x in columns) + f"{sum(total.values()):>8,}"
    )
    print(f"{len(results):,} cases in {seconds:.0f} s")
    for (kind, result, detail), seeds in sorted(problems.items(), key=lambda kv: -len(kv[1])):
        print(f"\n{result} x{len(seeds)} ({kind}; replay: --replay {kind}:{seeds[0]})\n  {detail}")
    return 1 if problems else 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cases", type=int, default=10_000, help="number of cases (default 10,000)")
    ap.add_argument("--kinds", default=",".join(KINDS), help=f"comma-separated ({','.join(KINDS)})")
    ap.add_argument("--seed", type=int, default=0, help="first seed (cases use seed, seed+1, ...)")
    ap.add_argument("--workers", type=int, default=os.cpu_count() or 2)
    ap.add_argument("--timeout", type=float, default=120.0, help="seconds before a case is a hang")
    ap.add_argument("--memory", type=float, default=4.0, help="GiB of address space per worker")
    ap.add_argument("--replay", metavar="KIND:SEED", help="run one case here and show its output")
    args = ap.parse_args()
    if args.replay:
        kind, _, seed = args.replay.partition(":")
        with tempfile.TemporaryDirectory() as tmp:
            outcome = run_case(kind, int(seed), Path(tmp))
        print(f"exit {outcome.code}; {outcome.problem or 'fine'}\n{outcome.stderr}{outcome.error}")
        return 0 if outcome.ok else 1
    kinds = [k for k in args.kinds.split(",") if k]
    unknown = set(kinds) - set(KINDS)
    if unknown:
        ap.error(f"unknown kinds {sorted(unknown)}; choose from {', '.join(KINDS)}")
    cases = [(kinds[i % len(kinds)], args.seed + i // len(kinds)) for i in range(args.cases)]
    start = time.perf_counter()
    results = run(cases, args.workers, args.timeout, int(args.memory * 2**30))
    return report(results, time.perf_counter() - start)


if __name__ == "__main__":
    sys.exit(main())
