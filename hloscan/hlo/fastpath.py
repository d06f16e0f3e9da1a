"""The fast path: a line-oriented `re` splitter for printer-formatted dumps, building the same IR as strict.py.

XLA's printer writes one instruction per line (hlo-text-format.md §11), so each line is cut with C-speed
regexes; shapes go through the grammar's `shape` rule, memoized per distinct string; attribute values stay
raw until read. Anything this splitter does not recognise makes it give up (`FastPathUnsupported`), and the
caller parses the module with the strict grammar instead, so the fast path never guesses.
"""

from __future__ import annotations

import re
from itertools import repeat

from hloscan.hlo.forkread import ForkedReader, RowsOf, worth_forking
from hloscan.hlo.attrs import NAME, balanced_counts, closing_bracket, split_attributes, split_top_level
from hloscan.hlo.ir import (LITERAL_OPCODES, Computation, Instruction, Layout, Module, Operand, Parameter, Shape,
                            StackFrameTables)
from hloscan.hlo.shapes import parse_shape
from hloscan.hlo.values import IntegerOutOfRange, hlo_int


class FastPathUnsupported(Exception):
    """The text is not in the printer's line form; parse it strictly."""


_NAME = NAME
_INSTRUCTION_HEAD = re.compile(r"([ \t]+)(ROOT[ \t]+)?(%?)(" + _NAME + r")[ \t]+=[ \t]+")
# An array shape with an optional layout (one level of nested braces covers `P(...)` physical shapes).
_ARRAY_SHAPE = re.compile(r"[a-z][a-z0-9]*\[[^\]]*\](?:\{[^{}]*(?:\{[^{}]*\}[^{}]*)*\})?")
_OPCODE = re.compile(r"[ \t]+(" + _NAME + r")\(")
# An operand is `[shape ]name[#i...]`: the reference is what follows the last blank (see _operands).
_OPERAND_REF_INDEXED = re.compile(r"(%?)(" + _NAME + r")((?:#\d+)*)")
# Matched against a line already known to end in `{`. Possessive blanks and a greedy result keep it linear:
# `[ \t]*(...)?[ \t]*` and a lazy `(.+?)[ \t]*\{` backtracked quadratically on a long run of blanks
# (a header line padded with 1 MB of spaces hung the parser; found by fuzzing).
_COMPUTATION_HEAD = re.compile(r"(ENTRY[ \t]+)?%?(" + _NAME + r")[ \t]*+(\(.*\)[ \t]*+->[ \t]*+(.+))?\{")
_COMPUTATION_END = re.compile(r"\}(?:,[ \t]*execution_thread=(\"[^\"\\]*+(?:\\.[^\"\\]*+)*+\"))?[ \t]*(?://.*)?")
_HEADER = re.compile(r"HloModule[ \t]+%?(" + _NAME + r"):?")
_TABLE_STRING = re.compile(r"(\d+)[ \t]+(\"[^\"\\]*+(?:\\.[^\"\\]*+)*+\")[ \t]*")
_TABLE_FIELDS = re.compile(r"(\d+)[ \t]+\{(.*)\}[ \t]*")
_FIELD = re.compile(r"(" + _NAME + r")=[ \t]*(-?\d+)")
# The whole inside of a FileLocations/StackFrames entry: fields only (findall alone skipped anything else).
_FIELDS = re.compile(r"(?:[ \t]*" + _NAME + r"=[ \t]*-?\d+[ \t]*,?)*[ \t]*")
# XLA's printer puts `/*index=5*/` before every fifth element of a long list (hlo-text-format.md §11).
_INDEX_COMMENT = r"/\*index=\d+\*/"
_REFERENCE = r"[ \t]*(?:" + _INDEX_COMMENT + r")?%?" + _NAME + r"[ \t]*"
_REFERENCE_LIST = _REFERENCE + r"(?:," + _REFERENCE + r")*"
# A tuple shape, nested up to three brackets deep (a tuple of tuples of tiled arrays); the shape text then goes
# to parse_shape, which reads it or rejects it like any other.
_TUPLE_SHAPE = r"\((?:[^()\n]|\((?:[^()\n]|\([^()\n]*\))*\))*\)"
# The common line in one match: indent, ROOT, sigil, name, shape (array with a brace-free layout, or tuple),
# opcode, operands and the attribute tail. The operand list is either plain references (`%a, %b`, group 7) or
# other bracket-free text (group 8: a parameter number or a literal). Used with `findall` over a body (re.M:
# no class crosses a line end); blanks before the line end are allowed (they end up in the tail, or after
# `)`). Other lines take the general route (_general_instruction).
_SIMPLE_ROWS = re.compile(
    r"^([ \t]+)(ROOT[ \t]+)?(%?)(" + _NAME + r")[ \t]+=[ \t]+([a-z][a-z0-9]*\[[^\]\n]*\](?:\{[^{}\n]*\})?|"
    + _TUPLE_SHAPE + r")[ \t]+("
    + _NAME + r")\((?:(" + _REFERENCE_LIST + r")|([^()\[\]{}#/\n]*))\)(,[^\n]*)?[ \t]*$", re.M
)
# On a text _REFERENCE_LIST matched: each match consumes its index comment, so only names are captured.
_REFERENCE_NAMES = re.compile(r"(?:" + _INDEX_COMMENT + r")?%?(" + _NAME + r")")
_INDEX_COMMENTS = re.compile(_INDEX_COMMENT)
# A signature of array parameters (the common case), e.g. `(p0: f32[8]{0}, p1: s32[]) -> f32[8]{0}`: the
# whole list is checked by _ARRAY_SIGNATURE, then _ARRAY_PARAMETERS picks (name, shape) pairs out of it. A
# tuple-shaped parameter or anything else takes the general route in _signature.
_PLAIN_ARRAY = r"[a-z][a-z0-9]*\[[^\]]*\](?:\{[^{}]*\})?"
_PARAMETER = r"[ \t]*(?:" + _INDEX_COMMENT + r")?" + _NAME + r":[ \t]*" + _PLAIN_ARRAY + r"[ \t]*"
_ARRAY_SIGNATURE = re.compile(r"(\((?:" + _PARAMETER + r"(?:," + _PARAMETER + r")*)?\))[ \t]*->[ \t]*(.+)")
_ARRAY_PARAMETERS = re.compile(r"(?:" + _INDEX_COMMENT + r")?(" + _NAME + r"):[ \t]*(" + _PLAIN_ARRAY + r")")
# Open strings and comments run to the end of the line: a failed match per later quote was quadratic.
_QUOTED = re.compile(r'"[^"\\]*+(?:\\.[^"\\]*+)*+(?:(")|\\?\Z)')
_TABLE_NAMES = ("FileNames", "FunctionNames", "FileLocations", "StackFrames")


def parse_module_fast(text: str, path: str | None = None, line_offset: int = 0) -> Module:
    if "\r" in text:
        raise FastPathUnsupported("carriage returns")
    if not worth_forking(text):
        return _LineParser(text, path, line_offset).module()
    reader = ForkedReader(text, body_rows)
    try:
        return _LineParser(text, path, line_offset, reader.rows).module()
    finally:
        reader.close()


def _int(text: str) -> int:
    """An integer the fast path reads itself; out of XLA's range, the strict path reports it with a position."""
    try:
        return hlo_int(text)
    except IntegerOutOfRange:
        raise FastPathUnsupported("integer out of range") from None


def _closing(text: str, open_pos: int) -> int:
    """Index just past the bracket that closes the one at open_pos (strings and comments skipped)."""
    end = closing_bracket(text, open_pos)
    if end is None:
        raise FastPathUnsupported("unbalanced brackets")
    return end


def _tail_is_plain(tail: str) -> bool:
    """True when an attribute tail has balanced brackets outside strings and no comment.

    An instruction continued on the next line, or cut short, leaves its tail unbalanced; such text goes to
    the strict grammar, which reports the error where XLA would. Raw counts settle the common line
    (a few C-level calls); strings are stripped only when those counts or a comment marker say to look.
    """
    if balanced_counts(tail) and "//" not in tail and "/*" not in tail:
        return True
    # A closed string goes; an open one leaves its quote behind, which rejects the tail below.
    bare = _QUOTED.sub(lambda m: "" if m.group(1) else '"', tail) if '"' in tail else tail
    if "/*" in bare:  # the printer's `/*index=N*/` in long lists (e.g. a tuple sharding) is no comment to fear
        bare = _INDEX_COMMENTS.sub("", bare)
    if "//" in bare or "/*" in bare or '"' in bare:
        return False
    return balanced_counts(bare)


# An instruction continued over more lines than this is left to the grammar (a kernel's JSON takes a dozen).
_MAX_CONTINUED = 10_000


def _depth(line: str) -> int:
    """Brackets the line opens minus those it closes, strings skipped (FastPathUnsupported for a string left
    open: a string may not span lines, the grammar reports it)."""
    if '"' in line:
        line = _QUOTED.sub(lambda m: "" if m.group(1) else '"', line)
        if '"' in line:
            raise FastPathUnsupported("a string left open at a line end")
    return line.count("{") + line.count("(") + line.count("[") - line.count("}") - line.count(")") - line.count("]")


def body_rows(text: str, start: int, end: int, lines: int) -> list[tuple] | None:
    """The instructions of the body text[start:end] (`lines` lines) as plain tuples, when every line is a
    common one: (name, opcode, shape text, operand names, literal, attribute tail, is root, column, sigil).
    None when any line is in another form.

    One `findall` takes all lines' groups in C. Matches are anchored at line starts and ends and cannot
    cross a line end, so as many matches as lines means each line matched (the k-th match is the k-th
    line). Plain tuples, so that forkread can send them from a child process with marshal.
    """
    found = _SIMPLE_ROWS.findall(text, start, end) if end > start else []
    if len(found) != lines:
        return None
    rows = []
    append, tail_is_plain, literal_opcodes, names_of = rows.append, _tail_is_plain, LITERAL_OPCODES, _reference_names
    for indent, root, sigil, name, shape_text, opcode, references, other, tail in found:
        if tail:
            if tail[-1] in " \t":
                tail = tail.rstrip()
            if not tail_is_plain(tail):
                return None
        literal, names = None, ()
        if opcode in literal_opcodes:
            literal = (references or other).strip()
        elif references:
            names = names_of(references)
        elif other.strip():  # not references: `add(1, 2)` holds literals, for the strict grammar
            return None
        append((name, opcode, shape_text, names, literal, tail, bool(root), len(indent) + 1, sigil))
    return rows


def _reference_names(references: str) -> list[str]:
    """The names of an operand list _REFERENCE_LIST matched: names, `%` sigils, blanks and commas, but for the
    tabs and `/*index=N*/` comments of some lists. So C-level replace and split take the names out (a regex
    findall per line cost a quarter more) and only those others go to the regex."""
    if "/*" in references or "\t" in references:
        return _REFERENCE_NAMES.findall(references)
    return references.replace("%", "").replace(" ", "").split(",")


def _instructions(rows: list[tuple], first_line: int) -> list[Instruction]:
    """The Instructions of consecutive rows, the first on line `first_line`. All in C but the loop:
    tuple.__new__ builds the NamedTuple records (Operand(name, None, (), None) for each operand name, then
    the Instruction) without a Python-level __new__ call each; a row without operands (a parameter, a
    constant: a quarter of a dump) skips building the empty tuple through map and zip."""
    new, operand_type, nones, empties = tuple.__new__, repeat(Operand), repeat(None), repeat(())
    return [new(Instruction, (name, opcode, parse_shape(shape_text),
                              tuple(map(new, operand_type, zip(names, nones, empties, nones))) if names else (),
                              tail, is_root, literal, first_line + k, col))
            for k, (name, opcode, shape_text, names, literal, tail, is_root, col, _) in enumerate(rows)]


class _Lines:
    """The text's lines by index, each cut from the text when asked for.

    `text.split("\n")` copied a whole dump into line strings (48 MB and 450k objects for gpt48) although the
    parser reads few of them: bodies are read in bulk from the text itself (body_rows). A cursor (a line
    index and the offset where that line starts) moves to each line asked for, a few lines at a time, and
    jumps past a body read in bulk (`seek`)."""

    def __init__(self, text: str):
        self.text = text
        self.count = text.count("\n") + 1  # len(text.split("\n"))
        self.at, self.pos = 0, 0

    def __len__(self) -> int:
        return self.count

    def start(self, index: int) -> int:
        """The offset where line `index` starts; len(text) past the last line."""
        k, pos, text = self.at, self.pos, self.text
        while k < index:
            newline = text.find("\n", pos)
            if newline < 0:  # past the last line (a text cut short)
                return len(text)
            pos = newline + 1
            k += 1
        while k > index:
            pos = text.rfind("\n", 0, pos - 1) + 1
            k -= 1
        self.at, self.pos = k, pos
        return pos

    def seek(self, index: int, offset: int) -> None:
        """Line `index` starts at `offset` (as the caller found)."""
        self.at, self.pos = index, offset

    def __getitem__(self, index: int) -> str:
        if not 0 <= index < self.count:
            raise IndexError(index)
        return self.span(index, index)

    def span(self, first: int, last: int) -> str:
        """Lines `first` to `last` as they stand in the text: `"\n".join(lines[first : last + 1])`."""
        begin = self.start(first)
        end = self.text.find("\n", self.start(last) if last != first else begin)
        return self.text[begin:end] if end >= 0 else self.text[begin:]


class _LineParser:
    def __init__(self, text: str, path: str | None, line_offset: int, rows: RowsOf = body_rows):
        self.text = text
        self.rows = rows
        self.lines = _Lines(text)
        self.path = path
        self.offset = line_offset
        self.i = 0
        self.percent: bool | None = None

    def module(self) -> Module:
        self._skip_blank()
        name, attrs, has_header = "", (), False
        if self._peek().startswith("HloModule"):
            name, attrs = self._header(self._next())
            has_header = True
        self._skip_blank()
        frames = self._stack_frames() if self._peek().startswith("FileNames") else None
        comps = []
        while True:
            self._skip_blank()
            if self.i >= len(self.lines):
                break
            comps.append(self._computation())
        if not comps:
            raise FastPathUnsupported("no computation")
        if not has_header:
            if not (comps[0].is_entry or comps[0].parameters is None):
                raise FastPathUnsupported("header-less text that XLA reads as one instruction")
            name = "module_" + next((c.name for c in comps if c.is_entry), comps[-1].name)
        percent = self.percent if self.percent is not None else True
        return Module(name, tuple(comps), attrs, frames, has_header, percent, self.path, 1 + self.offset)

    # ------------------------------------------------------------------ lines

    def _peek(self) -> str:
        return self.lines[self.i] if self.i < len(self.lines) else ""

    def _next(self) -> str:
        line = self.lines[self.i]
        self.i += 1
        return line

    def _skip_blank(self) -> None:
        """Skip blank lines and whole-line `//` comments (lit-test RUN/CHECK lines)."""
        lines = self.lines
        while self.i < len(lines):
            stripped = lines[self.i].lstrip()
            if stripped and not stripped.startswith("//"):
                break
            self.i += 1

    # ------------------------------------------------------------------ header and tables

    def _header(self, line: str):
        m = _HEADER.match(line)
        if m is None:
            raise FastPathUnsupported("header")
        rest = line[m.end() :].rstrip()
        if rest and not rest.startswith(","):
            raise FastPathUnsupported("header")
        if rest.count("{") != rest.count("}") or "//" in rest:
            raise FastPathUnsupported("multi-line header")
        return m.group(1), tuple(split_attributes(rest))

    def _stack_frames(self) -> StackFrameTables:
        tables: dict[str, list] = {name: [] for name in _TABLE_NAMES}
        current = None
        while self.i < len(self.lines):
            line = self._peek().strip()
            if line in _TABLE_NAMES:
                current = line
            elif not line:
                pass
            elif current in ("FileNames", "FunctionNames") and (m := _TABLE_STRING.fullmatch(line)):
                tables[current].append((_int(m.group(1)), m.group(2)))
            elif current in ("FileLocations", "StackFrames") and (m := _TABLE_FIELDS.fullmatch(line)):
                if not _FIELDS.fullmatch(m.group(2)):
                    raise FastPathUnsupported("stack frame table entry")
                fields = tuple((k, _int(v)) for k, v in _FIELD.findall(m.group(2)))
                tables[current].append((_int(m.group(1)), fields))
            else:
                break
            self.i += 1
        return StackFrameTables(*(tuple(tables[name]) for name in _TABLE_NAMES))

    # ------------------------------------------------------------------ computations

    def _computation(self) -> Computation:
        number = self.i
        line = self._next()
        head = line.rstrip(" \t")
        m = _COMPUTATION_HEAD.fullmatch(head) if head.endswith("{") else None
        if m is None or line[:1] in " \t":
            raise FastPathUnsupported(f"computation header at line {number + 1}")
        params = result = None
        if m.group(3):
            params, result = self._signature(m.group(3))
        instructions = self._bulk_body()
        if instructions is None:
            instructions = self._body()
        end = _COMPUTATION_END.fullmatch(self.lines[self.i - 1])
        if not instructions:
            raise FastPathUnsupported("empty computation")
        col = 1
        return Computation(m.group(2), tuple(instructions), bool(m.group(1)), params, result, end.group(1),
                           number + 1 + self.offset, col)

    def _bulk_body(self) -> list[Instruction] | None:
        """The body up to and past its closing `}` when every line of it is a common one (body_rows), else
        None: the caller then reads it line by line with _body, which knows every other form."""
        first = self.i
        start = self.lines.start(first)  # len(text) past the last line: nothing left to read in bulk
        text = self.text
        end = text.find("\n}", start - 1) if 0 < start < len(text) else -1
        if end < 0:
            return None
        last = first + text.count("\n", start, end + 1)  # the line of the closing `}`
        rows = self.rows(text, start, end, last - first)
        if rows is None:
            return None
        self.lines.seek(last, end + 1)
        if _COMPUTATION_END.fullmatch(self.lines[last]) is None:
            return None
        if rows and self.percent is None:
            self.percent = bool(rows[0][8])
        instructions = _instructions(rows, first + 1 + self.offset)
        self.i = last + 1
        return instructions

    def _body(self) -> list[Instruction]:
        """The instructions up to and past the closing `}`, line by line: for a body with a line in a form
        _bulk_body does not take (blank, comment, or an instruction the general way reads)."""
        instructions: list[Instruction] = []
        append = instructions.append
        lines, count = self.lines, len(self.lines)
        base = 1 + self.offset
        i = self.i
        while True:
            if i >= count:
                raise FastPathUnsupported("unterminated computation")
            text = lines[i]
            rows = body_rows(text, 0, len(text), 1)  # the common line, as in bulk
            if rows is not None:
                if self.percent is None:
                    self.percent = bool(rows[0][8])
                append(_instructions(rows, i + base)[0])
            elif not text.strip() or text.lstrip().startswith("//"):
                pass
            elif text[:1] == "}":
                if _COMPUTATION_END.fullmatch(text) is None:
                    raise FastPathUnsupported("computation end")
                self.i = i + 1
                return instructions
            else:
                last = i
                if _depth(text) > 0:  # continued on the next lines (jax pretty-prints a kernel's cost_estimate JSON)
                    text, last = self._continued(i)
                append(self._general_instruction(text, i))
                i = last
            i += 1

    def _continued(self, first: int) -> tuple[str, int]:
        """The instruction that starts on line `first` and closes its brackets on a later line, as one text with
        its line ends, and the index of its last line. A string across lines, or brackets that never close
        within _MAX_CONTINUED lines, are left to the strict grammar."""
        lines = self.lines
        depth = _depth(lines[first])
        last = first
        while depth > 0:
            last += 1
            if last >= len(lines) or last - first > _MAX_CONTINUED:
                raise FastPathUnsupported(f"unclosed brackets from line {first + 1}")
            depth += _depth(lines[last])
        if depth < 0:
            raise FastPathUnsupported(f"unbalanced brackets at line {last + 1}")
        return lines.span(first, last), last

    def _signature(self, text: str):
        m = _ARRAY_SIGNATURE.fullmatch(text)
        if m is not None:
            pairs = _ARRAY_PARAMETERS.findall(m.group(1))
            return (tuple(Parameter(name, parse_shape(shape)) for name, shape in pairs),
                    parse_shape(m.group(2).strip()))
        close = _closing(text, 0)
        params_text = text[1 : close - 1]
        rest = text[close:].strip()
        if not rest.startswith("->"):
            raise FastPathUnsupported("signature")
        params = []
        if params_text.strip():
            for part in split_top_level(params_text):
                pname, sep, shape_text = part.strip().partition(":")
                if not sep or not pname:
                    raise FastPathUnsupported("signature parameter")
                params.append(Parameter(pname, parse_shape(shape_text.strip())))
        return tuple(params), parse_shape(rest[2:].strip())

    # ------------------------------------------------------------------ instructions

    def _general_instruction(self, line: str, number: int) -> Instruction:
        head = _INSTRUCTION_HEAD.match(line)
        if head is None:
            raise FastPathUnsupported(f"instruction at line {number + 1}")
        if self.percent is None:
            self.percent = bool(head.group(3))
        pos = head.end()
        if line[pos : pos + 1] == "(":
            shape_end = _closing(line, pos)
        else:
            sm = _ARRAY_SHAPE.match(line, pos)
            if sm is None:
                raise FastPathUnsupported(f"shape at line {number + 1}")
            shape_end = sm.end()
        shape = parse_shape(line[pos:shape_end])
        om = _OPCODE.match(line, shape_end)
        if om is None:
            raise FastPathUnsupported(f"opcode at line {number + 1}")
        opcode = om.group(1)
        open_paren = om.end() - 1
        close = line.find(")", open_paren)
        inner = line[open_paren + 1 : close] if close >= 0 else ""
        if close < 0 or "(" in inner or "/*" in inner:
            close = _closing(line, open_paren) - 1
            inner = line[open_paren + 1 : close]
        tail = line[close + 1 :].rstrip()
        if not _tail_is_plain(tail):
            raise FastPathUnsupported(f"comment or unbalanced attributes at line {number + 1}")
        if tail and tail[0] != ",":
            raise FastPathUnsupported(f"text after operands at line {number + 1}")
        literal = None
        operands: tuple[Operand, ...] = ()
        if opcode in LITERAL_OPCODES:
            literal = inner.strip()
        elif inner.strip():
            operands = self._operands(inner, number)
        col = len(head.group(1)) + 1
        return Instruction(head.group(4), opcode, shape, operands, tail, bool(head.group(2)), literal,
                           number + 1 + self.offset, col)

    def _operands(self, inner: str, number: int) -> tuple[Operand, ...]:
        parts = split_top_level(inner) if ("[" in inner or "(" in inner or "{" in inner) else inner.split(",")
        out = []
        for part in parts:
            part = part.strip()
            if part.startswith("/*"):
                end = part.find("*/")
                if end < 0:  # an unclosed comment (fuzzing found the bare index() raising ValueError)
                    raise FastPathUnsupported(f"unclosed comment at line {number + 1}")
                part = part[end + 2 :].strip()
            # rpartition, not a `(.+?)[ \t]+name` regex: that one was quadratic in a long run of blanks.
            shape_text, _, ref = part.replace("\t", " ").rpartition(" ")
            m = _OPERAND_REF_INDEXED.fullmatch(ref)
            if m is None:
                raise FastPathUnsupported(f"operand at line {number + 1}")
            shape_text = shape_text.strip()
            shape = parse_shape(shape_text) if shape_text else None
            index = tuple(_int(i) for i in m.group(3).split("#")[1:]) if m.group(3) else ()
            out.append(Operand(m.group(2), shape, index))
        return tuple(out)
