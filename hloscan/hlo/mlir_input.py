"""Recognise MLIR (StableHLO / MHLO) text given where HLO text is expected, and say what to do instead.

Current jax returns StableHLO MLIR from `jax.jit(f).lower(...).as_text()`; hloscan reads XLA's HLO text.
Without this, the grammar's "expected one of ..." error at `module @jit_f` is all the user sees. Only the
first code lines are looked at (and only once the HLO parse has failed), so valid HLO never pays for it.
"""

from __future__ import annotations

import re

from hloscan.hlo.errors import HloSyntaxError

# The first code line of MLIR text: `module @name attributes {...} {`, `module {`, a bare `func.func`, the
# generic form `"builtin.module"() (...)`, or an attribute alias / location line (`#loc1 = loc(...)`,
# `#map = affine_map<...>`) that MLIR prints before the module. HLO text starts with `HloModule`, `ENTRY`
# or a computation, never with these.
_MLIR_START = re.compile(
    r'^[ \t]*(?:module\b[ \t]*(?:@[\w.$-]+[ \t]*)?(?:attributes\b|\{)|func\.func\b|"builtin\.module"|#[\w$.-]+[ \t]*=)',
    re.M)
# Confirmation somewhere in the text that this is MLIR of an XLA program (dialect ops or tensor types).
_MLIR_BODY = re.compile(r"\b(?:stablehlo|mhlo|func|chlo|sdy|tpu|builtin)\.[a-z_]+|\btensor<")
_COMMENT_OR_BLANK = re.compile(r"[ \t]*(?://[^\n]*)?\n")
_LOOK_LINES = 50

ADVICE = ("hloscan reads XLA's HLO text, not MLIR: from jax use `jax.jit(f).lower(...).as_text(dialect=\"hlo\")` "
          "(or `.lower(...).compile().as_text()` for the optimised HLO), pass the Lowered/Compiled object to "
          "hloscan.check(), or dump with XLA_FLAGS=--xla_dump_to=DIR and scan DIR")


def mlir_dialect(text: str) -> tuple[int, int, str] | None:
    """(line, col, dialect name) of the MLIR module start when `text` is MLIR text, else None."""
    head = text[: 1 << 16]
    pos, line = 0, 1
    while line <= _LOOK_LINES:
        blank = _COMMENT_OR_BLANK.match(head, pos)
        if blank is None:
            break
        pos, line = blank.end(), line + 1
    start = _MLIR_START.match(head, pos)
    if start is None or start.start() != pos:
        return None
    body = _MLIR_BODY.search(head)
    if body is None:
        return None
    first = head[pos:].lstrip(" \t")
    col = len(head[pos:]) - len(first) + 1
    return line, col, _dialect_name(head)


def _dialect_name(head: str) -> str:
    if "stablehlo." in head:
        return "StableHLO MLIR"
    if "mhlo." in head and re.search(r"\bmhlo\.[a-z_]+\b(?! =)", head):
        return "MHLO MLIR"
    return "MLIR"


def reject_mlir(text: str, path: str | None, line_offset: int = 0) -> None:
    """Raise HLO001 at the module start, with what to do instead, when `text` is MLIR rather than HLO."""
    found = mlir_dialect(text)
    if found is None:
        return
    line, col, dialect = found
    source = text.split("\n", line)[line - 1] if line >= 1 else ""
    raise HloSyntaxError(f"this is {dialect} text, not HLO text; {ADVICE}", line + line_offset, col, source, path)
