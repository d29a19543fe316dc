"""eqsat's side of custom instructions: the registry op derived from a declaration,
its type rules, the rules introducing it, the errors (one per class, located in the
TOML file) and the scoping that keeps one hardware's instructions out of other runs."""

from __future__ import annotations

import numpy as np
import pytest

from eqsat.custom_instr import InstructionError, InstructionOp, instructions_in_use
from eqsat.egraph.encoding import program_prelude
from eqsat.errors import UserError
from eqsat.ir.types import DType, TensorType
from eqsat.ops import REGISTRY, OpTypeError
from eqsat.rules import load_rules_text
from eqsat.rules.errors import UnknownOpError
from eqsat.rulesets import DEFAULT_RULES_DIR, compile_rule_paths
from eqsat.verify.opcases import FUSED, OP_GENERATORS
from hwsim.hardware import load_hardware
from tests.conftest import ROOT

EXAMPLE_HW = ROOT / "examples" / "hw" / "silu_mul.toml"
HEADER = 'base = "edge"\nname = "edge-test"\n\n[[instruction]]\n'


def _hw(tmp_path, body: str, name: str = "hw.toml"):
    path = tmp_path / name
    path.write_text(HEADER + body)
    return load_hardware(path), path


def _error(hw) -> InstructionError:
    with pytest.raises(InstructionError) as err, instructions_in_use(hw):
        pass
    return err.value


def test_derived_op_reference_and_types():
    hw = load_hardware(EXAMPLE_HW)
    with instructions_in_use(hw) as (op,):
        assert isinstance(op, InstructionOp) and REGISTRY["silu_mul"] is op
        a = np.linspace(-4, 4, 12, dtype=np.float32).reshape(3, 4)
        b = np.arange(4, dtype=np.float32)
        np.testing.assert_allclose(op.ref([a, b], {}), a / (1 + np.exp(-a)) * b, rtol=1e-6)
        f32 = DType.F32
        out = op.type_of([TensorType(f32, (3, 4)), TensorType(f32, (4,))], {})
        assert out == TensorType(f32, (3, 4))  # broadcasting as mul's
        with pytest.raises(OpTypeError, match="operand a must be f32"):
            op.type_of([TensorType(DType.BF16, (3, 4))] * 2, {})
        assert "SiluMul" in program_prelude()  # the e-graph datatype has its constructor


def test_declared_limits_are_type_rules_and_guards(tmp_path):
    hw, _ = _hw(
        tmp_path,
        'name = "gelu_mul"\nsemantics = "mul(gelu(a, approximate=none), b)"\n'
        'dtypes = ["f32", "bf16"]\nmax_rank = 2\nbroadcast = false\ncost = "issue + n"\n',
    )
    with instructions_in_use(hw) as (op,):
        t = TensorType(DType.BF16, (2, 3))
        assert op.type_of([t, t], {}) == t
        with pytest.raises(OpTypeError, match="does not broadcast"):
            op.type_of([t, TensorType(DType.BF16, (3,))], {})
        with pytest.raises(OpTypeError, match="rank 3; at most 2"):
            op.type_of([TensorType(DType.F32, (1, 2, 3))] * 2, {})
        rules = compile_rule_paths([ROOT / "rules" / "dce.rules"])
        assert {"instr-gelu-mul", "instr-gelu-mul-bf16"} <= rules.names
        assert "instructions" in rules.rulesets


def test_instruction_ops_exist_only_while_in_use():
    hw = load_hardware(EXAMPLE_HW)
    rule = "ruleset t\n# silu(a) * b\nr: mul(silu(a), b) => silu_mul(a, b)\n"
    before = program_prelude()
    with instructions_in_use(hw), instructions_in_use(hw):  # nested: one use
        assert "silu_mul" in REGISTRY
        assert len(load_rules_text(rule)) == 1
        assert OP_GENERATORS["silu_mul"] is FUSED  # drawn from its composition
    assert "silu_mul" not in REGISTRY and "silu_mul" not in OP_GENERATORS
    assert program_prelude() == before and "SiluMul" not in before
    with pytest.raises(UnknownOpError):
        load_rules_text(rule)
    assert "instructions" not in compile_rule_paths([ROOT / "rules" / "dce.rules"]).rulesets


def test_one_hardware_with_instructions_at_a_time(tmp_path):
    other, _ = _hw(tmp_path, 'name = "neg2"\nsemantics = "neg(neg(a))"\ncost = "n"\n')
    with instructions_in_use(load_hardware(EXAMPLE_HW)):
        with (
            pytest.raises(UserError, match="use one hardware at a time"),
            instructions_in_use(other),
        ):
            pass
        assert "neg2" not in REGISTRY
    assert "silu_mul" not in REGISTRY


# ---- one test per class of error eqsat reports, located in the TOML file


def test_unknown_op_in_semantics(tmp_path):
    hw, path = _hw(tmp_path, 'name = "silu_mul"\nsemantics = "mul(silo(a), b)"\ncost = "n"\n')
    err = _error(hw)
    assert err.location == f"{path}:6:18"  # at `silo` inside the string
    assert "unknown op 'silo' in semantics; did you mean 'silu'?" in str(err)
    assert "silu_mul" not in REGISTRY


def test_operand_mismatch_in_replaces(tmp_path):
    hw, path = _hw(
        tmp_path,
        'name = "silu_mul"\nsemantics = "mul(silu(a), b)"\ncost = "n"\n'
        'replaces = "mul(silu(x), b)"\n',
    )
    with instructions_in_use(hw), pytest.raises(InstructionError) as err:
        compile_rule_paths([ROOT / "rules" / "dce.rules"])
    assert err.value.location == f"{path}:8:1"
    assert "uses the names x, b, but the operands are a, b" in str(err.value)


def test_name_clash_with_a_registry_op(tmp_path):
    hw, path = _hw(tmp_path, 'name = "add_relu"\nsemantics = "relu(add(a, b))"\ncost = "n"\n')
    err = _error(hw)
    assert err.location == f"{path}:5:1"
    assert "'add_relu' is already an op of the registry" in str(err)
    assert REGISTRY["add_relu"].kind.value == "fused"  # the built-in op is untouched


def test_unsupported_kinds_are_refused(tmp_path):
    hw, path = _hw(tmp_path, 'name = "smax"\nsemantics = "softmax(a)"\ncost = "n"\n')
    err = _error(hw)
    assert err.location == f"{path}:6:14"
    assert "'softmax' is a normalize op" in str(err) and "softmax engine" in str(err)
    hw, _ = _hw(tmp_path, 'name = "hs"\nsemantics = "hard_swish(a)"\ncost = "n"\n', "hs.toml")
    assert "not an elementwise function the vector unit can run" in str(_error(hw))


def test_wrong_meaning_is_caught_where_rules_load(tmp_path):
    hw, path = _hw(
        tmp_path,
        'name = "silu_mul"\nsemantics = "mul(gelu(a), b)"\ncost = "n"\n'
        'replaces = "mul(silu(a), b)"\n',
    )
    with instructions_in_use(hw), pytest.raises(InstructionError) as err:
        compile_rule_paths([DEFAULT_RULES_DIR])
    assert err.value.location == f"{path}:8:1"
    assert "semantics mul(gelu(a), b) is not what it replaces, mul(silu(a), b)" in str(err.value)
