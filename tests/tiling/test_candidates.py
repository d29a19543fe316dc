"""Tile candidates come from the hardware: multiples of the array that fit."""

from __future__ import annotations

import pytest
from egglog.bindings import EGraph

from eqsat.egraph.encoding import program_prelude
from eqsat.egraph.saturate import run_commands
from eqsat.rules.predicates import PREDICATES, hardware_facts
from eqsat.tiling import (
    EPILOGUE_ROOM,
    SRAM_MARGIN,
    candidate_rows,
    out_itemsize,
    tile_candidates,
)
from hwsim import load_hardware
from hwsim.dtypes import ITEMSIZE
from tests.tiling.helpers import TINY_SRAM

HARDWARE = ["edge", "datacenter", TINY_SRAM]


@pytest.mark.parametrize("spec", HARDWARE)
@pytest.mark.parametrize("dtype", ["f32", "bf16", "i8"])
@pytest.mark.parametrize("epilogue", [False, True])
def test_candidates_are_array_multiples_that_fit(spec, dtype, epilogue):
    hw = load_hardware(spec)
    tiles = tile_candidates(hw, dtype, epilogue)
    assert 1 <= len(tiles) <= 16, "a handful, not a search space"
    s, so = ITEMSIZE[dtype], out_itemsize(dtype)
    # two output slots (the cost model's fit), or one and room for an epilogue
    out = (so + EPILOGUE_ROOM) if epilogue else 2 * so
    margin = SRAM_MARGIN if epilogue else 0
    for tm, tn, tk in tiles:
        assert tm % hw.array_rows == 0 and tn % hw.array_cols == 0 and tk % hw.array_rows == 0
        assert 4 * tm * tn <= hw.acc_bytes
        assert 2 * (tm * tk + tk * tn) * s + out * tm * tn + margin <= hw.sram_bytes
        # and TK is the largest such multiple of the array
        tk2 = tk + hw.array_rows
        assert 2 * (tm * tk2 + tk2 * tn) * s + out * tm * tn + margin > hw.sram_bytes


def test_smaller_sram_gives_smaller_tiles():
    edge, tiny = load_hardware("edge"), load_hardware(TINY_SRAM)
    assert max(t[2] for t in tile_candidates(tiny, "f32")) < max(
        t[2] for t in tile_candidates(edge, "f32")
    )
    assert max(t[0] * t[1] for t in tile_candidates(tiny, "f32")) <= max(
        t[0] * t[1] for t in tile_candidates(edge, "f32")
    )


def test_facts_load_into_the_egraph():
    hw = load_hardware("edge")
    egraph = EGraph()
    run_commands(egraph, program_prelude())
    run_commands(egraph, hardware_facts(hw))
    rows = candidate_rows(hw)
    assert rows and all(r[0] in ("f32", "bf16", "i8") for r in rows)
    d, tm, tn, tk = rows[0]
    run_commands(egraph, f'(check (TileCandidate "{d}" {tm} {tn} {tk}))')
    assert PREDICATES["tile_candidate"].rows(hw) == rows
    d, tm, tn, tk = candidate_rows(hw, epilogue=True)[0]
    run_commands(egraph, f'(check (TileCandidateEpilogue "{d}" {tm} {tn} {tk}))')
