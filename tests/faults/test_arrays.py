"""Array files (--inputs, --calibrate, NAME.params.npz) read as untrusted data: one
loader (eqsat.fileio.load_arrays) that checks an .npz before allocating anything and
names the file and member in every error (issue 16)."""

from __future__ import annotations

import io
import struct
import zipfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from eqsat.cli import main
from eqsat.fileio import ArraySpec, load_arrays, save_arrays
from eqsat.ir.types import DType
from eqsat.npz import ArrayFileError

MODEL = """model m {
  input x: f32[2, 3]
  param w: f32[3, 4]
  y = matmul(x, w)
  output y
}
"""


@pytest.fixture
def model(tmp_path: Path) -> Path:
    path = tmp_path / "m.model"
    path.write_text(MODEL)
    return path


def npy_bytes(descr: str, shape: tuple[int, ...], data: bytes) -> bytes:
    """A .npy member whose header declares `descr`/`shape`, followed by `data` as is."""
    header = io.BytesIO()
    np.lib.format.write_array_header_1_0(
        header, {"descr": descr, "fortran_order": False, "shape": shape}
    )
    return header.getvalue() + data


def write_zip(path: Path, members: dict[str, bytes], compression=zipfile.ZIP_STORED) -> Path:
    with zipfile.ZipFile(path, "w", compression) as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return path


def error_of(path: Path, **kwargs) -> str:
    with pytest.raises(ArrayFileError) as info:
        load_arrays(path, **kwargs)
    message = str(info.value)
    assert message.startswith(f"{path}: "), message
    return message


# --- files that are not an .npz of numbers -------------------------------------------


def test_empty_file(tmp_path):
    path = tmp_path / "empty.npz"
    path.write_bytes(b"")
    assert "empty file" in error_of(path)


def test_truncated_zip(tmp_path):
    whole = tmp_path / "whole.npz"
    np.savez(whole, x=np.ones((2, 3), np.float32))
    cut = tmp_path / "cut.npz"
    cut.write_bytes(whole.read_bytes()[: whole.stat().st_size // 2])
    assert "truncated or damaged" in error_of(cut)


def test_plain_npy_given_as_npz(tmp_path):
    path = tmp_path / "plain.npz"
    with open(path, "wb") as f:
        np.save(f, np.ones(3))
    assert "a single .npy array, not an .npz" in error_of(path)


def test_not_a_zip(tmp_path):
    path = tmp_path / "text.npz"
    path.write_text("x = 1\n")
    assert "not an .npz file" in error_of(path)


def test_member_of_random_bytes(tmp_path):
    rng = np.random.default_rng(0)
    path = write_zip(tmp_path / "r.npz", {"x.npy": rng.bytes(200)})
    assert "member 'x' is not a .npy array" in error_of(path)


def test_member_with_a_damaged_header(tmp_path):
    path = write_zip(tmp_path / "h.npz", {"x.npy": b"\x93NUMPY\x01\x00\x10\x00{'descr': <f4"})
    assert "member 'x': damaged .npy header" in error_of(path)


def raw_npy(header: str) -> bytes:
    """A version 1.0 .npy prefix with `header` as its header text, unchecked."""
    text = header.encode("latin1")
    text += b" " * (64 - (10 + len(text) + 1) % 64) + b"\n"
    return b"\x93NUMPY\x01\x00" + struct.pack("<H", len(text)) + text


@pytest.mark.parametrize(
    ("shape", "descr", "says"),
    [
        ("(-1, 4)", "'<f4'", "is not a tuple of non-negative integers"),
        ("(True, 2)", "'<f4'", "is not a tuple of non-negative integers"),
        ("(" * 300 + ")" * 300, "'<f4'", "damaged .npy header"),
        ("(2,)", "'zz'", "damaged .npy header"),
        ("(2,)", "'<M8[s]'", "has unsupported dtype datetime64[s]"),
        ("(2,)", "('<f4', (2,))", "has unsupported dtype"),
        ("(" + "9" * 400 + ",)", "'<f4'", "declares float32[999999999999... (400 digits)]"),
    ],
)
def test_hostile_headers(tmp_path, shape, descr, says):
    header = f"{{'descr': {descr}, 'fortran_order': False, 'shape': {shape}, }}"
    path = write_zip(tmp_path / "h.npz", {"x.npy": raw_npy(header)})
    message = error_of(path)
    assert message.startswith(f"{path}: member 'x'") and says in message
    assert len(message) < 400


def test_member_not_npy(tmp_path):
    path = write_zip(tmp_path / "n.npz", {"notes.txt": b"hello"})
    assert "member 'notes.txt' is not a .npy array" in error_of(path)


def test_pickles_are_refused(tmp_path):
    path = tmp_path / "p.npz"
    np.savez(path, x=np.array([{"a": 1}], dtype=object))
    assert "member 'x' holds Python objects (a pickle): refused" in error_of(path)


@pytest.mark.parametrize(
    "value",
    [np.array(["a", "b"]), np.array([1 + 2j]), np.zeros(2, dtype=[("a", "<f4"), ("b", "<i4")])],
    ids=["str", "complex", "structured"],
)
def test_non_number_dtypes_are_refused(tmp_path, value):
    path = tmp_path / "d.npz"
    np.savez(path, x=value)
    assert "member 'x' has unsupported dtype" in error_of(path)


# --- sizes: checked on the header, before any allocation -----------------------------


def test_huge_declared_shape_is_refused_before_allocating(tmp_path):
    data = npy_bytes("<f4", (10**11, 784), b"\0" * 64)
    path = write_zip(tmp_path / "huge.npz", {"x.npy": data})
    message = error_of(path)
    assert "member 'x' declares float32[100000000000, 784]" in message
    assert "over the limit" in message


def test_declared_size_must_match_the_member(tmp_path):
    # Under the limit but more than the member holds: numpy would allocate, then fail.
    data = npy_bytes("<f4", (1000, 1000), b"\0" * 64)
    path = write_zip(tmp_path / "short.npz", {"x.npy": data})
    assert "but the zip says it holds" in error_of(path)


def test_member_expanding_beyond_its_header_is_refused(tmp_path):
    # An honest 16-byte header, 50 MB of deflated zeros behind it.
    data = npy_bytes("<f4", (4,), b"\0" * (16 + 50_000_000))
    path = write_zip(tmp_path / "bomb.npz", {"x.npy": data}, zipfile.ZIP_DEFLATED)
    assert path.stat().st_size < 1_000_000
    assert "declares float32[4]" in error_of(path)


def test_member_decompressing_beyond_its_declared_zip_size_is_refused(tmp_path):
    # The zip directory is forged to say the member holds only its header and data;
    # the deflated stream goes on for 50 MB. Reading is bounded by the declared size
    # and the CRC no longer matches.
    honest = npy_bytes("<f4", (4,), b"\0" * 16)
    members = {"x.npy": honest + b"\0" * 50_000_000}
    path = write_zip(tmp_path / "forged.npz", members, zipfile.ZIP_DEFLATED)
    raw = bytearray(path.read_bytes())
    real = len(honest) + 50_000_000
    for signature, offset in ((b"PK\x03\x04", 22), (b"PK\x01\x02", 24)):
        at = raw.index(signature) + offset
        assert struct.unpack_from("<I", raw, at)[0] == real
        struct.pack_into("<I", raw, at, len(honest))
    path.write_bytes(bytes(raw))
    message = error_of(path)
    assert "member 'x'" in message and "CRC" in message


def test_shape_checked_against_the_model_before_allocating(tmp_path):
    # Declares 200 MB, holds 64 bytes: the model's expected shape refuses it first.
    data = npy_bytes("<f4", (10_000, 5_000), b"\0" * 64)
    path = write_zip(tmp_path / "x.npz", {"x.npy": data})
    expected = {"x": ArraySpec((2, 3), "f")}
    message = error_of(path, expected=expected)
    assert "member 'x' must have shape [2, 3], got [10000, 5000]" in message


def test_dtype_checked_against_the_model(tmp_path):
    path = tmp_path / "i.npz"
    np.savez(path, ids=np.array([[0.5, 1.5]]))
    expected = {"ids": ArraySpec((1, 2), "iub")}
    message = error_of(path, expected=expected)
    assert "member 'ids' must hold integer or bool values, got float64" in message


def test_samples_axis_accepted_where_declared(tmp_path):
    path = tmp_path / "c.npz"
    np.savez(path, x=np.zeros((5, 2, 3), np.float32))
    got = load_arrays(path, {"x": ArraySpec((2, 3), "f", samples=True)})
    assert got["x"].shape == (5, 2, 3)
    message = error_of(path, expected={"x": ArraySpec((2, 3), "f")})
    assert "must have shape [2, 3], got [5, 2, 3]" in message


# --- names and values ----------------------------------------------------------------


def test_unknown_member_is_an_error_naming_it_and_the_models_names(tmp_path):
    path = tmp_path / "typo.npz"
    np.savez(path, x=np.ones((2, 3), np.float32), wieght=np.ones((3, 4), np.float32))
    expected = {"x": ArraySpec((2, 3), "f"), "weight": ArraySpec((3, 4), "f")}
    message = error_of(path, expected=expected)
    assert "member 'wieght' matches no input or param of the model" in message
    assert "did you mean 'weight'?" in message
    assert "its names: weight, x" in message
    assert "--allow-extra" in message


def test_unknown_member_with_allow_extra_is_a_warning_and_not_read(tmp_path):
    path = tmp_path / "extra.npz"
    # The extra member is a pickle: ignored means never read either.
    np.savez(path, x=np.ones((2, 3), np.float32), junk=np.array([None], dtype=object))
    warnings: list[str] = []
    expected = {"x": ArraySpec((2, 3), "f")}
    with pytest.raises(ArrayFileError, match="pickle"):  # every header is still checked
        load_arrays(path, expected, allow_extra=True, warn=warnings.append)
    np.savez(path, x=np.ones((2, 3), np.float32), junk=np.ones(7))
    got = load_arrays(path, expected, allow_extra=True, warn=warnings.append)
    assert list(got) == ["x"]
    assert warnings == [
        f"warning: {path}: member 'junk' matches no input or param of the model; "
        "its names: x; ignored"
    ]


def test_nan_and_inf_are_a_warning_with_counts(tmp_path):
    path = tmp_path / "nan.npz"
    x = np.array([[np.nan, 1, np.inf], [-np.inf, 2, np.nan]], np.float32)
    big = np.array([1e300, -1e300])  # finite in float64: no warning
    b = np.array([np.nan, 1.0], np.float32).astype(DType.BF16.np_dtype)
    save_arrays(path, {"x": x, "n": np.arange(3), "big": big, "b": b})
    warnings: list[str] = []
    got = load_arrays(path, warn=warnings.append)
    np.testing.assert_array_equal(got["x"], x)
    assert warnings == [
        f"warning: {path}: 'x' holds 2 NaN and 2 Inf of 6 values",
        f"warning: {path}: 'b' holds 1 NaN of 2 values",
    ]


# --- what loads, loads exactly -------------------------------------------------------

number_dtypes = st.sampled_from(
    [np.float32, np.float64, np.float16, np.int8, np.int32, np.int64, np.uint8, np.bool_]
)


@given(
    arrays=st.dictionaries(
        st.from_regex(r"[a-z][a-z0-9_]{0,8}", fullmatch=True),
        hnp.arrays(number_dtypes, hnp.array_shapes(min_dims=0, max_dims=3, min_side=0)),
        max_size=4,
    ),
    compressed=st.booleans(),
    fortran=st.booleans(),
)
def test_round_trip_matches_numpy(tmp_path_factory, arrays, compressed, fortran):
    path = tmp_path_factory.mktemp("rt") / "a.npz"
    stored = {k: v.copy(order="F" if fortran else "C") for k, v in arrays.items()}
    (np.savez_compressed if compressed else np.savez)(path, **stored)
    got = load_arrays(path)
    assert sorted(got) == sorted(arrays)
    for name, value in arrays.items():
        assert got[name].dtype == value.dtype and got[name].shape == value.shape
        np.testing.assert_array_equal(got[name], value)


def test_bf16_round_trip_and_checked_as_float(tmp_path):
    path = tmp_path / "b.npz"
    w = np.arange(12, dtype=np.float32).reshape(3, 4).astype(DType.BF16.np_dtype)
    save_arrays(path, {"w": w})
    got = load_arrays(path, {"w": ArraySpec((3, 4), "f")})
    assert got["w"].dtype == DType.BF16.np_dtype
    np.testing.assert_array_equal(got["w"], w)


# --- through the commands ------------------------------------------------------------


@pytest.mark.parametrize("command", [["run"], ["simulate", "--no-optimize"]], ids=["run", "sim"])
def test_commands_name_a_typo_and_take_allow_extra(model, tmp_path, capsys, command):
    path = tmp_path / "typo.npz"
    np.savez(path, xx=np.ones((2, 3), np.float32))
    argv = [*command, str(model), "--inputs", str(path)]
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert err == (
        f"{path}: member 'xx' matches no input or param of the model (did you mean 'x'?); "
        "its names: w, x; --allow-extra ignores it\n"
    )
    assert main([*argv, "--allow-extra"]) == 0
    assert "member 'xx' matches no input or param of the model" in capsys.readouterr().err


def test_run_warns_of_nan_inputs(model, tmp_path, capsys):
    path = tmp_path / "nan.npz"
    np.savez(path, x=np.array([[np.nan, 1, 2], [3, 4, 5]], np.float32))
    assert main(["run", str(model), "--inputs", str(path)]) == 0
    assert capsys.readouterr().err == f"warning: {path}: 'x' holds 1 NaN of 6 values\n"


def test_calibrate_checks_names_and_shapes(model, tmp_path, capsys):
    bad = tmp_path / "cal.npz"
    np.savez(bad, x=np.ones((8, 2, 3), np.float32), y=np.ones(3, np.float32))
    argv = ["optimize", str(model), "--quantize", "int8", "-q", "--calibrate", str(bad)]
    assert main(argv) == 1
    assert "member 'y' matches no input or param of the model" in capsys.readouterr().err
    huge = write_zip(tmp_path / "huge.npz", {"x.npy": npy_bytes("<f4", (10**9, 2, 3), b"")})
    assert main([*argv[:-1], str(huge)]) == 1
    assert "member 'x' declares float32[1000000000, 2, 3]" in capsys.readouterr().err


def test_asm_inputs_are_checked_against_the_buffers(tmp_path, capsys):
    asm = tmp_path / "p.asm"
    out = tmp_path / "p.model"
    out.write_text(MODEL)
    assert main(["compile", str(out), "-o", str(asm), "--no-optimize"]) == 0
    capsys.readouterr()
    path = tmp_path / "in.npz"
    np.savez(path, x=np.ones((3, 3), np.float32))
    assert main(["simulate", str(asm), "--inputs", str(path)]) == 1
    err = capsys.readouterr().err
    assert err == f"{path}: member 'x' must have shape [2, 3], got [3, 3]\n"


def test_params_file_is_read_by_the_same_loader(model, tmp_path, capsys):
    params = tmp_path / "m.params.npz"
    params.write_bytes(b"PK\x03\x04 not really")
    assert main(["check", str(model)]) == 1
    assert capsys.readouterr().err.startswith(f"{params}: truncated or damaged .npz file")
