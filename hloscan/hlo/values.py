"""Values XLA's parser rejects although the text is well-formed: integers out of 64-bit range and invalid
shapes. Both parse paths raise these; this module needs no grammar, so the fast path never loads lark."""

from __future__ import annotations

# XLA's lexer reads integers as int64 (uint64 for big literals) and rejects anything wider, so do we:
# besides matching XLA, this keeps a 5000-digit "dimension" from reaching int(), which raises a bare
# ValueError past Python's 4300-digit limit (found by fuzzing).
INT_MIN, INT_LIMIT = -(2**63), 2**64
_MAX_DIGITS = len(str(INT_LIMIT))


def _clip(text: str, limit: int = 24) -> str:
    return text if len(text) <= limit else text[:limit] + "..."


def hlo_int(token: str) -> int:
    """int() of an INT token (a lark Token is a str) or text, or IntegerOutOfRange when XLA could not hold
    it either."""
    text = str(token)
    if len(text.lstrip("-").lstrip("0")) > _MAX_DIGITS:
        raise IntegerOutOfRange(token)
    value = int(text)
    if not INT_MIN <= value < INT_LIMIT:
        raise IntegerOutOfRange(token)
    return value


class ShapeError(ValueError):
    """A shape that is well-formed text but invalid to XLA's parser (e.g. layout rank != dims)."""

    def __init__(self, message: str, line: int, col: int):
        super().__init__(message)
        self.message, self.line, self.col = message, line, col


class IntegerOutOfRange(ShapeError):
    """An integer literal XLA would reject, reported (as a ShapeError) at its token."""

    def __init__(self, token: str):  # a lark Token carries its line and column; plain text gets 1:1
        message = f"integer {_clip(str(token))} is out of range (XLA reads 64-bit integers)"
        super().__init__(message, getattr(token, "line", None) or 1, getattr(token, "column", None) or 1)
