""".npz files read as untrusted data.

An .npz is a zip of .npy members. `numpy.load` trusts both layers: a member's header
may declare any shape (numpy allocates it before reading a byte), a deflated member
may expand far beyond what it holds, and a damaged file surfaces as EOFError,
BadZipFile or worse. Here everything is checked on the zip directory and each
member's .npy header first; an array is allocated only once its dtype, shape and byte
size agree with the member's declared size, the limits and (when given) what the
model expects. Every error names the file and the member.
"""

from __future__ import annotations

import math
import zipfile
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

import numpy as np

from eqsat.errors import UserError
from eqsat.interpreter import MAX_TENSOR_BYTES

NPY_MAGIC = b"\x93NUMPY"
# A zip starts with a local file header; an empty archive is only its end record.
ZIP_MAGICS = (b"PK\x03\x04", b"PK\x05\x06")
# numpy kinds an array file may hold: floats, signed and unsigned integers, bools.
NUMBER_KINDS = "fiub"
_CHUNK = 1 << 20


class ArrayFileError(UserError):
    """An array file that is not a well-formed .npz of number arrays."""


@dataclass(frozen=True)
class MemberHeader:
    """One .npy member as its header declares it (nothing allocated yet)."""

    info: zipfile.ZipInfo
    name: str  # the member name without ".npy": the array's key
    dtype: np.dtype
    shape: tuple[int, ...]
    fortran_order: bool
    header_bytes: int  # magic + header: where the data starts

    @property
    def nbytes(self) -> int:
        return math.prod(self.shape) * self.dtype.itemsize


def describe_shape(shape: tuple[int, ...]) -> str:
    return "[" + ", ".join(map(_describe_dim, shape)) + "]"


def _brief(err: BaseException) -> str:
    """An exception's text, cut short: numpy's header errors quote the whole header."""
    text = str(err)
    return text if len(text) <= 120 else text[:117] + "..."


def _count(n: int) -> str:
    """A byte count with thousands separators; a header's absurd ones shortened."""
    return f"{n:,}" if len(str(n)) <= 20 else _describe_dim(n)


def _describe_dim(dim: int) -> str:
    text = str(dim)
    return text if len(text) <= 20 else f"{text[:12]}... ({len(text)} digits)"


class _Counting:
    """A read-only stream that counts what was read (ZipExtFile.tell is not always
    available, and the header's length is needed to check the member's size)."""

    def __init__(self, stream: BinaryIO):
        self.stream = stream
        self.count = 0

    def read(self, size: int = -1) -> bytes:
        data = self.stream.read(size)
        self.count += len(data)
        return data


# What zipfile and zlib raise on damaged or unsupported members.
_ZIP_ERRORS = (
    zipfile.BadZipFile,
    zlib.error,
    EOFError,
    OSError,
    ValueError,
    NotImplementedError,
    RuntimeError,
)


def open_npz(path: str | Path) -> zipfile.ZipFile:
    """The zip behind an .npz, after checking it is one (not an .npy, not empty)."""
    try:
        with open(path, "rb") as f:
            start = f.read(len(NPY_MAGIC))
    except FileNotFoundError:
        raise ArrayFileError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise ArrayFileError(f"{path}: is a directory, not an .npz file") from None
    except OSError as err:
        raise ArrayFileError(f"{path}: cannot read ({err.strerror})") from None
    if not start:
        raise ArrayFileError(f"{path}: empty file, not an .npz file")
    if start.startswith(NPY_MAGIC):
        raise ArrayFileError(
            f"{path}: a single .npy array, not an .npz file (write it with numpy.savez, "
            "naming the array)"
        )
    if not start.startswith(ZIP_MAGICS):
        raise ArrayFileError(f"{path}: not an .npz file (no zip signature)")
    try:
        return zipfile.ZipFile(path)
    except _ZIP_ERRORS as err:
        raise ArrayFileError(f"{path}: truncated or damaged .npz file ({_brief(err)})") from None


def read_headers(
    archive: zipfile.ZipFile,
    path: str | Path,
    check: Callable[[MemberHeader], None] | None = None,
) -> list[MemberHeader]:
    """Every member's declared dtype and shape, checked by `check` (what the caller
    expects) and then against the member's size and the size limits, in archive order."""
    headers: list[MemberHeader] = []
    seen: set[str] = set()
    deflated_total = 0
    for info in archive.infolist():
        member = info.filename
        if not member.endswith(".npy") or info.is_dir():
            raise ArrayFileError(f"{path}: member '{member}' is not a .npy array")
        if member in seen:
            raise ArrayFileError(f"{path}: member '{member}' appears twice")
        seen.add(member)
        header = _read_header(archive, info, path)
        member = header.name
        if check is not None:
            check(header)
        size = header.header_bytes + header.nbytes
        if header.nbytes > MAX_TENSOR_BYTES:
            raise ArrayFileError(
                f"{path}: member '{member}' declares {header.dtype.name}"
                f"{describe_shape(header.shape)}, {_count(header.nbytes)} bytes: over the limit of "
                f"{MAX_TENSOR_BYTES:,} bytes per array (EQSAT_MAX_TENSOR_BYTES)"
            )
        if info.file_size != size:
            raise ArrayFileError(
                f"{path}: member '{member}' declares {header.dtype.name}"
                f"{describe_shape(header.shape)} ({_count(size)} bytes with its header) but the "
                f"zip says it holds {info.file_size:,} bytes"
            )
        if info.compress_type != zipfile.ZIP_STORED:
            deflated_total += info.file_size
            if deflated_total > MAX_TENSOR_BYTES:
                raise ArrayFileError(
                    f"{path}: member '{member}': the compressed members expand to more than "
                    f"{MAX_TENSOR_BYTES:,} bytes (EQSAT_MAX_TENSOR_BYTES)"
                )
        headers.append(header)
    return headers


def _read_header(archive: zipfile.ZipFile, info: zipfile.ZipInfo, path: str | Path) -> MemberHeader:
    member = info.filename[: -len(".npy")]  # as numpy.savez's caller named it
    try:
        with archive.open(info) as raw:
            stream = _Counting(raw)
            magic = stream.read(len(NPY_MAGIC))
            if magic != NPY_MAGIC:
                raise ArrayFileError(f"{path}: member '{member}' is not a .npy array (no magic)")
            version = tuple(stream.read(2))
            if version == (1, 0):
                shape, fortran, dtype = np.lib.format.read_array_header_1_0(stream)
            elif version == (2, 0):
                shape, fortran, dtype = np.lib.format.read_array_header_2_0(stream)
            else:
                raise ArrayFileError(
                    f"{path}: member '{member}': unsupported .npy format version {version}"
                )
    except ArrayFileError:
        raise
    except _ZIP_ERRORS as err:
        raise ArrayFileError(
            f"{path}: member '{member}': damaged .npy header ({_brief(err)})"
        ) from None
    if any(type(d) is not int or d < 0 for d in shape):
        raise ArrayFileError(
            f"{path}: member '{member}': damaged .npy header (shape {shape!r:.80} is not "
            "a tuple of non-negative integers)"
        )
    if dtype.hasobject:
        raise ArrayFileError(f"{path}: member '{member}' holds Python objects (a pickle): refused")
    if dtype.fields is not None or dtype.subdtype is not None or dtype.kind not in NUMBER_KINDS:
        raise ArrayFileError(
            f"{path}: member '{member}' has unsupported dtype {dtype} (numbers and bools only)"
        )
    return MemberHeader(info, member, dtype, tuple(shape), fortran, stream.count)


def read_member(archive: zipfile.ZipFile, header: MemberHeader, path: str | Path) -> np.ndarray:
    """The member's array, read in chunks into an array of the declared (checked) size;
    the zip's CRC is verified on the way."""
    member = header.name
    shape = header.shape[::-1] if header.fortran_order else header.shape
    try:
        array = np.empty(shape, header.dtype)
    except MemoryError:
        raise ArrayFileError(
            f"{path}: member '{member}': cannot allocate {header.nbytes:,} bytes"
        ) from None
    buffer = memoryview(array.reshape(-1).view(np.uint8))
    filled = 0
    try:
        with archive.open(header.info) as stream:
            stream.read(header.header_bytes)
            while filled < header.nbytes:
                chunk = stream.read(min(_CHUNK, header.nbytes - filled))
                if not chunk:
                    break
                buffer[filled : filled + len(chunk)] = chunk
                filled += len(chunk)
            extra = stream.read(1)  # reaching the end checks the CRC
    except _ZIP_ERRORS as err:
        raise ArrayFileError(f"{path}: member '{member}': damaged data ({_brief(err)})") from None
    if filled != header.nbytes or extra:
        raise ArrayFileError(
            f"{path}: member '{member}': holds {'more' if extra else filled} bytes of data "
            f"where its header declares {header.nbytes:,}"
        )
    return array.T if header.fortran_order else array


def iter_arrays(
    archive: zipfile.ZipFile, headers: list[MemberHeader], path: str | Path
) -> Iterator[tuple[MemberHeader, np.ndarray]]:
    for header in headers:
        yield header, read_member(archive, header, path)


__all__ = [
    "ArrayFileError",
    "MemberHeader",
    "describe_shape",
    "iter_arrays",
    "open_npz",
    "read_headers",
    "read_member",
]
