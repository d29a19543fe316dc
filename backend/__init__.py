"""backend: lowers an extracted eqsat graph to a hwsim program.

    compile_graph(graph, hw) -> CompiledProgram   (program, assembly text, feeds/results)

Kernel selection (lowering.py: one entry per registry op), tiling (ewise.py, gemm.py,
rowwise.py), memory planning (layouts.py, planner.py) and code emission (emit.py).
"""

from .compiler import compile_graph
from .errors import BackendError
from .program import CompiledProgram, KernelInfo

__all__ = ["BackendError", "CompiledProgram", "KernelInfo", "compile_graph"]
