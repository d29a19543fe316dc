"""Run HiGHS (through highspy) on a MILP, warm-started, under a hard wall-clock limit.

The model is handed to HiGHS with a known feasible solution (``MilpProblem.start``,
greedy's extraction) as its MIP start, so the search begins with an incumbent and
its cutoff. Every improving solution HiGHS finds is reported through a callback.

HiGHS checks its ``time_limit`` only between phases: on a hard 11k-variable
extraction its root node ran 27 s under a 10 s limit. Big models are therefore
solved in a child Python process that is killed at the deadline; the child streams
each improving solution to the parent as it is found, so a killed solve still
returns its best incumbent. Small ones are solved in-process, where the start-up
cost of a process (about half a second) would dominate.
"""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import highspy
import numpy as np
from scipy.sparse import csc_matrix, csr_matrix

#: ``MilpOutcome.status`` values (scipy.optimize.milp's numbering, plus KILLED).
OPTIMAL_STATUS, LIMIT_STATUS, INFEASIBLE_STATUS, UNBOUNDED_STATUS, OTHER_STATUS = 0, 1, 2, 3, 4
#: ``MilpOutcome.status`` when the solver process was stopped at the hard deadline.
KILLED = -1
#: Models with at least this many variables are solved in a separate process by default.
ISOLATE_FROM_VARIABLES = 5000

_LIMITS = {
    highspy.HighsModelStatus.kTimeLimit,
    highspy.HighsModelStatus.kIterationLimit,
    highspy.HighsModelStatus.kSolutionLimit,
    highspy.HighsModelStatus.kInterrupt,
}
_INFEASIBLE = {highspy.HighsModelStatus.kInfeasible}
_UNBOUNDED = {highspy.HighsModelStatus.kUnbounded, highspy.HighsModelStatus.kUnboundedOrInfeasible}


@dataclass(frozen=True)
class MilpOutcome:
    """What came back: a status (see above), the best solution if any, and its
    objective (``primal_bound``) next to the best proven lower bound (``dual_bound``)."""

    status: int
    x: np.ndarray | None
    message: str
    dual_bound: float | None
    primal_bound: float | None = None


@dataclass(frozen=True)
class MilpProblem:
    """min c.x  s.t.  row_lb <= A x <= row_ub,  lb <= x <= ub,  x integral where flagged.

    ``start``: a feasible point handed to HiGHS as its MIP start (optional)."""

    c: np.ndarray
    integrality: np.ndarray
    lb: np.ndarray
    ub: np.ndarray
    a: csr_matrix
    row_lb: np.ndarray
    row_ub: np.ndarray
    start: np.ndarray | None = None

    @property
    def n_vars(self) -> int:
        return len(self.c)


#: Called with (solution, objective, lower bound) each time HiGHS finds a better
#: integer solution.
IncumbentSink = Callable[[np.ndarray, float, float], None]


def solve_milp(
    problem: MilpProblem,
    *,
    time_limit: float | None,
    mip_rel_gap: float | None = None,
    isolate: bool | None = None,
) -> MilpOutcome:
    """Solve with HiGHS; with a time limit and ``isolate`` (default: big models), the
    solve runs in a child process that is terminated a little after ``time_limit``,
    and the best incumbent it had reported is returned."""
    options: dict[str, Any] = {"presolve": "on"}
    if time_limit is not None:
        options["time_limit"] = max(float(time_limit), 0.0)
    if mip_rel_gap is not None:
        options["mip_rel_gap"] = float(mip_rel_gap)
    if isolate is None:
        isolate = problem.n_vars >= ISOLATE_FROM_VARIABLES
    if time_limit is None or not isolate:
        return _solve_interruptibly(problem, options)
    return _solve_in_child(problem, options, deadline=time_limit + 2.0 + 0.1 * time_limit)


def _highs_model(problem: MilpProblem) -> highspy.HighsLp:
    lp = highspy.HighsLp()
    n_rows, n_cols = problem.a.shape
    lp.num_col_ = n_cols
    lp.num_row_ = n_rows
    lp.col_cost_ = np.asarray(problem.c, dtype=np.float64)
    lp.col_lower_ = np.asarray(problem.lb, dtype=np.float64)
    lp.col_upper_ = np.asarray(problem.ub, dtype=np.float64)
    inf = highspy.kHighsInf
    lp.row_lower_ = np.clip(np.asarray(problem.row_lb, dtype=np.float64), -inf, inf)
    lp.row_upper_ = np.clip(np.asarray(problem.row_ub, dtype=np.float64), -inf, inf)
    matrix = csc_matrix(problem.a)
    matrix.sort_indices()
    lp.a_matrix_.format_ = highspy.MatrixFormat.kColwise
    lp.a_matrix_.num_col_ = n_cols
    lp.a_matrix_.num_row_ = n_rows
    lp.a_matrix_.start_ = matrix.indptr.astype(np.int32)
    lp.a_matrix_.index_ = matrix.indices.astype(np.int32)
    lp.a_matrix_.value_ = matrix.data.astype(np.float64)
    kinds = (highspy.HighsVarType.kContinuous, highspy.HighsVarType.kInteger)
    lp.integrality_ = [kinds[int(flag != 0)] for flag in problem.integrality]
    return lp


_BANNER_SHOWN = False


def _new_highs() -> Any:
    """A Highs instance, quiet. HiGHS 1.16 prints a banner on the process's stdout (fd 1)
    the first time one is constructed, before any option can turn output off: that
    first construction runs with fd 1 pointed at /dev/null (the child process's frames
    and eqsat's own output go to stdout)."""
    global _BANNER_SHOWN
    if _BANNER_SHOWN:
        return highspy.Highs()
    sys.stdout.flush()
    saved = os.dup(1)
    null = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(null, 1)
        highs = highspy.Highs()
    finally:
        os.dup2(saved, 1)
        os.close(saved)
        os.close(null)
    _BANNER_SHOWN = True
    return highs


def _solve(
    problem: MilpProblem, options: dict[str, Any], on_incumbent: IncumbentSink | None = None
) -> MilpOutcome:
    highs = _new_highs()
    highs.setOptionValue("output_flag", False)
    for name, value in options.items():
        highs.setOptionValue(name, value)
    highs.passModel(_highs_model(problem))
    if problem.start is not None:
        start = highspy.HighsSolution()
        start.col_value = np.asarray(problem.start, dtype=np.float64).tolist()
        start.value_valid = True
        highs.setSolution(start)
    if on_incumbent is not None:

        def improved(kind: int, message: str, out: Any, data_in: Any, user: Any) -> None:
            x = np.array(out.mip_solution, dtype=np.float64)
            on_incumbent(x, float(out.objective_function_value), float(out.mip_dual_bound))

        highs.setCallback(improved, None)
        highs.startCallback(highspy.cb.HighsCallbackType.kCallbackMipImprovingSolution)
    highs.run()
    model_status = highs.getModelStatus()
    info = highs.getInfo()
    message = highs.modelStatusToString(model_status)
    if model_status == highspy.HighsModelStatus.kOptimal:
        status = OPTIMAL_STATUS
    elif model_status in _LIMITS:
        status = LIMIT_STATUS
    elif model_status in _INFEASIBLE:
        status = INFEASIBLE_STATUS
    elif model_status in _UNBOUNDED:
        status = UNBOUNDED_STATUS
    else:
        status = OTHER_STATUS
    has_solution = info.primal_solution_status == 2  # kSolutionStatusFeasible
    x = np.array(highs.getSolution().col_value, dtype=np.float64) if has_solution else None
    dual = float(info.mip_dual_bound) if np.isfinite(info.mip_dual_bound) else None
    primal = float(info.objective_function_value) if has_solution else None
    return MilpOutcome(status, x, message, dual, primal)


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


# Frames the child writes, one pickle each: an improving solution, then the final outcome.
_INCUMBENT, _FINAL = "incumbent", "final"


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
            out.seek(0)
            best = _last_incumbent(out)
            if best is None and problem.start is not None:  # the start is an incumbent too
                start = np.asarray(problem.start, dtype=np.float64)
                best = (start, float(np.dot(problem.c, start)), -np.inf)
            message = f"stopped at the hard deadline of {deadline:.1f} s"
            if best is None:
                return MilpOutcome(KILLED, None, message, None)
            x, objective, dual = best
            dual_bound = dual if np.isfinite(dual) else None
            return MilpOutcome(KILLED, x, f"{message}; best incumbent kept", dual_bound, objective)
        except BaseException:  # Ctrl-C: the solver must not outlive the command
            proc.kill()
            proc.wait()
            raise
        out.seek(0)
        frames = _frames(out)
    final = [f for f in frames if f[0] == _FINAL]
    if proc.returncode != 0 or not final:
        return MilpOutcome(
            OTHER_STATUS, None, f"solver process failed (exit code {proc.returncode})", None
        )
    _, status, x, message, dual, primal = final[-1]
    return MilpOutcome(status, x, message, dual, primal)


def _frames(stream: IO[bytes]) -> list[tuple[Any, ...]]:
    """Every complete pickle frame in ``stream``; a frame cut short by a kill ends the list."""
    frames = []
    while True:
        try:
            frames.append(pickle.load(stream))
        except (EOFError, pickle.UnpicklingError, ValueError, TypeError):
            return frames


def _last_incumbent(stream: IO[bytes]) -> tuple[np.ndarray, float, float] | None:
    found = [f for f in _frames(stream) if f[0] == _INCUMBENT]
    if not found:
        return None
    _, x, objective, dual = found[-1]
    return x, objective, dual


def _child_main() -> None:
    problem, options = pickle.load(sys.stdin.buffer)
    sink = sys.stdout.buffer

    def report(x: np.ndarray, objective: float, dual: float) -> None:
        frame = (_INCUMBENT, x, objective, dual)
        sink.write(pickle.dumps(frame, protocol=pickle.HIGHEST_PROTOCOL))
        sink.flush()

    got = _solve(problem, options, report)
    answer = (_FINAL, got.status, got.x, got.message, got.dual_bound, got.primal_bound)
    sink.write(pickle.dumps(answer, protocol=pickle.HIGHEST_PROTOCOL))
    sink.flush()


if __name__ == "__main__":
    _child_main()
