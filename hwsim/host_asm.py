"""The host program as text, and back: `.host NAME` with its control, then each
device program's assembly under `.program NAME` (hwsim/asm.py's format).

    .host early_exit
      run stage0 (x=x, w1=w1) -> (h1=h1[1,128], confident=confident[])
      if readback(confident) {
      } else {
        run if1_else (h1=h1, w2=w2^[1,0]) -> (if1_else.yield_0=yield_0[1,10])
      }
      probs = early | if1_else.yield_0
      loop trips=8 cond=True h=h0 index=i {
        run loop0_body (h=h, i=i) -> (loop0_body.yield_0=yield_0[], ...)
        next cond=readback(loop0_body.yield_0) h=loop0_body.yield_1
      }
      last = h
      output probs, last

A feed is `BUFFER=VALUE` (`^[PERM]`: transposed first; `=0`: zeros), a result
`VALUE=BUFFER[SHAPE]`; `readback(V)` is a value the host reads back from DRAM, `True`,
`False` and numbers are known at compile time.
"""

from __future__ import annotations

import re

import numpy as np

from .asm import AsmError, parse
from .asm_format import format_program
from .host import Branch, Feed, HostProgram, HostStep, Repeat, Result, Run

_NAME = r"[A-Za-z_][\w.:]*"
_DTYPE_NAMES = {"float32": "f32", "bfloat16": "bf16", "int8": "i8", "int32": "i32"}
_NP_TYPES = {"f32": np.float32, "bf16": np.float32, "i8": np.int8, "i32": np.int32}
_CONST = re.compile(rf"const ({_NAME}) (f32|bf16|i8|i32) \[([\d,]*)\] = (.*)$")


def _ints(values) -> str:
    return "[" + ",".join(str(v) for v in values) + "]"


def _flag(value: str | bool) -> str:
    return str(value) if isinstance(value, bool) else f"readback({value})"


def format_host(program: HostProgram) -> str:
    lines = [f".host {program.name}"]
    for name, value in program.constants.items():
        flat = np.asarray(value).reshape(-1)
        dtype = _DTYPE_NAMES.get(np.asarray(value).dtype.name, "f32")
        text = ", ".join(repr(float(v)) if dtype in ("f32", "bf16") else str(int(v)) for v in flat)
        lines.append(f"  const {name} {dtype} {_ints(np.shape(value))} = {text}")
    _format_steps(program.steps, lines, "  ")
    lines.append("  output " + ", ".join(program.outputs))
    return "\n".join(lines) + "\n"


def _format_steps(steps: tuple[HostStep, ...], lines: list[str], indent: str) -> None:
    for step in steps:
        if isinstance(step, Run):
            feeds = ", ".join(
                f"{f.buffer}={f.value or '0'}" + (f"^{_ints(f.perm)}" if f.perm else "")
                for f in step.feeds
            )
            results = ", ".join(f"{r.value}={r.buffer}{_ints(r.shape)}" for r in step.results)
            lines.append(f"{indent}run {step.program} ({feeds}) -> ({results})")
        elif isinstance(step, Branch):
            lines.append(f"{indent}if {_flag(step.cond)} {{")
            _format_steps(step.then, lines, indent + "  ")
            lines.append(f"{indent}}} else {{")
            _format_steps(step.orelse, lines, indent + "  ")
            lines.append(f"{indent}}}")
            lines += [f"{indent}{r} = {a} | {b}" for r, a, b in step.results]
        else:
            trips = step.trips if isinstance(step.trips, int) else _flag(step.trips)
            head = [f"trips={trips}", f"cond={_flag(step.cond)}"]
            head += [f"{inner}={init}" for inner, init in step.carried]
            head += [f"index={step.index}"] if step.index else []
            lines.append(f"{indent}loop {' '.join(head)} {{")
            _format_steps(step.body, lines, indent + "  ")
            nexts = " ".join(
                f"{inner}={v}" for (inner, _), v in zip(step.carried, step.next_values, strict=True)
            )
            lines.append(
                f"{indent}  next cond={_flag(step.next_cond)}" + (f" {nexts}" if nexts else "")
            )
            lines.append(f"{indent}}}")
            lines += [f"{indent}{r} = {inner}" for r, inner in step.results]


def format_host_program(program: HostProgram) -> str:
    """Host control, then each device program's assembly under a `.program` header."""
    parts = [format_host(program)]
    for name, prog in program.programs.items():
        parts.append(f".program {name}\n" + format_program(prog))
    return "\n".join(parts)


def is_host_text(text: str) -> bool:
    first = next((line.strip() for line in text.splitlines() if line.strip()), "")
    return first.startswith(".host ")


_RUN = re.compile(rf"run ({_NAME}) \((.*)\) -> \((.*)\)$")
_FEED = re.compile(rf"({_NAME})=({_NAME}|0)(?:\^\[([\d,]*)\])?$")
_RESULT = re.compile(rf"({_NAME})=({_NAME})\[([\d,]*)\]$")
_FLAG = re.compile(rf"readback\(({_NAME})\)$")
_ASSIGN = re.compile(rf"({_NAME}) = ({_NAME})(?: \| ({_NAME}))?$")


class _Parser:
    def __init__(self, lines: list[tuple[int, str]], filename: str):
        self.lines = lines
        self.pos = 0
        self.filename = filename

    def error(self, lineno: int, msg: str) -> AsmError:
        return AsmError(f"{self.filename}:{lineno}:1: error: {msg}")

    def flag(self, text: str, lineno: int, ints: bool = False) -> str | bool | int:
        if text in ("True", "False"):
            return text == "True"
        if ints and text.isdigit():
            return int(text)
        m = _FLAG.match(text)
        if m is None:
            raise self.error(lineno, f"expected readback(NAME), True or False, got '{text}'")
        return m[1]

    def steps(self, closers: tuple[str, ...]) -> tuple[list[HostStep], str, int]:
        out: list[HostStep] = []
        while self.pos < len(self.lines):
            lineno, text = self.lines[self.pos]
            if text in closers or text.startswith(closers):
                self.pos += 1
                return out, text, lineno
            self.pos += 1
            if text.startswith("run "):
                out.append(self.run(text, lineno))
            elif text.startswith("if ") and text.endswith("{"):
                out.append(self.branch(text, lineno))
            elif text.startswith("loop ") and text.endswith("{"):
                out.append(self.loop(text, lineno))
            else:
                raise self.error(lineno, f"expected run, if, loop or {closers[0]}, got '{text}'")
        raise self.error(self.lines[-1][0] if self.lines else 1, f"missing '{closers[0]}'")

    def run(self, text: str, lineno: int) -> Run:
        m = _RUN.match(text)
        if m is None:
            raise self.error(
                lineno, "expected 'run NAME (BUF=VALUE, ...) -> (VALUE=BUF[SHAPE], ...)'"
            )
        feeds = []
        for part in filter(None, m[2].split(", ")):
            f = _FEED.match(part)
            if f is None:
                raise self.error(lineno, f"bad feed '{part}' (BUF=VALUE, BUF=VALUE^[PERM], BUF=0)")
            perm = tuple(int(v) for v in f[3].split(",") if v) if f[3] is not None else None
            feeds.append(Feed(f[1], None if f[2] == "0" else f[2], perm or None))
        results = []
        for part in filter(None, m[3].split(", ")):
            r = _RESULT.match(part)
            if r is None:
                raise self.error(lineno, f"bad result '{part}' (VALUE=BUF[SHAPE])")
            results.append(Result(r[1], r[2], tuple(int(v) for v in r[3].split(",") if v)))
        return Run(m[1], tuple(feeds), tuple(results))

    def assigns(self, three: bool) -> list[tuple[str, ...]]:
        out = []
        while self.pos < len(self.lines):
            _lineno, text = self.lines[self.pos]
            m = _ASSIGN.match(text)
            if m is None or (m[3] is not None) != three:
                break
            out.append((m[1], m[2], m[3]) if three else (m[1], m[2]))
            self.pos += 1
        return out

    def branch(self, text: str, lineno: int) -> Branch:
        cond = self.flag(text[3:-1].strip(), lineno)
        then, _, _ = self.steps(("} else {",))
        orelse, _, _ = self.steps(("}",))
        return Branch(cond, tuple(then), tuple(orelse), tuple(self.assigns(True)))  # type: ignore[arg-type]

    def loop(self, text: str, lineno: int) -> Repeat:
        fields = dict(kv.split("=", 1) for kv in text[5:-1].split() if "=" in kv)
        carried = [(k, v) for k, v in fields.items() if k not in ("trips", "cond", "index")]
        if "trips" not in fields or "cond" not in fields:
            raise self.error(lineno, "expected 'loop trips=... cond=... [NAME=INIT ...] {'")
        body, last, last_no = self.steps(("next ",))
        nxt = dict(kv.split("=", 1) for kv in last[5:].replace(",", " ").split() if "=" in kv)
        if "cond" not in nxt:
            raise self.error(last_no, "expected 'next cond=... NAME=VALUE, ...'")
        close, _, _ = self.steps(("}",))
        if close:
            raise self.error(last_no, "'next' must be the last line of a loop")
        return Repeat(
            trips=self.flag(fields["trips"], lineno, ints=True),  # type: ignore[arg-type]
            cond=self.flag(fields["cond"], lineno),
            carried=tuple(carried),
            index=fields.get("index"),
            body=tuple(body),
            next_cond=self.flag(nxt["cond"], last_no),
            next_values=tuple(nxt.get(inner, inner) for inner, _ in carried),
            results=tuple(self.assigns(False)),  # type: ignore[arg-type]
        )


def parse_host_program(text: str, filename: str = "<asm>") -> HostProgram:
    """Parse a host listing (format_host_program's text); raises AsmError."""
    raw = text.splitlines()
    starts = [i for i, line in enumerate(raw) if line.startswith(".program ")]
    head = raw[: starts[0]] if starts else raw
    lines = [(i + 1, line.split("#", 1)[0].strip()) for i, line in enumerate(head)]
    lines = [(n, t) for n, t in lines if t]
    if not lines or not lines[0][1].startswith(".host "):
        raise AsmError(f"{filename}:1:1: error: expected '.host NAME'")
    name = lines[0][1][6:].strip()
    constants = {}
    body = lines[1:]
    while body and body[0][1].startswith("const "):
        lineno, text = body.pop(0)
        m = _CONST.match(text)
        if m is None:
            raise AsmError(
                f"{filename}:{lineno}:1: error: expected 'const NAME DTYPE [SHAPE] = V, ...'"
            )
        shape = tuple(int(v) for v in m[3].split(",") if v)
        try:
            flat = np.array([float(v) for v in m[4].split(",")], dtype=np.float64)
            constants[m[1]] = flat.astype(_NP_TYPES[m[2]]).reshape(shape)
        except ValueError as err:
            raise AsmError(f"{filename}:{lineno}:1: error: const '{m[1]}': {err}") from None
    p = _Parser(body, filename)
    steps, last, _lineno = p.steps(("output ",))
    outputs = tuple(v.strip() for v in last[7:].split(",") if v.strip())
    if p.pos != len(p.lines):
        raise p.error(p.lines[p.pos][0], "nothing may follow 'output'")
    programs = {}
    for k, start in enumerate(starts):
        end = starts[k + 1] if k + 1 < len(starts) else len(raw)
        prog_name = raw[start][9:].strip()
        body = "\n" * (start + 1) + "\n".join(raw[start + 1 : end])
        programs[prog_name] = parse(body, filename)
    host = HostProgram(name, programs, tuple(steps), outputs, constants)
    for run in _runs(host.steps):
        if run.program not in programs:
            raise AsmError(f"{filename}:1:1: error: no '.program {run.program}' section")
    return host


def _runs(steps):
    for step in steps:
        if isinstance(step, Run):
            yield step
        elif isinstance(step, Branch):
            yield from _runs(step.then)
            yield from _runs(step.orelse)
        else:
            yield from _runs(step.body)
