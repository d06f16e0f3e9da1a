"""HLO001 for brackets nested deeper than any dump needs: checked before a parser recurses into them."""

from __future__ import annotations

import re

from hloscan.hlo.errors import HloSyntaxError

# Deeper bracket nesting than any dump needs (tuple shapes, literals and JSON nest a dozen levels). Lark's
# LALR stack costs ~250 bytes per open bracket, so 1 MB of `(` took 250 MB and 4 s before failing; past
# this depth we stop early with a positioned error instead (found by fuzzing).
MAX_NESTING = 256
# Open strings and comments end at the line end or text end, so a run of open quotes stays linear.
_BRACKETS = re.compile(r'"[^"\\\n]*+(?:\\.[^"\\\n]*+)*+(?:"|\\?(?=\n|\Z))|/\*[\s\S]*?(?:\*/|\Z)|//[^\n]*|[({\[]|[)}\]]')


def check_nesting(text: str, path: str | None, line_offset: int = 0) -> None:
    """Raise HLO001 at the first bracket nested deeper than MAX_NESTING (strings and comments skipped)."""
    if text.count("(") + text.count("{") + text.count("[") <= MAX_NESTING:
        return
    depth = 0
    for m in _BRACKETS.finditer(text):
        ch = m.group()
        if ch in "({[":
            depth += 1
            if depth > MAX_NESTING:
                line = text.count("\n", 0, m.start()) + 1
                col = m.start() - (text.rfind("\n", 0, m.start()) + 1) + 1
                source = text.split("\n")[line - 1]
                raise HloSyntaxError(f"brackets nested more than {MAX_NESTING} deep", line + line_offset, col,
                                     source, path)
        elif ch in ")}]":
            depth = max(0, depth - 1)
