"""Small stacked models for the block tests: N identical pre-norm residual layers."""

from __future__ import annotations


def stacked_model(
    layers: int, d: int = 16, ffn: int = 32, rows: int = 8, name: str = "stack"
) -> str:
    """Text of a model whose `layers` layers differ only in the names of their params;
    a mask-like value computed once from an input is read by every layer."""
    lines = [f"model {name} {{", f"  input x: f32[{rows}, {d}]", f"  input m: f32[{rows}, {d}]"]
    for i in range(layers):
        lines += [
            f"  param g{i}: f32[{d}]",
            f"  param b{i}: f32[{d}]",
            f"  param w{i}a: f32[{d}, {ffn}]",
            f"  param w{i}b: f32[{ffn}, {d}]",
        ]
    lines.append("  gate = sigmoid(m)")
    prev = "x"
    for i in range(layers):
        lines += [
            f"  n{i} = layernorm({prev}, g{i}, b{i})",
            f"  f{i} = matmul(relu(matmul(n{i}, w{i}a)), w{i}b)",
            f"  h{i} = add({prev}, mul(f{i}, gate))",
        ]
        prev = f"h{i}"
    lines += [f"  output {prev}", "}"]
    return "\n".join(lines) + "\n"
