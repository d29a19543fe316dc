"""Flags of block reuse, the compile cache and distributed optimization (shared by
optimize, compile and simulate); the work is in eqsat.blocks."""

from __future__ import annotations

import argparse
from pathlib import Path

from eqsat.blocks.cache import CompileCache, default_cache_dir


def add_block_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--no-blocks",
        action="store_true",
        help="optimize the whole graph in one e-graph even when it repeats a block "
        "(default: a model that repeats a block, such as the layers of a transformer, is "
        "cut between them and each distinct block is optimized once)",
    )
    p.add_argument(
        "--cache-dir",
        metavar="DIR",
        help="where optimized blocks are cached (default: $EQSAT_CACHE_DIR, else "
        f"$XDG_CACHE_HOME/eqsat/compile: {default_cache_dir()})",
    )
    p.add_argument(
        "--no-cache",
        action="store_true",
        help="neither read nor write the compile cache",
    )
    p.add_argument(
        "--scheduler",
        metavar="local[:N]|ADDRESS",
        help="optimize the distinct blocks on a Dask cluster: local:N starts N worker "
        "processes here, ADDRESS (tcp://host:8786) uses a running scheduler (needs the "
        "[dask] extra; default: this process)",
    )


def cache_from_args(args: argparse.Namespace) -> CompileCache | None:
    if getattr(args, "no_cache", False):
        return None
    where = getattr(args, "cache_dir", None)
    return CompileCache(Path(where) if where else default_cache_dir())
