"""MLIR emission (`eqsat compile --emit mlir`): the extracted graph as one func.func in
upstream dialects (linalg, tensor, arith, math), for IREE or any MLIR pipeline."""

from .core import MlirEmitError
from .emitter import MlirModule, emit_mlir, statement_locations

__all__ = ["MlirEmitError", "MlirModule", "emit_mlir", "statement_locations"]
