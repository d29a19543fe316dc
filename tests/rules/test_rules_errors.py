"""Every static error of the rule language: its class and the exact line:col."""

from __future__ import annotations

import dataclasses

import pytest
from rules_helpers import SAMPLE

from eqsat.errors import SourceError
from eqsat.rules import (
    ArityError,
    DuplicateRuleError,
    EgglogRejectedError,
    GuardTypeError,
    MissingAttributeError,
    RuleAttributeError,
    RuleCollection,
    RuleFile,
    RuleStructureError,
    RuleSyntaxError,
    UnboundVariableError,
    UndefinedRootError,
    UnknownOpError,
    check_in_egglog,
    load_rules,
    load_rules_text,
)

# (rules text, error class, line, col, a piece of the message)
CASES = {
    "syntax": ("# x\nadd-zero add(x, y) => x\n", RuleSyntaxError, 2, 1, "name: lhs => rhs"),
    "syntax-eof": ("r: add(x, y) =>\n", RuleSyntaxError, 1, 16, "end of file"),
    "syntax-char": ("r: add(x, y) => x if rank(x) == 2 & 3\n", RuleSyntaxError, 1, 35, "'&'"),
    "not-kebab": ("Add_Zero: add(x, y) => x\n", RuleSyntaxError, 1, 1, "kebab-case"),
    "operand-after-attr": ("r: softmax(axis=A, x) => x\n", RuleSyntaxError, 1, 20, "before"),
    "approx-budget": ("r: relu(x) => x approx 2\n", RuleSyntaxError, 1, 24, "approx 0.01"),
    "unknown-op": ("r: ad(x, y) => x\n", UnknownOpError, 1, 4, "did you mean 'add'"),
    "arity": ("r: add(x) => x\n", ArityError, 1, 4, "takes 2 operands, got 1"),
    "variadic-arity": ("r: relu(x) => concat(x, x, x, axis=0)\n", ArityError, 1, 15, "nest"),
    "unknown-attr": (
        "r: softmax(x, axs=1) => x\n",
        RuleAttributeError,
        1,
        15,
        "no attribute 'axs'",
    ),
    "ill-typed-literal": ("r: softmax(x, axis=1.5) => x\n", RuleAttributeError, 1, 20, "integer"),
    "non-canonical-literal": ("r: softmax(x, axis=-1) => x\n", RuleAttributeError, 1, 20, "never"),
    "missing-attr": ("r: relu(x) => reshape(x)\n", MissingAttributeError, 1, 15, "'shape'"),
    "missing-canonical": ("r: relu(x) => transpose(x)\n", MissingAttributeError, 1, 15, "perm=["),
    "unbound-rhs": ("r: relu(x) => add(x, y)\n", UnboundVariableError, 1, 22, "'y'"),
    "unbound-guard": ("r: relu(x) => x if N > 2\n", UnboundVariableError, 1, 20, "'N'"),
    "list-vs-int": ("r: relu(x) => x if shape(x) == 2\n", GuardTypeError, 1, 29, "cannot compare"),
    "rank-of-attr": (
        "r: softmax(x, axis=A) => x if rank(A) == 2\n",
        GuardTypeError,
        1,
        36,
        "attribute variable",
    ),
    "dim-index": ("r: relu(x) => x if dim(x, 1.5) == 2\n", GuardTypeError, 1, 27, "index of dim()"),
    "float-as-list": (
        "r: mul(x, const(value=C)) => reshape(x, shape=C)\n",
        GuardTypeError,
        1,
        47,
        "'C' is a float",
    ),
    "order-lists": (
        "r: a = add(x, y) => x if shape(x) < shape(y)\n",
        GuardTypeError,
        1,
        35,
        "use == or !=",
    ),
    "op-in-expression": (
        "r: a = relu(x) => x if shape(a) == shape(relu(x))\n",
        GuardTypeError,
        1,
        42,
        "name that subterm",
    ),
    "list-builder-bad-argument": (
        "r: transpose(x, perm=P) => x if P == range(P)\n",
        GuardTypeError,
        1,
        44,
        "must be an integer",
    ),
    "duplicate-in-file": (
        "# a\nr: relu(x) => x\n# b\nr: neg(x) => x\n",
        DuplicateRuleError,
        4,
        1,
        "t.rules:2:1",
    ),
    "duplicate-with-prelude": ("rev: relu(x) => x\n", DuplicateRuleError, 1, 1, "shape analysis"),
    "undefined-root": (
        "r: a = matmul(x, w1), b = matmul(x, w2)\n   => a = matmul(x, w1)\n",
        UndefinedRootError,
        1,
        23,
        "root 'b'",
    ),
    "bare-variable-root": ("r: x => relu(x)\n", RuleStructureError, 1, 4, "op pattern"),
    "wildcard-on-rhs": ("r: relu(x) => relu(_)\n", RuleStructureError, 1, 20, "'_'"),
    "reverse-direction": (
        "r: mul(x, const(value=2.0)) <=> add(x, x)\n",
        MissingAttributeError,
        1,
        11,
        "reverse direction",
    ),
}


@pytest.mark.parametrize("case", CASES, ids=list(CASES))
def test_static_error(case: str) -> None:
    text, cls, line, col, fragment = CASES[case]
    with pytest.raises(cls) as info:
        load_rules_text(text, "t.rules")
    err = info.value
    assert isinstance(err, SourceError)
    assert (err.file, err.line, err.col) == ("t.rules", line, col)
    assert fragment in err.message
    rendered = str(err)
    assert rendered.startswith(f"t.rules:{line}:{col}: error: ")
    assert rendered.splitlines()[-1] == "  " + " " * (col - 1) + "^"


def test_duplicate_across_files_names_both_locations(tmp_path) -> None:
    (tmp_path / "a.rules").write_text("# x\nsame-name: relu(x) => x\n")
    (tmp_path / "b.rules").write_text("\n# y\nsame-name: neg(neg(x)) => x\n")
    with pytest.raises(DuplicateRuleError) as info:
        load_rules([tmp_path])
    err = info.value
    assert (err.file, err.line, err.col) == (str(tmp_path / "b.rules"), 3, 1)
    assert f"{tmp_path / 'a.rules'}:2:1" in err.message


def test_reverse_name_clash_is_a_duplicate() -> None:
    with pytest.raises(DuplicateRuleError) as info:
        load_rules_text("r: add(a, b) <=> add(b, a)\nr-rev: relu(x) => x\n", "t.rules")
    assert (info.value.line, info.value.col) == (2, 1)


def test_reserved_ruleset_name() -> None:
    with pytest.raises(RuleSyntaxError) as info:
        load_rules_text("ruleset analysis\nr: relu(x) => x\n", "t.rules")
    assert (info.value.line, info.value.col) == (1, 9)


def test_egglog_rejection_is_blamed_on_the_rule() -> None:
    rules = load_rules([SAMPLE])
    bad = dataclasses.replace(rules.rule("relu-relu"), egglog=("(rule ((= a (NoSuchOp))) ())",))
    broken = RuleCollection((RuleFile(str(SAMPLE), "sample", (bad,)),))
    with pytest.raises(EgglogRejectedError) as info:
        check_in_egglog(broken)
    assert (info.value.line, info.value.col) == (bad.line, 1)
    assert "relu-relu" in info.value.message
