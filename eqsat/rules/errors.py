"""The kinds of mistake a rules file can contain, one exception class each.

All are SourceErrors (FILE:LINE:COL: error: MESSAGE, the source line and a caret),
so the CLI prints them without a traceback.
"""

from __future__ import annotations

from eqsat.errors import SourceError


class RuleError(SourceError):
    """Base of every error in a rules file."""


class RuleSyntaxError(RuleError):
    """The text does not follow the grammar (or a name is not kebab-case, ...)."""


class UnknownOpError(RuleError):
    """A call names no op of the registry."""


class ArityError(RuleError):
    """An op pattern has the wrong number of operands."""


class RuleAttributeError(RuleError):
    """An unknown attribute, or an attribute value of the wrong type."""


class MissingAttributeError(RuleError):
    """An RHS op call leaves out an attribute that has no (canonical) default."""


class UnboundVariableError(RuleError):
    """An RHS or guard variable that the LHS (or an earlier binding) does not bind."""


class GuardTypeError(RuleError):
    """An ill-typed guard or attribute expression (list compared with int, ...)."""


class RuleStructureError(RuleError):
    """A rule whose sides do not fit together: a bare variable as LHS root,
    a root defined twice, `_` on the RHS, ..."""


class UndefinedRootError(RuleError):
    """A multi-pattern RHS that does not define every LHS root."""


class DuplicateRuleError(RuleError):
    """Two rules with one name (in one file or across the files loaded together)."""


class EgglogRejectedError(RuleError):
    """egglog refused the compiled text of a rule (a bug in the compiler or prelude)."""


# ------------------------------------------------ test blocks (eqsat/ruletest)


class TestModelError(RuleError):
    """A test's model fragment is not a valid model (shape mismatch, unbound name, ...;
    an unknown op is an UnknownOpError, a wrong operand count an ArityError)."""

    __test__ = False


class ExpectationError(RuleError):
    """An `expect` line that says nothing checkable: an unknown form, an op the registry
    does not have, a name the fragment does not define, a bound that is not a number."""


class TestHardwareError(RuleError):
    """`on hw=...` names no preset and no readable hardware file."""

    __test__ = False


class DuplicateTestError(RuleError):
    """Two tests with one name in one file."""
