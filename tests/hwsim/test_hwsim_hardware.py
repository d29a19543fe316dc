"""Hardware presets and the validation of TOML hardware files."""

import dataclasses
import re
from pathlib import Path

import pytest

from hwsim.hardware import Hardware, HardwareError, key_position, load_hardware


def write(tmp_path: Path, text: str, name: str = "hw.toml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def error_of(path: Path) -> str:
    with pytest.raises(HardwareError) as info:
        load_hardware(str(path))
    return str(info.value)


def test_presets_load():
    edge = load_hardware("edge")
    assert (edge.array_rows, edge.array_cols, edge.sram_bytes, edge.acc_bytes) == (
        16,
        16,
        256 * 1024,
        64 * 1024,
    )
    assert edge.macs_per_cycle["i8"] == 256 and edge.dram_bytes_per_cycle == 16
    dc = load_hardware("datacenter")
    assert dc.array_rows == 128 and dc.sram_bytes == 24 * 2**20 and dc.acc_bytes == 4 * 2**20
    assert dc.passes("i8") == 1 and dc.passes("f32") == 4


def test_hardware_is_hashable_and_frozen():
    edge = load_hardware("edge")
    assert hash(edge) == hash(load_hardware("edge"))
    assert {edge: 1}[load_hardware("edge")] == 1
    with pytest.raises(dataclasses.FrozenInstanceError):
        edge.sram_bytes = 1  # type: ignore[misc]
    with pytest.raises(TypeError):
        edge.macs_per_cycle["i8"] = 1  # type: ignore[index]
    assert isinstance(dataclasses.replace(edge, sram_bytes=1024), Hardware)


def test_base_override(tmp_path):
    path = write(
        tmp_path,
        'base = "edge"\nname = "edge-big"\nsram_bytes = 1048576\n[macs_per_cycle]\nbf16 = 256\n',
    )
    hw = load_hardware(str(path))
    assert hw.name == "edge-big" and hw.sram_bytes == 2**20 and hw.array_rows == 16
    assert dict(hw.macs_per_cycle) == {"i8": 256, "bf16": 256, "f32": 64}


def test_base_relative_file(tmp_path):
    write(tmp_path, 'base = "datacenter"\nvector_lanes = 512\n', "mid.toml")
    path = write(tmp_path, 'base = "mid.toml"\nname = "leaf"\n')
    hw = load_hardware(path)
    assert hw.vector_lanes == 512 and hw.array_rows == 128 and hw.name == "leaf"


def test_unknown_key(tmp_path):
    path = write(tmp_path, 'base = "edge"\n\nsram_byts = 1024\n')
    msg = error_of(path)
    assert msg.startswith(f"{path}:3:1: error: unknown key 'sram_byts'")
    assert "sram_bytes" in msg


def test_unknown_table(tmp_path):
    path = write(tmp_path, 'base = "edge"\n[array]\nrows = 8\n')
    assert error_of(path).startswith(f"{path}:2:2: error: unknown key 'array'")


def test_missing_key(tmp_path):
    text = (Path(__file__).parents[2] / "hwsim/presets/edge.toml").read_text()
    path = write(tmp_path, re.sub(r"^vector_lanes.*\n", "", text, flags=re.M))
    msg = error_of(path)
    assert msg.startswith(f"{path}: error: missing key 'vector_lanes'")
    assert 'base = "edge"' in msg


def test_wrong_type(tmp_path):
    path = write(tmp_path, 'base = "edge"\narray_rows = "16"\n')
    assert error_of(path).startswith(
        f"{path}:2:1: error: 'array_rows' must be an integer, got str '16'"
    )
    path = write(tmp_path, 'base = "edge"\nclock_ghz = true\n')
    assert "'clock_ghz' must be a number" in error_of(path)


def test_non_positive(tmp_path):
    path = write(tmp_path, 'base = "edge"\n  dram_latency_cycles = 0\n')
    assert error_of(path).startswith(f"{path}:2:3: error: 'dram_latency_cycles' must be positive")
    path = write(tmp_path, 'base = "edge"\n[macs_per_cycle]\ni8 = -4\n')
    assert error_of(path).startswith(f"{path}:3:1: error: 'macs_per_cycle.i8' must be positive")


def test_bad_macs_table(tmp_path):
    path = write(tmp_path, 'base = "edge"\n[macs_per_cycle]\nf16 = 4\n')
    assert error_of(path).startswith(f"{path}:3:1: error: unknown dtype 'f16'")
    path = write(tmp_path, 'base = "edge"\n[macs_per_cycle]\nf32 = 100\n')
    assert "must divide array_rows*array_cols = 256" in error_of(path)


def test_syntax_error(tmp_path):
    path = write(tmp_path, 'base = "edge"\nsram_bytes = = 3\n')
    assert re.match(rf"{re.escape(str(path))}:2:\d+: error: TOML syntax: ", error_of(path))


def test_unknown_spec_and_bad_base(tmp_path):
    with pytest.raises(HardwareError, match="unknown hardware; give a preset"):
        load_hardware("tpu9000")
    path = write(tmp_path, 'base = "nowhere.toml"\n')
    assert error_of(path).startswith(f"{path}:1:1: error: 'base' = 'nowhere.toml' is neither")
    loop = write(tmp_path, 'base = "hw.toml"\n')
    assert "loops back" in error_of(loop)


def test_key_position_in_tables():
    text = "a = 1\n[t]\n  b = 2\n[u]\nb = 3\nt.c = 4\n"
    assert key_position(text, "a") == (1, 1)
    assert key_position(text, "b", "t") == (3, 3)
    assert key_position(text, "b", "u") == (5, 1)
    assert key_position(text, "b") is None
    assert key_position(text, "c", "t") == (6, 1)
