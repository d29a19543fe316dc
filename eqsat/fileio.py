"""Outputs are written whole or not at all: write to a temporary file, then rename.

A model's tensors live next to its text: NAME.model -> NAME.params.npz."""

from __future__ import annotations

import io
import os
import tempfile
from collections.abc import Mapping
from pathlib import Path

import numpy as np

from eqsat.errors import UserError
from eqsat.ir.types import DType


def write_atomic(path: str | Path, data: bytes | str) -> None:
    path = Path(path)
    payload = data.encode("utf-8") if isinstance(data, str) else data
    directory = path.parent if str(path.parent) else Path(".")
    if not directory.is_dir():
        raise UserError(f"{path}: cannot write: directory '{directory}' does not exist")
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=directory)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(payload)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


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


def load_arrays(path: str | Path) -> dict[str, np.ndarray]:
    try:
        with np.load(path, allow_pickle=False) as data:
            raw = {k: data[k] for k in data.files}
    except FileNotFoundError:
        raise UserError(f"{path}: no such file") from None
    except (OSError, ValueError) as err:
        raise UserError(f"{path}: not a readable .npz file ({err})") from None
    out = {}
    for key, value in raw.items():
        if key.endswith(_BF16_SUFFIX):
            out[key[: -len(_BF16_SUFFIX)]] = value.view(DType.BF16.np_dtype)
        else:
            if value.dtype.kind not in "fiub":  # numbers and bools; what uses it checks more
                raise UserError(f"{path}: array '{key}' has unsupported dtype {value.dtype}")
            out[key] = value
    return out


PARAMS_SUFFIX = ".params.npz"


def params_file_for(model_path: str | Path) -> Path:
    """NAME.model -> NAME.params.npz (also for OUT.asm and NAME.onnx)."""
    p = Path(model_path)
    return p.with_name(p.stem + PARAMS_SUFFIX)


def write_model_files(path: str | Path, text: str, arrays: Mapping[str, np.ndarray]) -> Path | None:
    """Model text at `path` and its arrays (if any) at NAME.params.npz, both written
    whole or not at all (the arrays are staged first, then both are renamed)."""
    path = Path(path)
    if not arrays:
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
        write_atomic(path, text)
        os.replace(staged, params_path)
    except BaseException:
        Path(staged).unlink(missing_ok=True)
        raise
    return params_path
