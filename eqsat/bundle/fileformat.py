"""The bundle file (.eqsb): one zip, written atomically.

manifest.json           format, dimension and range, buckets with their estimated
                        cycles, padded axes of inputs/outputs, mask inputs, stats
model.model             the model the bundle was compiled from (its text)
arrays.npz              its params (once for all buckets) and external constants
buckets/B/model.model   bucket B's optimized, masked program as model text
buckets/B/consts.npz    that program's external constants (when it has any)
buckets/B/program.asm   its hwsim assembly, as `eqsat compile` writes it
"""

from __future__ import annotations

import io
import json
import tempfile
import zipfile
from pathlib import Path

import numpy as np

from eqsat.bundle.build import BucketProgram, Bundle
from eqsat.bundle.errors import BundleError
from eqsat.bundle.ranges import DimRange
from eqsat.bundle.source import ModelSource
from eqsat.fileio import load_arrays, save_arrays, write_atomic
from frontend import check_model, graph_to_model, parse_model, print_model
from frontend.from_graph import external_constants

FORMAT = "eqsat-bundle"
VERSION = 1
SUFFIX = ".eqsb"
MAX_MEMBER_BYTES = 4 << 30  # the per-array limit of eqsat/fileio.py, for any member


def _npz_bytes(arrays: dict[str, np.ndarray]) -> bytes:
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "a.npz"
        save_arrays(path, arrays)
        return path.read_bytes()


def _npz_arrays(data: bytes, where: str) -> dict[str, np.ndarray]:
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "a.npz"
        path.write_bytes(data)
        try:
            return dict(load_arrays(path))
        except Exception as e:  # a damaged member
            raise BundleError(f"{where}: cannot read the arrays ({e})") from None


def manifest(bundle: Bundle) -> dict:
    return {
        "format": FORMAT,
        "version": VERSION,
        "model": bundle.name,
        "dim": {"name": bundle.dim.name, "lo": bundle.dim.lo, "hi": bundle.dim.hi},
        "fixed_dims": dict(bundle.source.dims),
        "hardware": bundle.hardware().name,
        "hardware_spec": bundle.hw_spec,
        "source_file": bundle.source.file,
        "buckets": [
            {
                "size": b,
                "est_cycles": p.est_cycles,
                "instructions": p.asm.count("\n"),
                "inputs": {k: list(v) for k, v in p.inputs.items()},
                "outputs": {k: [list(a) for a in v] for k, v in p.outputs.items()},
                "masks": p.masks,
            }
            for b, p in sorted(bundle.programs.items())
        ],
        "stats": {k: v for k, v in bundle.stats.items() if k != "buckets"},
    }


def save_bundle(bundle: Bundle, path: str | Path) -> int:
    """Write the bundle to `path` (whole or not at all); returns its size in bytes."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("manifest.json", json.dumps(manifest(bundle), indent=2) + "\n")
        z.writestr("model.model", bundle.source.text)
        z.writestr("arrays.npz", _npz_bytes(bundle.source.data))
        for b, p in sorted(bundle.programs.items()):
            z.writestr(f"buckets/{b}/model.model", print_model(graph_to_model(p.graph)))
            consts = external_constants(p.graph)
            if consts:
                z.writestr(f"buckets/{b}/consts.npz", _npz_bytes(consts))
            z.writestr(f"buckets/{b}/program.asm", p.asm)
    data = buf.getvalue()
    write_atomic(path, data)
    return len(data)


def is_bundle(path: str | Path) -> bool:
    return Path(path).suffix == SUFFIX


def load_bundle(path: str | Path) -> Bundle:
    """Read a bundle written by save_bundle."""
    path = Path(path)
    try:
        z = zipfile.ZipFile(path)
    except (OSError, zipfile.BadZipFile) as e:
        raise BundleError(f"{path}: not a bundle ({e})") from None
    with z:
        names = set(z.namelist())
        big = [i.filename for i in z.infolist() if i.file_size > MAX_MEMBER_BYTES]
        if big:
            raise BundleError(f"{path}: member '{big[0]}' is larger than a bundle may hold")
        try:
            return _read(path, z, names)
        except BundleError:
            raise
        except (KeyError, TypeError, ValueError, AttributeError, zipfile.BadZipFile) as e:
            raise BundleError(f"{path}: damaged bundle ({type(e).__name__}: {e})") from None


def _read(path: Path, z: zipfile.ZipFile, names: set[str]) -> Bundle:
    """The bundle's members, read and checked (every model text and array file goes
    through the same parser and loader as any other)."""

    def read(member: str) -> bytes:
        if member not in names:
            raise BundleError(f"{path}: damaged bundle: '{member}' is missing")
        return z.read(member)

    try:
        info = json.loads(read("manifest.json"))
    except json.JSONDecodeError as e:
        raise BundleError(f"{path}: damaged manifest ({e})") from None
    if info.get("format") != FORMAT or info.get("version") != VERSION:
        raise BundleError(
            f"{path}: not a version-{VERSION} eqsat bundle "
            f"(format {info.get('format')!r}, version {info.get('version')!r})"
        )
    dim = DimRange(info["dim"]["name"], int(info["dim"]["lo"]), int(info["dim"]["hi"]))
    source = ModelSource(
        read("model.model").decode(),
        info.get("source_file", "model.model"),
        _npz_arrays(read("arrays.npz"), f"{path}:arrays.npz"),
        {k: int(v) for k, v in info.get("fixed_dims", {}).items()},
    )
    programs = {}
    for entry in info["buckets"]:
        b = int(entry["size"])
        where = f"{path}:buckets/{b}"
        consts_name = f"buckets/{b}/consts.npz"
        consts = _npz_arrays(z.read(consts_name), where) if consts_name in names else {}
        model = parse_model(read(f"buckets/{b}/model.model").decode(), f"{where}/model.model")
        graph = check_model(model, {}, consts, f"{where}/consts.npz")
        programs[b] = BucketProgram(
            b,
            graph,
            {k: tuple(v) for k, v in entry["inputs"].items()},
            {k: tuple(tuple(int(x) for x in a) for a in v) for k, v in entry["outputs"].items()},
            dict(entry["masks"]),
            int(entry["est_cycles"]),
            read(f"buckets/{b}/program.asm").decode(),
        )
    stats = dict(info.get("stats", {}))
    stats["buckets"] = sorted(programs)
    return Bundle(source, dim, info["hardware_spec"], programs, stats)
