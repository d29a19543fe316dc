"""Outputs are written whole or not at all: write to a temporary file, then rename."""

from __future__ import annotations

import io
import os
import tempfile
from collections.abc import Mapping
from pathlib import Path

import numpy as np

from eqsat.errors import UserError
from eqsat.ir.types import DType, dtype_of_array


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
            try:
                dtype_of_array(value)
            except ValueError:
                if not np.issubdtype(value.dtype, np.floating):
                    raise UserError(
                        f"{path}: array '{key}' has unsupported dtype {value.dtype}"
                    ) from None
            out[key] = value
    return out
