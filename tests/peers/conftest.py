"""bench/ on the import path: the peer-comparison modules live there (bench/peers_*.py)."""

import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "bench"
if str(BENCH) not in sys.path:
    sys.path.insert(0, str(BENCH))
