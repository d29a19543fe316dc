"""Control flow: models with `if` and `loop` regions.

A model with regions becomes a `ControlProgram`: static stages (graphs) and regions
whose bodies are static graphs, connected by value names. The reference interpreter
(interpret.py) runs it; passes (passes.py) fold, hoist, unroll and merge; each graph
is optimized with the rules on its own (optimize.py); the backend (backend/control.py)
lowers it to one hwsim program per graph plus a host control program (hwsim/host.py).
"""
