"""Run scipy's HiGHS MILP under a hard wall-clock limit.

HiGHS checks its ``time_limit`` only between phases: on a hard 11k-variable
extraction its root node ran 27 s under a 10 s limit. Big models are therefore
solved in a child Python process that is killed at the deadline; small ones are solved
in-process, where the start-up cost of a process (about half a second) would dominate.
"""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from scipy.optimize import Bounds, LinearConstraint, milp
from scipy.sparse import csr_matrix

#: ``MilpOutcome.status`` when the solver process was stopped at the hard deadline.
KILLED = -1
#: Models with at least this many variables are solved in a separate process by default.
ISOLATE_FROM_VARIABLES = 5000


@dataclass(frozen=True)
class MilpOutcome:
    """What came back: scipy's milp status (or KILLED), the solution if any, the bound."""

    status: int
    x: np.ndarray | None
    message: str
    dual_bound: float | None


@dataclass(frozen=True)
class MilpProblem:
    """min c.x  s.t.  row_lb <= A x <= row_ub,  lb <= x <= ub,  x integral where flagged."""

    c: np.ndarray
    integrality: np.ndarray
    lb: np.ndarray
    ub: np.ndarray
    a: csr_matrix
    row_lb: np.ndarray
    row_ub: np.ndarray

    @property
    def n_vars(self) -> int:
        return len(self.c)


def solve_milp(
    problem: MilpProblem,
    *,
    time_limit: float | None,
    mip_rel_gap: float | None = None,
    isolate: bool | None = None,
) -> MilpOutcome:
    """Solve with HiGHS; with a time limit and ``isolate`` (default: big models), the
    solve runs in a child process that is terminated a little after ``time_limit``."""
    options: dict[str, Any] = {"presolve": True}
    if time_limit is not None:
        options["time_limit"] = max(float(time_limit), 0.0)
    if mip_rel_gap is not None:
        options["mip_rel_gap"] = float(mip_rel_gap)
    if isolate is None:
        isolate = problem.n_vars >= ISOLATE_FROM_VARIABLES
    if time_limit is None or not isolate:
        return _solve_interruptibly(problem, options)
    return _solve_in_child(problem, options, deadline=time_limit + 2.0 + 0.1 * time_limit)


def _solve(problem: MilpProblem, options: dict[str, Any]) -> MilpOutcome:
    constraints = [LinearConstraint(problem.a, problem.row_lb, problem.row_ub)]
    res = milp(
        problem.c,
        integrality=problem.integrality,
        bounds=Bounds(problem.lb, problem.ub),
        constraints=constraints,
        options=options,
    )
    bound = getattr(res, "mip_dual_bound", None)
    return MilpOutcome(int(res.status), res.x, str(res.message), bound)


def _solve_interruptibly(problem: MilpProblem, options: dict[str, Any]) -> MilpOutcome:
    """`_solve` in a worker thread. HiGHS releases the GIL but never looks at signals,
    so in the main thread a Ctrl-C would wait for the whole solve; the main thread only
    waits here and gets the KeyboardInterrupt at once. The abandoned solve (a daemon
    thread) runs on to its time limit: see `abandoned_solve_running`."""
    if threading.current_thread() is not threading.main_thread():
        return _solve(problem, options)
    outcome: list[MilpOutcome] = []
    failure: list[BaseException] = []
    done = threading.Event()

    def work() -> None:
        try:
            outcome.append(_solve(problem, options))
        except BaseException as err:  # handed to the caller's thread
            failure.append(err)
        finally:
            done.set()

    threading.Thread(target=work, name="highs", daemon=True).start()
    try:
        while not done.wait(0.1):
            pass
    except BaseException:
        _ABANDONED.append(done)
        raise
    if failure:
        raise failure[0]
    return outcome[0]


# Solves left running by a Ctrl-C (their `done` events).
_ABANDONED: list[threading.Event] = []


def abandoned_solve_running() -> bool:
    """Whether a solve left behind by a Ctrl-C still runs. A process exiting then can
    be aborted by HiGHS ("terminate called without an active exception", exit code
    134, seen under pytest), so the CLI ends such a process with os._exit."""
    return any(not done.is_set() for done in _ABANDONED)


def _solve_in_child(problem: MilpProblem, options: dict[str, Any], deadline: float) -> MilpOutcome:
    # A plain subprocess (not multiprocessing) so the caller's __main__ is never re-imported.
    package_root = str(Path(__file__).resolve().parents[2])
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [package_root, env.get("PYTHONPATH")]))
    payload = pickle.dumps((problem, options), protocol=pickle.HIGHEST_PROTOCOL)
    with tempfile.TemporaryFile() as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "eqsat.extract.highs_run"],
            stdin=subprocess.PIPE,
            stdout=out,
            stderr=subprocess.DEVNULL,
            env=env,
        )
        try:
            proc.communicate(payload, timeout=deadline)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            return MilpOutcome(
                KILLED, None, f"stopped at the hard deadline of {deadline:.1f} s", None
            )
        except BaseException:  # Ctrl-C: the solver must not outlive the command
            proc.kill()
            proc.wait()
            raise
        out.seek(0)
        data = out.read()
    if proc.returncode != 0 or not data:
        return MilpOutcome(4, None, f"solver process failed (exit code {proc.returncode})", None)
    status, x, message, bound = pickle.loads(data)
    return MilpOutcome(status, x, message, bound)


def _child_main() -> None:
    problem, options = pickle.load(sys.stdin.buffer)
    got = _solve(problem, options)
    answer = (got.status, got.x, got.message, got.dual_bound)  # plain types: __main__ here
    sys.stdout.buffer.write(pickle.dumps(answer, protocol=pickle.HIGHEST_PROTOCOL))
    sys.stdout.buffer.flush()


if __name__ == "__main__":
    _child_main()
