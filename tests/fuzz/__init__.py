"""Fuzzing the command line with hostile inputs of every kind (models, rules, npz
inputs, assembly, e-graph JSON, ONNX, hardware files): every case either succeeds or
exits 1 (2 for a bad flag) with a message naming the file, never a traceback.

tests/fuzz/test_fuzz_cli.py runs a few cases per kind in the suite; bench/fuzz.py
runs thousands in worker processes that also catch hangs and crashes.
"""
