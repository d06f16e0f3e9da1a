"""Exact JSON round-trips of one file's scan result (findings, module summaries, syntax error), for the
result cache (hloscan.lint.cache): what is decoded equals what was encoded, type for type, so every
reporter prints the same bytes from a cached result as from a fresh one.

`Finding.to_dict` is the report's JSON form and drops what a report does not show (a span's end, the
Python function name) and the difference between a tuple and a list in `data`; here every value is kept
and tagged with its type. A value of any other type (a set, an object) cannot be encoded: the result is
then simply not cached (`Unencodable`), never cached approximately.
"""

from __future__ import annotations

import math
from typing import Any

from hloscan.hlo.errors import HloSyntaxError
from hloscan.lint.finding import Finding, Related, Severity, SourceLocation, Span


class Unencodable(ValueError):
    """A value with no exact JSON form here; the caller skips caching that result."""


# ---------------------------------------------------------------------- values of Finding.data

# Every JSON object in the encoded form is one of these single-key tags, so a dict from a check can never be
# mistaken for a tag: dicts are tagged too ({"dict": [[key, value], ...]}, which also keeps non-string keys
# and their order).
_TUPLE, _DICT, _FLOAT = "tuple", "dict", "float"


def encode_value(value: Any) -> Any:
    kind = type(value)  # exact types: a bool is not an int, an IntEnum is neither
    if value is None or kind in (bool, int, str):
        return value
    if kind is float:
        return value if math.isfinite(value) else {_FLOAT: repr(value)}
    if kind is list:
        return [encode_value(v) for v in value]
    if kind is tuple:
        return {_TUPLE: [encode_value(v) for v in value]}
    if kind is dict:
        return {_DICT: [[encode_value(k), encode_value(v)] for k, v in value.items()]}
    raise Unencodable(f"no exact JSON form for a {kind.__name__}")


def decode_value(value: Any) -> Any:
    if isinstance(value, list):
        return [decode_value(v) for v in value]
    if not isinstance(value, dict):
        return value
    (tag, body), = value.items()
    if tag == _TUPLE:
        return tuple(decode_value(v) for v in body)
    if tag == _DICT:
        return {_hashable(decode_value(k)): decode_value(v) for k, v in body}
    if tag == _FLOAT:
        return float(body)  # "nan", "inf", "-inf" only: float() of a repr, never an eval
    raise ValueError(f"unknown tag {tag!r}")


def _hashable(key: Any) -> Any:
    if isinstance(key, list):
        raise ValueError("a list cannot be a dict key")
    return key


# ---------------------------------------------------------------------- findings


def _span(span: Span) -> list:
    return [span.path, span.line, span.col, span.end_line, span.end_col]


def _span_of(fields: list) -> Span:
    path, line, col, end_line, end_col = fields
    return Span(path, line, col, end_line, end_col)


def encode_finding(f: Finding) -> dict[str, Any]:
    return {
        "code": f.code, "name": f.name, "severity": int(f.severity), "message": f.message, "span": _span(f.span),
        "module": f.module, "computation": f.computation, "instruction": f.instruction, "hint": f.hint,
        "xla_error": f.xla_error,
        "source": None if f.source is None else [f.source.file, f.source.line, f.source.function],
        "related": [[_span(r.span), r.note] for r in f.related],
        "data": encode_value(f.data),
    }


def decode_finding(d: dict[str, Any]) -> Finding:
    source = d["source"]
    return Finding(
        code=d["code"], name=d["name"], severity=Severity(d["severity"]), message=d["message"],
        span=_span_of(d["span"]), module=d["module"], computation=d["computation"],
        instruction=d["instruction"], hint=d["hint"], xla_error=d["xla_error"],
        source=None if source is None else SourceLocation(*source),
        related=tuple(Related(_span_of(span), note) for span, note in d["related"]),
        data=decode_value(d["data"]),
    )


# ---------------------------------------------------------------------- the file's parse outcome


def encode_error(error: HloSyntaxError | None) -> list | None:
    if error is None:
        return None
    return [error.message, error.line, error.col, error.source_line, error.path, error.code]


def decode_error(fields: list | None) -> HloSyntaxError | None:
    if fields is None:
        return None
    message, line, col, source_line, path, code = fields
    return HloSyntaxError(message, line, col, source_line, path, code)
