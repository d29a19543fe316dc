"""Benchmark: deep models optimized once per distinct block, and from the compile cache.

For each model: the one-layer model optimized as a whole (the reference time), the
deep model optimized block by block with an empty cache, again from the warm cache,
and (with --whole) as one e-graph, with estimated cycles of each and the check that
the blockwise program computes what the model does (the reference interpreter on
random inputs, as `--verify`).

    python bench/blocks.py                       # BERT-base x12, LLaMA-style x32, GPT-3 x96
    python bench/blocks.py --models llama --whole
    python bench/blocks.py --onnx ~/.cache/eqsat/zoo/bert_base-*.onnx   # the zoo's BERT-base

Models: `bert` stacks examples/bert_layer.model 12 times, `llama` stacks
examples/llama_block.model 32 times, `gpt3` stacks bench/models/gpt3_layer.model
(d_model 12288, 96 heads, context 2048) 96 times; GPT-3 is optimized from its shapes
only (its 174 B params are never allocated) and not verified.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from eqsat.blocks import CompileCache, optimize_blockwise, plan_blocks  # noqa: E402
from eqsat.loading import load_model  # noqa: E402
from eqsat.pipeline import optimize  # noqa: E402
from eqsat.rulesets import DEFAULT_RULES_DIR, compile_rule_paths  # noqa: E402
from eqsat.verify.translation import VerificationError, validate_graph  # noqa: E402
from frontend import ast, check_model, parse_model_file  # noqa: E402
from hwsim.hardware import load_hardware  # noqa: E402

MODELS = {
    "bert": (ROOT / "examples" / "bert_layer.model", 12, True),
    "llama": (ROOT / "examples" / "llama_block.model", 32, True),
    "gpt3": (ROOT / "bench" / "models" / "gpt3_layer.model", 96, False),
}


def _rename(e: ast.Expr, names: dict[str, str]) -> ast.Expr:
    if isinstance(e, ast.Ref):
        return ast.Ref(names.get(e.name, e.name))
    return dataclasses.replace(e, args=tuple(_rename(a, names) for a in e.args))


def stacked(path: Path, depth: int) -> ast.Model:
    """`depth` copies of a one-layer model (input x, output y of the same type), each
    with its own params, the output of one the input of the next."""
    layer = parse_model_file(path)
    items: list = [i for i in layer.items if isinstance(i, ast.DimDecl)]
    items += [i for i in layer.items if isinstance(i, ast.LeafDecl) and i.kind == "input"]
    current = "x"
    for k in range(depth):
        names = {"x": current}
        for item in layer.items:
            if isinstance(item, ast.LeafDecl | ast.ConstDecl | ast.Assign) and item.name != "x":
                names[item.name] = f"{item.name}_{k}"
        for item in layer.items:
            if (isinstance(item, ast.LeafDecl) and item.kind == "param") or isinstance(
                item, ast.ConstDecl
            ):
                items.append(dataclasses.replace(item, name=names[item.name]))
            elif isinstance(item, ast.Assign):
                items.append(ast.Assign(names[item.name], _rename(item.expr, names)))
        current = names["y"]
    items.append(ast.Assign("y", ast.Ref(current)))
    items.append(ast.OutputDecl(("y",)))
    return ast.Model(f"{layer.name}_x{depth}", tuple(items))


def one_layer_prefix(graph, plan):
    """The model cut after its first repeated block (the ONNX case: embeddings and
    one layer), to time against."""
    from eqsat.ir.graph import Graph

    counts = {k: len(v) for k, v in plan.distinct.items()}
    seen, end = set(), None
    for block in plan.blocks:
        if counts[block.key] > 1 and block.key in seen:
            break
        seen.add(block.key)
        end = block.nodes[-1]
    return Graph(
        graph.name + "_1", graph.nodes[: end + 1], [("y", end)], graph.dims, graph.constants
    )


def timed(fn, *args, **kwargs):
    t = time.perf_counter()
    out = fn(*args, **kwargs)
    return out, time.perf_counter() - t


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", default="bert,llama,gpt3", help="of: " + ", ".join(MODELS))
    parser.add_argument("--onnx", nargs="*", default=[], help="ONNX models to add (e.g. the zoo's)")
    parser.add_argument("--hw", default="edge")
    parser.add_argument("--whole", action="store_true", help="also optimize as one e-graph")
    parser.add_argument("--no-verify", action="store_true")
    args = parser.parse_args()
    hw = load_hardware(args.hw)
    rules = compile_rule_paths([DEFAULT_RULES_DIR])
    warm = check_model(stacked(MODELS["bert"][0], 1))
    optimize(warm, rules, hw)  # imports and first-call costs out of the figures
    cases = []
    for name in [m for m in args.models.split(",") if m]:
        path, depth, verify = MODELS[name]
        cases.append(
            (
                f"{name} x{depth}",
                check_model(stacked(path, 1)),
                check_model(stacked(path, depth)),
                verify,
            )
        )
    for path in args.onnx:
        deep = load_model(path).graph
        cases.append((Path(path).stem, None, deep, True))
    print(f"hardware {hw.name}; times in seconds (this process, after warm-up)")
    head = (
        f"{'model':<18} {'ops':>6} {'blocks':>7} {'1 layer':>8} {'blockwise':>9} {'ratio':>6} "
        f"{'cached':>7} {'whole':>7} {'cycles blockwise':>17} {'cycles whole':>13} {'verified':>9}"
    )
    print(head)
    for label, one, deep, verify in cases:
        plan = plan_blocks(deep, rules.nestings)
        if one is None:
            one = one_layer_prefix(deep, plan)
        _, t_one = timed(optimize, one, rules, hw)
        with tempfile.TemporaryDirectory() as cache_dir:
            result, t_blocks = timed(
                optimize_blockwise, deep, plan, rules, hw, cache=CompileCache(Path(cache_dir))
            )
            cached, t_cached = timed(
                optimize_blockwise, deep, plan, rules, hw, cache=CompileCache(Path(cache_dir))
            )
        assert cached.after == result.after
        whole_cycles, t_whole = "-", "-"
        if args.whole:
            whole, tw = timed(optimize, deep, rules, hw)
            whole_cycles, t_whole = f"{whole.after.cycles:,}", f"{tw:.2f}"
        ok = "-"
        if verify and not args.no_verify:
            try:
                v = validate_graph(deep, result.graph, [0])
                ok = f"{v.worst:.1e}"
            except VerificationError:
                ok = "FAILED"
        ops = sum(1 for n in deep.nodes if not n.is_leaf)
        print(
            f"{label:<18} {ops:>6} {len(plan.blocks):>3}/{len(plan.distinct):<3} {t_one:>8.2f} "
            f"{t_blocks:>9.2f} {t_blocks / t_one:>6.2f} {t_cached:>7.2f} {t_whole:>7} "
            f"{result.after.cycles:>17,} {whole_cycles:>13} {ok:>9}"
        )


if __name__ == "__main__":
    main()
