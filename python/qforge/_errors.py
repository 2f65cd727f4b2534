"""Exceptions raised by qforge.

Every failure of qforge's C++ core arrives as a :class:`Error` (a ``RuntimeError``) carrying the
C++ message unchanged and its code (``qforge::ErrorCode``, e.g. ``"invalid_argument"``). Errors
about the caller's values (bad arguments, shapes that do not fit, results that overflow) are
also ``ValueError``, so ``except ValueError`` catches them as it would for numpy.
"""


class Error(RuntimeError):
    """A failure reported by qforge's C++ core; ``code`` names the qforge::ErrorCode."""

    def __init__(self, message, code="internal"):
        super().__init__(message)
        self.code = code


class InvalidArgumentError(Error, ValueError):
    """A value outside what the operation accepts (qforge::ErrorCode::invalid_argument)."""


class ShapeMismatchError(Error, ValueError):
    """Shapes that do not fit together (qforge::ErrorCode::shape_mismatch)."""


class ResultOverflowError(Error, ValueError):
    """A result that does not fit its type, e.g. the int32 accumulator (ErrorCode::overflow)."""


class UnsupportedError(Error):
    """A valid request no backend or kernel here implements (ErrorCode::unsupported)."""


_BY_CODE = {
    "invalid_argument": InvalidArgumentError,
    "shape_mismatch": ShapeMismatchError,
    "overflow": ResultOverflowError,
    "unsupported": UnsupportedError,
}


def from_code(code, message):
    """The exception for a qforge::Error of this code (called by the extension module)."""
    return _BY_CODE.get(code, Error)(message, code)
