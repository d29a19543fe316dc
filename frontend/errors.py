"""The kinds of mistake a model can contain, one exception class each."""

from __future__ import annotations

from eqsat.errors import SourceError


class ModelError(SourceError):
    """Base of every error in a model file."""


class ModelSyntaxError(ModelError):
    pass


class UnknownOpError(ModelError):
    pass


class ArityError(ModelError):
    pass


class AttributeError_(ModelError):
    """Unknown, missing or ill-typed attribute."""


class TypeMismatchError(ModelError):
    """Shapes or dtypes an op does not accept."""


class UnboundNameError(ModelError):
    pass


class DuplicateNameError(ModelError):
    pass


class UnboundDimError(ModelError):
    pass


class MissingOutputError(ModelError):
    pass


class MissingDataError(ModelError):
    """An `external` const whose values the params file does not hold."""
