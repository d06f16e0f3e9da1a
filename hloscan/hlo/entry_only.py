"""The part of a big dump an entry signature reads: the header, the stack-frame tables and the ENTRY
computation, with every other computation blanked out (line numbers kept).

`signature`, `memory` and `diff` read only the entry's parameters and outputs, while a 48 MB after-optimization
dump is 98% fused computations (gpt48: the ENTRY is 5,800 of 361,000 lines). Parsing the rest cost those
commands a whole load each, `diff` two. Only texts the fast path would read anyway (machine-printed, over
parser.STRICT_AUTO_MAX_CHARS) are cut: a small or hand-written text is parsed whole, with the grammar's checks.
"""

from __future__ import annotations

from hloscan.hlo.parser import STRICT_AUTO_MAX_CHARS

# A printed computation starts at column 0 (`%name (`, `ENTRY %name (`) and ends at a line `}`. Plain `find`
# and `count`: a multi-line regex over 48 MB took a second.
_ENTRY = "\nENTRY "


def entry_only_text(text: str) -> str | None:
    """`text` with every computation but the ENTRY replaced by as many empty lines, or None when it is not
    one plainly printed module (small, several modules, no single ENTRY at column 0): parse it whole then."""
    if len(text) <= STRICT_AUTO_MAX_CHARS or "// -----" in text or text.count(_ENTRY) != 1:
        return None
    entry = text.find(_ENTRY) + 1
    other = text.find("\n%")  # the first computation when it is not the ENTRY
    first = entry if other < 0 else min(other + 1, entry)
    end = text.find("\n}", entry)
    if end < 0 or text[end + 2:end + 3] not in ("\n", ""):
        return None
    end += 2
    skipped = text.count("\n", first, entry)
    after = text.count("\n", end)
    return text[:first] + "\n" * skipped + text[entry:end] + "\n" * after
