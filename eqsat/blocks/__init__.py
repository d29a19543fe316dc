"""Deep models compiled once per distinct block: cuts, canonical blocks, reuse, the
compile cache and distributed optimization (eqsat.blocks.blockwise)."""

from eqsat.blocks.blockwise import BlockReport, optimize_blockwise
from eqsat.blocks.cache import CompileCache, default_cache_dir
from eqsat.blocks.seams import rule_nestings
from eqsat.blocks.segments import BlockPlan, plan_blocks

__all__ = [
    "BlockPlan",
    "BlockReport",
    "CompileCache",
    "default_cache_dir",
    "optimize_blockwise",
    "plan_blocks",
    "rule_nestings",
]
