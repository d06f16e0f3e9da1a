"""A lark-free recogniser of what the fast path leaves unchecked: attribute values, literals and names.

The fast path (fastpath.py) reads the line structure of a module exactly but keeps attribute values as raw
text, so on its own it accepts `input_output_alias={{0}: (a, {})}` or `constant({{1,2},{3,}})`, which the grammar
rejects. `recognised(module, text)` says whether every such part of a module the fast path built is in a form
the grammar (grammars/hlo.lark) accepts. It is conservative: True only for forms it knows to be valid, False
for anything else (a bad value, or a valid one it does not know, such as an inline called computation), and
the caller then parses that text with the grammar, which reports the error exactly where the strict path
does. So the default mode gets the grammar's verdict without lark on the common valid file.

Each recogniser mirrors one rule of the grammar; the token regexes are the grammar's terminals. Nothing here
raises on any input: an exception from a helper counts as "not recognised".
"""

from __future__ import annotations

import re

from hloscan.hlo.attrs import CALL_ATTRS, NAME, closing_bracket, split_top_level, strip_comments_and_space
from hloscan.hlo.ir import ELEMENT_BITS, LITERAL_OPCODES, Module

# The grammar's terminals (hlo.lark), anchored for fullmatch.
_STRING = r'"[^"\\\n\r]*+(?:\\.[^"\\\n\r]*+)*+"'
_INT = r"-?\d+"
_FLOAT = r"-?(?:\d+\.\d*|\d*\.\d+)(?:[eE][+-]?\d+)?|-?\d+[eE][+-]?\d+"
_DXD = r"\d+(?:x\d+)+"
_PAD = r"-?\d+_-?\d+(?:_-?\d+)?(?:x-?\d+_-?\d+(?:_-?\d+)?)*"
_NAN = r"-?nan(?:\(0x[0-9a-fA-F]+\))?"
_INF = r"-?inf"
_ELEMENT_TYPES = frozenset(ELEMENT_BITS)  # the grammar's element types are XLA's
# Words the grammar's lexer never reads as a plain identifier (keywords, or terminals of higher priority).
_NOT_IDENT = _ELEMENT_TYPES | {"ROOT", "ENTRY", "true", "false", "nan", "inf", "HloModule"}

_STRING_RE = re.compile(_STRING)
_NAME_RE = re.compile(NAME)
_PCT_NAME_RE = re.compile("%" + NAME)
_INT_RE = re.compile(_INT)
_UINT_RE = re.compile(r"\d+")
# A scalar of a generic value (INT | FLOAT | STRING | IDENT | PCT_NAME | DXD | PAD | NAN | INF | TRUE | FALSE).
_SCALAR_RE = re.compile("|".join((_INT, _FLOAT, _DXD, _PAD, _NAN, _INF, _STRING, "%" + NAME)))
_WINDOW_VALUE_RE = re.compile("|".join((_DXD, _INT, _PAD)))
_PAD_RE = re.compile(_PAD)
_DIM_LABELS_RE = re.compile(r"[0-9bf?]{2,}_[0-9io?]{2,}->[0-9bf?]{2,}")
_INDEX_COMMENT_RE = re.compile(r"/\*index=\d+\*/")
_BRACE_COMMENT_RE = re.compile(r"\{[ \t]*/\*")
# The grammar's BLOB: balanced braces (12 deep) skipping double-quoted strings.
_BLOB_INNER = r'(?:[^{}"]++|"[^"\\]*+(?:\\.[^"\\]*+)*+")*+'
_BLOB = _BLOB_INNER
for _ in range(11):
    _BLOB = r'(?:[^{}"]++|"[^"\\]*+(?:\\.[^"\\]*+)*+"|\{' + _BLOB + r'\})*+'
_BLOB_RE = re.compile(r"\{" + _BLOB + r"\}")
_INTS = r"[ \t]*(?:" + _INT + r"[ \t]*(?:,[ \t]*" + _INT + r"[ \t]*)*)?"
_INT_BRACKET = r"\[" + _INTS + r"\]"
_IOTA_RE = re.compile(_INT_BRACKET + r"[ \t]*<=[ \t]*" + _INT_BRACKET
                      + r"(?:[ \t]*T[ \t]*\([ \t]*" + _INT + r"[ \t]*(?:,[ \t]*" + _INT + r"[ \t]*)*\))?")
_INT_GROUP = r"\{" + _INTS + r"\}"
_SHAPE_INDEX = _INT_GROUP
_REPLICA_LIST_RE = re.compile(r"\{[ \t]*(?:" + _INT_GROUP + r"[ \t]*(?:,[ \t]*" + _INT_GROUP + r"[ \t]*)*)?\}")
_ALIAS = _SHAPE_INDEX + r"[ \t]*:[ \t]*\([ \t]*" + _INT + r"[ \t]*,[ \t]*" + _SHAPE_INDEX
_ALIAS_LIST_RE = re.compile(r"\{[ \t]*(?:" + _ALIAS + r"(?:[ \t]*,[ \t]*" + NAME + r")?[ \t]*\)"
                            r"(?:[ \t]*,[ \t]*" + _ALIAS + r"(?:[ \t]*,[ \t]*" + NAME + r")?[ \t]*\))*)?[ \t]*\}")
_ALIASING_RE = re.compile(r"\{[ \t]*(?:" + _ALIAS + r"[ \t]*\)(?:[ \t]*,[ \t]*" + _ALIAS + r"[ \t]*\))*)?[ \t]*\}")
_DONOR = r"\([ \t]*" + _INT + r"[ \t]*,[ \t]*" + _SHAPE_INDEX + r"[ \t]*\)"
_DONOR_LIST_RE = re.compile(r"\{[ \t]*(?:" + _DONOR + r"(?:[ \t]*,[ \t]*" + _DONOR + r")*)?[ \t]*\}")
_SLICE_RANGE = r"\[[ \t]*" + _INT + r"[ \t]*:[ \t]*" + _INT + r"[ \t]*(?::[ \t]*" + _INT + r"[ \t]*)?\]"
_SLICE_RE = re.compile(r"\{[ \t]*(?:" + _SLICE_RANGE + r"(?:[ \t]*,[ \t]*" + _SLICE_RANGE + r")*)?[ \t]*\}")
_ATTR_HEAD_RE = re.compile(r"[ \t]*(" + NAME + r")=[ \t]*")
_FIELD_HEAD_RE = re.compile(r"(" + NAME + r")=[ \t]*")
_WORD_RE = re.compile(r"[^ \t,{}()\[\]]+")
# Sharding bodies: `replicated`, `maximal device=N`, `devices=[..]...`, each optionally `last_tile_dim_replicate` /
# `last_tile_dims={...}` (the tiled form); metadata and shard groups go to the grammar.
_SHARDING_KIND = r"(?:replicated|manual|unknown|unreduced)"
_LAST_TILE_DIMS = r"last_tile_dims=[ \t]*\{[ \t]*" + _SHARDING_KIND.replace("?:", "?:maximal|") \
    + r"(?:[ \t]*,[ \t]*" + _SHARDING_KIND.replace("?:", "?:maximal|") + r")*[ \t]*\}"
_TILE_ASSIGNMENT = (r"(?:" + _INT_BRACKET + r"[ \t]*" + _INT + r"(?:[ \t]*,[ \t]*" + _INT + r")*|"
                    + _IOTA_RE.pattern + r")")
_SHARDING_BODY_RE = re.compile(
    r"[ \t]*(?:" + _SHARDING_KIND + r"|maximal[ \t]+device=[ \t]*" + _INT
    + r"|devices=[ \t]*" + _TILE_ASSIGNMENT + r"(?:[ \t]+last_tile_dim_replicate)?(?:[ \t]+" + _LAST_TILE_DIMS + r")?"
    + r")[ \t]*")
_LITERAL_TOKEN_RE = re.compile(r"(?:[ \t]|/\*(?:[^*]|\*(?!/))*\*/)*(?:([{}(),])|(\.\.\.)|("
                               + "|".join((_FLOAT, _NAN, _INF, _INT, "true", "false")) + r")(?![A-Za-z0-9_.\-]))")
# Characters Python's str.strip()/split() take for blanks but the grammar's WS does not (the fast path uses them).
_ODD_BLANKS = re.compile("[\x0b\x1c-\x1f\x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]")

# Attributes naming one called computation (the list-valued ones are `_name_list`s).
_CALL_KEYS = frozenset(CALL_ATTRS) - {"branch_computations", "called_computations"}


def recognised(module: Module, text: str) -> bool:
    """True when every attribute value, literal and name of a module the fast path built from `text` is in a
    form the grammar accepts. False means: let the grammar decide."""
    try:
        return _recognised(module, text)
    except Exception:  # noqa: BLE001 - a failure to recognise is a "no": the grammar then reads the text
        return False


def _recognised(module: Module, text: str) -> bool:
    if _ODD_BLANKS.search(text) or not _header_ok(module, text):
        return False
    attributes, literal = _instruction_attrs, _literal
    for comp in module.computations:
        if not _name_ok(comp.name):
            return False
        for param in comp.parameters or ():
            if not _name_ok(param.name):
                return False
        for inst in comp.instructions:
            if inst.name in _NOT_IDENT or inst.opcode in _NOT_IDENT:
                return False
            for op in inst.operands:
                if op.name is None or op.name in _NOT_IDENT:
                    return False
            if inst.attrs_text:
                pairs = attributes(inst.attrs_text)
                if pairs is None:
                    return False
                if "_attrs" not in inst.__dict__:  # Instruction.attrs' cache: validation reads them next
                    inst.__dict__["_attrs"] = pairs
            if inst.opcode in LITERAL_OPCODES and inst.literal and not literal(inst.opcode, inst.literal):
                return False
    return True


def _name_ok(name: str) -> bool:
    return name not in _NOT_IDENT and _NAME_RE.fullmatch(name) is not None


# ------------------------------------------------------------------------------------------ header

_HEADER_LINE = re.compile(r"HloModule[ \t]+(%?)(" + NAME + r")(:?)")
_HEADER_LINE_OF_TEXT = re.compile(r"^HloModule[^\n]*", re.M)
_WORDS = re.compile(r"[A-Za-z_][A-Za-z0-9_.\-]*")


def _header_ok(module: Module, text: str) -> bool:
    if not module.has_header:
        return module.stack_frames is None
    found = _HEADER_LINE_OF_TEXT.search(text)
    if found is None:
        return False
    line = found.group().rstrip(" \t")
    m = _HEADER_LINE.match(line)
    if m is None or not _name_ok(m.group(2)) or (m.group(1) and m.group(3)):
        return False
    rest = line[m.end() :]
    if rest and not _attribute_tail(rest, _module_value):
        return False
    return module.stack_frames is None or _frames_ok(text)


_TABLE_ORDER = ("FileNames", "FunctionNames", "FileLocations", "StackFrames")
_TABLE_FIELDS_RE = re.compile(r"\d+[ \t]+\{[ \t]*(?:" + NAME + r"=[ \t]*" + _INT + r"[ \t]*,?[ \t]*)*\}[ \t]*")


def _frames_ok(text: str) -> bool:
    """The stack-frame tables: all four, in the grammar's order (the fast path reads them in any order)."""
    seen = []
    for line in text.split("\n"):
        word = line.strip()
        if word in _TABLE_ORDER:
            seen.append(word)
        elif seen and seen[-1] in ("FileLocations", "StackFrames") and word and word[0].isdigit():
            if _TABLE_FIELDS_RE.fullmatch(word) is None:
                return False
        elif word.startswith(("ENTRY", "%")) or word.endswith("{"):
            break
    return tuple(seen) == _TABLE_ORDER


def _module_value(key: str, value: str) -> bool:
    if key == "entry_computation_layout":
        return _entry_layout(value)
    if key == "input_output_alias":  # the alias kind is an IDENT: no keyword, no element type
        return _ALIAS_LIST_RE.fullmatch(value) is not None and not any(w in _NOT_IDENT for w in _WORDS.findall(value))
    if key == "buffer_donor":
        return _DONOR_LIST_RE.fullmatch(value) is not None
    if key == "frontend_attributes":
        return _frontend_attributes(value)
    if key in ("origin_recovery_table", "debug_attributes"):
        return _BLOB_RE.fullmatch(value) is not None
    return _generic(value)


def _entry_layout(value: str) -> bool:
    if not (value.startswith("{") and value.endswith("}")):
        return False
    inner = value[1:-1].strip()
    if not inner.startswith("("):
        return False
    close = closing_bracket(inner, 0)
    if close is None:
        return False
    params, rest = inner[1 : close - 1], inner[close:].strip()
    if not rest.startswith("->"):
        return False
    items = split_top_level(params) if params.strip() else []
    return all(_shape(item.strip()) for item in items) and _shape(rest[2:].strip())


# ------------------------------------------------------------------------------------------ attributes

def _instruction_attrs(tail: str) -> tuple[tuple[str, str], ...] | None:
    """The (name, value) pairs of an instruction's attribute text, exactly as `split_attributes` gives them, when
    every comma-separated part is an attribute whose value the grammar takes; else None."""
    if "/*" in tail and tail.rstrip(" \t").endswith("*/"):
        return None  # the strict path's attribute text ends at the last value, the fast path's after the comment
    return _attribute_pairs(tail, _instruction_value)


def _attribute_tail(tail: str, value_ok) -> bool:
    return _attribute_pairs(tail, value_ok) is not None


def _attribute_pairs(tail: str, value_ok) -> tuple[tuple[str, str], ...] | None:
    """`, key=value, key=value`: the (key, value) pairs when every part is an attribute `value_ok` takes."""
    parts = split_top_level(tail)
    if parts[0].strip(" \t"):
        return None
    pairs = []
    for part in parts[1:]:
        m = _ATTR_HEAD_RE.match(part)
        if m is None:
            return None
        value = strip_comments_and_space(part[m.end() :])  # as split_attributes does
        if not value:
            return None
        checked = value
        if "/*" in value:
            # The printer's `/*index=N*/` is a blank to the grammar, except that `{` then a comment then a digit
            # is no layout brace (LAYOUT_OPEN looks ahead for the digit): leave those to the grammar.
            if _BRACE_COMMENT_RE.search(value):
                return None
            checked = _INDEX_COMMENT_RE.sub(" ", value)
        if not value_ok(m.group(1), checked):
            return None
        pairs.append((m.group(1), value))
    return tuple(pairs)


def _instruction_value(key: str, value: str) -> bool:
    if key == "metadata":
        return _metadata(value)
    if key == "backend_config":
        return _STRING_RE.fullmatch(value) is not None or _BLOB_RE.fullmatch(value) is not None
    if key == "sharding":
        return _sharding(value)
    if key == "frontend_attributes":
        return _frontend_attributes(value)
    if key == "window":
        return _window(value)
    if key == "dim_labels":
        return _DIM_LABELS_RE.fullmatch(value) is not None
    if key == "replica_groups":
        return _REPLICA_LIST_RE.fullmatch(value) is not None or _IOTA_RE.fullmatch(value) is not None
    if key == "slice":
        return _SLICE_RE.fullmatch(value) is not None
    if key == "padding":
        return _PAD_RE.fullmatch(value) is not None
    if key in _CALL_KEYS:
        return _called_name(value)
    if key in ("branch_computations", "called_computations", "control-predecessors"):
        return _name_list(value)
    if key == "output_to_operand_aliasing":
        return _ALIASING_RE.fullmatch(value) is not None
    if key in ("domain", "literal", "origin"):
        return False  # rare: the grammar reads them
    return _generic(value)


def _called_name(value: str) -> bool:
    """A computation name (an inline body `{...}` is the grammar's)."""
    if value.startswith("%"):
        return _PCT_NAME_RE.fullmatch(value) is not None
    return _name_ok(value)


def _braced_inner(value: str) -> str | None:
    """What a `{...}` value holds (None: not braced)."""
    return value[1:-1] if value.startswith("{") and value.endswith("}") else None


def _name_list(value: str) -> bool:
    inner = _braced_inner(value)
    if inner is None:
        return False
    return not inner.strip() or all(_called_name(part.strip()) for part in inner.split(","))


def _frontend_attributes(value: str) -> bool:
    """`{key="value", key2={raw json}}` (frontend_attrs)."""
    inner = _braced_inner(value)
    if inner is None:
        return False
    if not inner.strip():
        return True
    for part in split_top_level(inner):
        m = _ATTR_HEAD_RE.match(part)
        if m is None:
            return False
        item = part[m.end() :].rstrip(" \t")
        if _STRING_RE.fullmatch(item) is None and _BLOB_RE.fullmatch(item) is None:
            return False
    return True


def _fields(inner: str) -> tuple[list[tuple[str, str]], bool] | None:
    """The (name, value) pairs of `name=value` fields separated by blanks and/or one comma, and whether a comma
    ends the list; None when the text is not only such fields. A value is a string, a balanced `{...}` or a
    word (its own recogniser then reads it)."""
    out: list[tuple[str, str]] = []
    pos, end, trailing = 0, len(inner), False
    while True:
        while pos < end and inner[pos] in " \t":
            pos += 1
        if pos >= end:
            return out, trailing
        m = _FIELD_HEAD_RE.match(inner, pos)
        if m is None:
            return None
        pos = m.end()
        if pos < end and inner[pos] == '"':
            sm = _STRING_RE.match(inner, pos)
            if sm is None:
                return None
            value_end = sm.end()
        elif pos < end and inner[pos] == "{":
            value_end = closing_bracket(inner, pos)
            if value_end is None:
                return None
        else:
            wm = _WORD_RE.match(inner, pos)
            if wm is None:
                return None
            value_end = wm.end()
        out.append((m.group(1), inner[pos:value_end]))
        pos = value_end
        # A field ends at a blank, a comma or the end (`a=1b=2` and `a="x"b=2` are not two fields here).
        if pos < end and inner[pos] not in " \t,":
            return None
        while pos < end and inner[pos] in " \t":
            pos += 1
        trailing = pos < end and inner[pos] == ","
        if trailing:
            pos += 1


def _metadata(value: str) -> bool:
    """`{op_type="..." source_line=3 ...}`: fields of STRING | INT | IDENT | subattrs | int_lists."""
    if not (value.startswith("{") and value.endswith("}")):
        return False
    found = _fields(value[1:-1])
    if found is None:
        return False
    for _, item in found[0]:
        if item[0] == '"' or _INT_RE.fullmatch(item) or _name_ok(item):
            continue
        if item[0] == "{" and (_subattrs(item) or _int_lists(item)):
            continue
        return False
    return True


def _window(value: str) -> bool:
    if not (value.startswith("{") and value.endswith("}")):
        return False
    found = _fields(value[1:-1])
    return found is not None and all(_WINDOW_VALUE_RE.fullmatch(item) for _, item in found[0])


def _subattrs(value: str) -> bool:
    """`{a=1, b="x"}`: one field or more, each a generic value."""
    found = _fields(value[1:-1])
    return found is not None and bool(found[0]) and not found[1] and all(_generic(item) for _, item in found[0])


def _int_lists(value: str) -> bool:
    """`{1,2}`, `{{0,1},{2,3}}`, `{%a, b}`, `{f32[2]{0}, ...}` (int_lists: list items of the grammar)."""
    inner = value[1:-1]
    if not inner.strip():
        return True
    for part in split_top_level(inner):
        item = part.strip(" \t")
        if not item:
            return False
        if item[0] == "{":
            if not item.endswith("}") or not _int_lists(item):
                return False
        elif _INT_RE.fullmatch(item) or _PCT_NAME_RE.fullmatch(item) or item in ("true", "false") or _name_ok(item):
            continue
        elif not _shape(item):
            return False
    return True


def _generic(value: str) -> bool:
    """The grammar's generic `value`."""
    if _SCALAR_RE.fullmatch(value):
        return True
    if _NAME_RE.fullmatch(value):
        return value not in _ELEMENT_TYPES and value not in ("ROOT", "ENTRY")
    if value.startswith("{") and value.endswith("}"):
        if _FIELD_HEAD_RE.match(value, 1):
            return _subattrs(value)
        return _int_lists(value)
    if value.startswith("["):
        return _IOTA_RE.fullmatch(value) is not None
    return _shape(value)


def _shape(text: str) -> bool:
    """A valid shape: what parse_shape reads (plain shapes without the grammar, others with its `shape` rule,
    once per distinct text, as the fast path reads instruction shapes)."""
    from hloscan.hlo.shapes import parse_shape

    if not text or not (text[0] == "(" or text[0].islower() or text.startswith("b(")):
        return False
    try:
        parse_shape(text)
    except Exception:  # noqa: BLE001 - any failure: not a shape the grammar takes
        return False
    return True


# ------------------------------------------------------------------------------------------ sharding

def _sharding(value: str) -> bool:
    """`{replicated}`, `{maximal device=0}`, `{devices=[2,1]0,1 last_tile_dim_replicate}`, `{devices=[4]<=[4]}`, and
    tuples of them `{{...}, {...}}`; metadata, shard groups and named (mesh) shardings are the grammar's."""
    if not (value.startswith("{") and value.endswith("}")):
        return False
    inner = value[1:-1].strip(" \t")
    if inner.startswith("{") or not inner:
        if not inner:
            return True  # an empty tuple sharding
        return all(_sharding(part.strip(" \t")) for part in split_top_level(inner))
    return _SHARDING_BODY_RE.fullmatch(inner) is not None


# ------------------------------------------------------------------------------------------ literals

def _literal(opcode: str, text: str) -> bool:
    """The operand list of `constant(...)` / `parameter(...)` as literals: scalars, `{...}` arrays, tuples."""
    if opcode == "parameter":
        return _UINT_RE.fullmatch(text) is not None
    tokens = []
    pos, end = 0, len(text)
    while pos < end:
        m = _LITERAL_TOKEN_RE.match(text, pos)
        if m is None:
            if not text[pos:].strip(" \t"):
                break
            return False
        tokens.append(m.group(1) or ("..." if m.group(2) else "s"))
        pos = m.end()
    parser = _LiteralTokens(tokens)
    return parser.operands()


class _LiteralTokens:
    """Recursive descent over literal tokens: `s` (a scalar), `...`, and the brackets and commas."""

    def __init__(self, tokens: list[str]):
        self.tokens, self.i = tokens, 0

    def peek(self) -> str | None:
        return self.tokens[self.i] if self.i < len(self.tokens) else None

    def take(self, token: str) -> bool:
        if self.peek() == token:
            self.i += 1
            return True
        return False

    def operands(self) -> bool:
        """operand ("," operand)*, each a scalar, an array, or a parenthesised tuple of two literals or more."""
        if not self.tokens:
            return True
        while True:
            if self.peek() == "(":
                self.i += 1
                if not self.literal() or not self.take(","):
                    return False
                if not self.literal_list(")"):
                    return False
            elif not self.literal():
                return False
            if self.i == len(self.tokens):
                return True
            if not self.take(","):
                return False

    def literal_list(self, close: str) -> bool:
        while True:
            if not self.literal():
                return False
            if self.take(close):
                return True
            if not self.take(","):
                return False

    def literal(self) -> bool:
        token = self.peek()
        if token == "s":
            self.i += 1
            return True
        if token == "{":
            self.i += 1
            if self.take("..."):
                return self.take("}")
            if self.take("}"):
                return True
            return self.literal_list("}")
        if token == "(":
            self.i += 1
            return self.literal_list(")")
        return False
