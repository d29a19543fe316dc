"""The hwsim program as MLIR in the `accel` dialect, defined in IRDL (accel.irdl.mlir).

emit.py writes it (no MLIR library needed); verify.py parses and verifies it in xDSL
against the IRDL file (xdsl_irdl.py loads IRDL with all its constraints); read.py
turns it back into a hwsim program. `iree-opt --irdl-file=accel.irdl.mlir` and
`mlir-opt --irdl-file=` verify it too. verify and read need xdsl (the `iree` extra).
"""

from pathlib import Path

from .emit import OPS_OF_INSTR, emit_accel_mlir

IRDL_PATH = Path(__file__).with_name("accel.irdl.mlir")

__all__ = ["IRDL_PATH", "OPS_OF_INSTR", "emit_accel_mlir"]
