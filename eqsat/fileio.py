"""Outputs are written whole or not at all: write to a temporary file, then rename.

A model's tensors live next to its text: NAME.model -> NAME.params.npz."""

from __future__ import annotations

import io
import os
import signal
import sys
import tempfile
import threading
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from eqsat.errors import UserError, closest_name
from eqsat.ir.types import DType, TensorType
from eqsat.npz import (
    NUMBER_KINDS,
    ArrayFileError,
    MemberHeader,
    describe_shape,
    iter_arrays,
    open_npz,
    read_headers,
)


def current_umask() -> int:
    """The process's umask (reading it means setting it: set and restored at once)."""
    mask = os.umask(0o077)
    os.umask(mask)
    return mask


def is_special_file(path: Path) -> bool:
    """A device or a pipe: something that exists but is neither a file nor a folder."""
    return path.exists() and not path.is_file() and not path.is_dir()


def write_atomic(path: str | Path, data: bytes | str) -> None:
    """Write `data` to a temporary file beside `path`, then rename it over `path`: the
    file is whole or absent. It gets the mode a plain open() would (0666 & ~umask);
    mkstemp alone would leave it 0600."""
    path = Path(path)
    payload = data.encode("utf-8") if isinstance(data, str) else data
    if is_special_file(path):
        # a device or a pipe (-o /dev/null, -o /dev/stdout): written to, never replaced
        with open(path, "wb") as f:
            f.write(payload)
        return
    directory = path.parent if str(path.parent) else Path(".")
    if not directory.is_dir():
        raise UserError(f"{path}: cannot write: directory '{directory}' does not exist")
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=directory)
    try:
        os.fchmod(fd, 0o666 & ~current_umask())
        with os.fdopen(fd, "wb") as f:
            f.write(payload)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


@contextmanager
def interrupts_deferred() -> Iterator[None]:
    """Hold Ctrl-C back while files that belong together are renamed into place: a
    SIGINT during the block is recorded and raised as KeyboardInterrupt after it, never
    between two renames. Python runs signal handlers in the main thread only; elsewhere
    this does nothing."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    received: list[int] = []
    previous = signal.signal(signal.SIGINT, lambda signum, frame: received.append(signum))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous if previous is not None else signal.SIG_DFL)
    if received and callable(previous):
        previous(signal.SIGINT, None)  # Python's default handler raises KeyboardInterrupt


# bf16 is not a numpy-native dtype: .npz files store it as uint16 bits under a
# suffixed key so that any numpy can read the file and we can restore it exactly.
_BF16_SUFFIX = ".bf16bits"


def save_arrays(path: str | Path, arrays: Mapping[str, np.ndarray]) -> None:
    stored = {}
    for name, value in arrays.items():
        value = np.asarray(value)
        if value.dtype == DType.BF16.np_dtype:
            stored[name + _BF16_SUFFIX] = value.view(np.uint16)
        else:
            stored[name] = value
    buf = io.BytesIO()
    np.savez(buf, **stored)
    write_atomic(path, buf.getvalue())


@dataclass(frozen=True)
class ArraySpec:
    """What a model accepts under one name: the shape, the numpy dtype kinds, and
    whether N samples may be stacked on a leading axis (calibration files)."""

    shape: tuple[int, ...] | None  # None: any shape (within the size limits)
    kinds: str = NUMBER_KINDS
    samples: bool = False

    def accepts(self, shape: tuple[int, ...]) -> bool:
        if self.shape is None or shape == self.shape:
            return True
        return self.samples and len(shape) == len(self.shape) + 1 and shape[1:] == self.shape

    def describe(self) -> str:
        if self.shape is None:
            return "any shape"
        dims = ", ".join(map(str, self.shape))
        return f"[{dims}] or [N, {dims}]" if self.samples else f"[{dims}]"


def spec_for(t: TensorType, samples: bool = False) -> ArraySpec:
    """A model type as an ArraySpec: floats need floats (converted between widths),
    integers take integers or bools (range-checked when bound)."""
    return ArraySpec(tuple(t.shape), "f" if t.dtype.is_float else "iub", samples)


Warn = Callable[[str], None]


def print_warning(message: str) -> None:
    """The commands' Warn: the message on stderr, at once."""
    print(message, file=sys.stderr, flush=True)


_LISTED_NAMES = 20


def load_arrays(
    path: str | Path,
    expected: Mapping[str, ArraySpec] | None = None,
    *,
    allow_extra: bool = False,
    warn: Warn | None = None,
    what: str = "input or param of the model",
) -> dict[str, np.ndarray]:
    """The arrays of an .npz file, read as untrusted data (eqsat/npz.py).

    With `expected` (name -> ArraySpec), each member's declared shape and dtype are
    checked against it before anything is allocated, and a member whose name matches
    nothing there is an error, or with `allow_extra` a warning through `warn` (it is
    then not read). With `warn`, NaN and Inf values in float arrays are reported."""
    extra: set[str] = set()

    def check(header: MemberHeader) -> None:
        name = _key(header.name)
        if expected is None:
            return
        if name in expected:
            _check_declared(path, header, expected[name])
            return
        message = _unknown_member(path, header.name, name, expected, what)
        if not allow_extra:
            raise ArrayFileError(f"{message}; --allow-extra ignores it")
        if warn is not None:
            warn(f"warning: {message}; ignored")
        extra.add(header.name)

    with open_npz(path) as archive:
        headers = read_headers(archive, path, check)
        wanted = [h for h in headers if h.name not in extra]
        out = {
            _key(h.name): _restore(path, h.name, a) for h, a in iter_arrays(archive, wanted, path)
        }
    if warn is not None:
        warn_nonfinite(out, str(path), warn)
    return out


def _key(member: str) -> str:
    return member[: -len(_BF16_SUFFIX)] if member.endswith(_BF16_SUFFIX) else member


def _restore(path: str | Path, member: str, value: np.ndarray) -> np.ndarray:
    if member.endswith(_BF16_SUFFIX):
        if value.dtype != np.uint16:
            raise ArrayFileError(
                f"{path}: member '{member}' must hold uint16 bits, got {value.dtype}"
            )
        return value.view(DType.BF16.np_dtype)
    return value


def _check_declared(path: str | Path, header: MemberHeader, spec: ArraySpec) -> None:
    kind = "f" if header.name.endswith(_BF16_SUFFIX) else header.dtype.kind
    if not spec.accepts(header.shape):
        raise ArrayFileError(
            f"{path}: member '{header.name}' must have shape {spec.describe()}, got "
            f"{describe_shape(header.shape)}"
        )
    if kind not in spec.kinds:
        wants = "floating-point" if spec.kinds == "f" else "integer or bool"
        raise ArrayFileError(
            f"{path}: member '{header.name}' must hold {wants} values, got {header.dtype.name}"
        )


def _unknown_member(
    path: str | Path, member: str, name: str, expected: Mapping[str, ArraySpec], what: str
) -> str:
    names = sorted(expected)
    guess = closest_name(name, names)
    listed = ", ".join(names[:_LISTED_NAMES]) or "none"
    if len(names) > _LISTED_NAMES:
        listed += f", ... ({len(names) - _LISTED_NAMES} more)"
    hint = f" (did you mean '{guess}'?)" if guess else ""
    return f"{path}: member '{member}' matches no {what}{hint}; its names: {listed}"


def warn_nonfinite(arrays: Mapping[str, np.ndarray], where: str, warn: Warn) -> None:
    """One warning per float array holding NaN or Inf, with the counts."""
    for name, value in arrays.items():
        if value.dtype == DType.BF16.np_dtype:
            value = value.astype(np.float32)  # exact
        elif value.dtype.kind != "f":
            continue
        nans = int(np.count_nonzero(np.isnan(value)))
        infs = int(np.count_nonzero(np.isinf(value)))
        if nans or infs:
            counts = " and ".join(
                f"{n:,} {label}" for n, label in ((nans, "NaN"), (infs, "Inf")) if n
            )
            warn(f"warning: {where}: '{name}' holds {counts} of {value.size:,} values")


PARAMS_SUFFIX = ".params.npz"


def params_file_for(model_path: str | Path) -> Path:
    """NAME.model -> NAME.params.npz (also for OUT.asm and NAME.onnx)."""
    p = Path(model_path)
    return p.with_name(p.stem + PARAMS_SUFFIX)


def write_model_files(path: str | Path, text: str, arrays: Mapping[str, np.ndarray]) -> Path | None:
    """Model text at `path` and its arrays (if any) at NAME.params.npz, both written
    whole or not at all (the arrays are staged first, then both are renamed)."""
    path = Path(path)
    if not arrays or is_special_file(path):
        # a device or a pipe (-o /dev/null) takes the text; no NAME.params.npz beside it
        write_atomic(path, text)
        return None
    params_path = params_file_for(path)
    directory = params_path.parent if str(params_path.parent) else Path(".")
    if not directory.is_dir():
        raise UserError(f"{path}: cannot write: directory '{directory}' does not exist")
    fd, staged = tempfile.mkstemp(prefix=f".{params_path.name}.", suffix=".npz", dir=directory)
    os.close(fd)
    try:
        save_arrays(staged, arrays)
        with interrupts_deferred():
            write_atomic(path, text)
            os.replace(staged, params_path)
    except BaseException:
        Path(staged).unlink(missing_ok=True)
        raise
    return params_path
