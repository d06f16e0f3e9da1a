"""A pure-Python reader for the subset of MLIR bytecode that Mosaic (Pallas TPU) kernel bodies use."""

from __future__ import annotations

import base64
import binascii
import struct
from dataclasses import dataclass, field
from typing import Any, Callable

MAGIC = b"ML\xefR"

# Bytecode versions that change the encoding (mlir/include/mlir/Bytecode/Encoding.h).
_V_DIALECT_VERSIONING = 1
_V_LAZY_LOADING = 2
_V_USE_LIST_ORDERING = 3
_V_ELIDE_UNKNOWN_BLOCK_ARG_LOCATION = 4
_V_NATIVE_PROPERTIES = 5
# Newest version whose layout this reader knows; jax writes version 0 (`desired_version=0`).
MAX_VERSION = 6

# Section ids.
_S_STRING, _S_DIALECT, _S_ATTR_TYPE, _S_ATTR_TYPE_OFFSET, _S_IR = 0, 1, 2, 3, 4
_S_RESOURCE, _S_RESOURCE_OFFSET, _S_DIALECT_VERSIONS, _S_PROPERTIES = 5, 6, 7, 8
_NUM_SECTIONS = 9

# Operation encoding mask bits.
_HAS_ATTRS, _HAS_RESULTS, _HAS_OPERANDS, _HAS_SUCCESSORS = 0x01, 0x02, 0x04, 0x08
_HAS_INLINE_REGIONS, _HAS_USE_LIST_ORDERS, _HAS_PROPERTIES = 0x10, 0x20, 0x40

# MLIR's ShapedType::kDynamic (INT64_MIN), printed as `?`.
DYNAMIC = -(2**63)

# Nesting bound for attributes/types/regions: real kernels nest a handful of levels; garbage can loop.
_MAX_DEPTH = 64


class BytecodeError(ValueError):
    """The kernel body is not MLIR bytecode this reader understands (bad magic, version, truncation...)."""


# ---------------------------------------------------------------------------------------------------
# Types and attribute values
# ---------------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ScalarType:
    """A builtin scalar type: `i32`, `si8`, `index`, `f32`, `bf16`, ... (or an opaque type's text)."""

    name: str

    @property
    def text(self) -> str:
        return self.name

    @property
    def bits(self) -> int | None:
        return scalar_bits(self.name)


@dataclass(frozen=True, slots=True)
class OpaqueType:
    """A type stored in its assembly form, e.g. `!tpu.dma_semaphore` or `f8E4M3FN`."""

    text: str

    @property
    def bits(self) -> int | None:
        return scalar_bits(self.text)


@dataclass(frozen=True, slots=True)
class ShapedType:
    """`memref`, `vector` or `tensor`: a shape plus element type; memrefs also have memory space and layout."""

    kind: str  # "memref" | "vector" | "tensor"
    shape: tuple[int, ...]
    element: Any
    memory_space: str | None = None  # the memory-space attribute's text, e.g. "#tpu.memory_space<vmem>"
    layout: str | None = None  # layout attribute text when not the identity map

    @property
    def space(self) -> str | None:
        """The short memory-space name (`vmem`, `smem`, `any`, `semaphore_mem`, `hbm`) or None."""
        return memory_space_name(self.memory_space)

    @property
    def text(self) -> str:
        dims = "".join(("?" if d == DYNAMIC else str(d)) + "x" for d in self.shape)
        extra = "".join(f", {x}" for x in (self.layout, self.memory_space) if x)
        return f"{self.kind}<{dims}{type_text(self.element)}{extra}>"


@dataclass(frozen=True, slots=True)
class FunctionType:
    """A builtin function type `(inputs) -> results`."""

    inputs: tuple[Any, ...]
    results: tuple[Any, ...]

    @property
    def text(self) -> str:
        ins = ", ".join(type_text(t) for t in self.inputs)
        if len(self.results) == 1 and not isinstance(self.results[0], FunctionType):
            return f"({ins}) -> {type_text(self.results[0])}"
        return f"({ins}) -> (" + ", ".join(type_text(t) for t in self.results) + ")"


@dataclass(frozen=True, slots=True)
class OtherType:
    """A builtin type this reader does not model in detail (complex, tuple, none, unranked...)."""

    text: str


@dataclass(frozen=True, slots=True)
class OpaqueAttr:
    """An attribute stored in its assembly form, e.g. `#tpu.dimension_semantics<parallel>`."""

    text: str


@dataclass(frozen=True, slots=True)
class SymbolRef:
    """A (flat) symbol reference `@name`."""

    name: str
    nested: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class DenseArray:
    """`array<i64: 1, 2>`: element type plus the decoded values."""

    element: Any
    values: tuple[Any, ...]


@dataclass(frozen=True, slots=True)
class DenseElements:
    """A dense elements attribute; only the type and raw bytes are kept."""

    type: Any
    raw: bytes


@dataclass(frozen=True, slots=True)
class TypedValue:
    """An integer or float attribute whose type matters (e.g. `1 : i64`)."""

    value: Any
    type: Any


@dataclass(frozen=True, slots=True)
class Location:
    """A location attribute; its contents are not needed, so they are not decoded."""

    code: int


_SPACE_PREFIX = "#tpu.memory_space<"


def memory_space_name(text: str | None) -> str | None:
    """`#tpu.memory_space<vmem>` -> `vmem`; integer spaces keep their text; None stays None."""
    if text is None:
        return None
    if text.startswith(_SPACE_PREFIX) and text.endswith(">"):
        return text[len(_SPACE_PREFIX) : -1]
    return text


_FLOAT_BITS = {"bf16": 16, "f16": 16, "f32": 32, "f64": 64, "f80": 80, "f128": 128, "tf32": 32, "index": 64}


def scalar_bits(name: str) -> int | None:
    """Bit width of a scalar type name (`i8`, `f8E4M3FN`, `bf16`...), or None when not a scalar."""
    if name in _FLOAT_BITS:
        return _FLOAT_BITS[name]
    for prefix in ("i", "si", "ui"):
        if name.startswith(prefix) and name[len(prefix) :].isdigit():
            return int(name[len(prefix) :])
    for prefix, bits in (("f8", 8), ("f6", 6), ("f4", 4)):
        if name.startswith(prefix + "E"):
            return bits
    return None


def type_text(t: Any) -> str:
    """MLIR-like text of a decoded type."""
    return getattr(t, "text", str(t))


# ---------------------------------------------------------------------------------------------------
# Byte reader
# ---------------------------------------------------------------------------------------------------


class _Reader:
    """A cursor over a byte range; `base` is the absolute offset of `data[0]` (for section alignment)."""

    __slots__ = ("data", "pos", "end", "base")

    def __init__(self, data: bytes, start: int = 0, end: int | None = None, base: int = 0):
        self.data = data
        self.pos = start
        self.end = len(data) if end is None else end
        self.base = base

    @property
    def remaining(self) -> int:
        return self.end - self.pos

    def empty(self) -> bool:
        return self.pos >= self.end

    def byte(self) -> int:
        if self.pos >= self.end:
            raise BytecodeError(f"unexpected end of data at offset {self.pos}")
        value = self.data[self.pos]
        self.pos += 1
        return value

    def take(self, n: int) -> bytes:
        if n < 0 or n > self.remaining:
            raise BytecodeError(f"{n} bytes requested at offset {self.pos}, {self.remaining} left")
        chunk = self.data[self.pos : self.pos + n]
        self.pos += n
        return chunk

    def varint(self) -> int:
        """PrefixVarInt: trailing zero bits of the first byte give the number of extra bytes."""
        first = self.byte()
        if first & 1:
            return first >> 1
        if first == 0:
            return int.from_bytes(self.take(8), "little")
        extra = (first & -first).bit_length() - 1
        rest = int.from_bytes(self.take(extra), "little")
        return ((rest << 8) | first) >> (extra + 1)

    def signed_varint(self) -> int:
        value = self.varint()
        return (value >> 1) ^ -(value & 1)

    def varint_flag(self) -> tuple[int, bool]:
        value = self.varint()
        return value >> 1, bool(value & 1)

    def count(self, what: str) -> int:
        """A list length; every element takes at least one byte, which bounds garbage counts."""
        n = self.varint()
        if n > self.remaining:
            raise BytecodeError(f"{what} count {n} exceeds the {self.remaining} bytes left")
        return n

    def cstring(self) -> str:
        stop = self.data.find(b"\0", self.pos, self.end)
        if stop < 0:
            raise BytecodeError(f"unterminated string at offset {self.pos}")
        text = self.data[self.pos : stop].decode("utf-8", errors="replace")
        self.pos = stop + 1
        return text

    def section(self) -> tuple[int, _Reader]:
        """Read one section header and return (id, reader over its data)."""
        head = self.byte()
        length = self.varint()
        section_id, aligned = head & 0x7F, bool(head & 0x80)
        if section_id >= _NUM_SECTIONS:
            raise BytecodeError(f"unknown section id {section_id} at offset {self.pos}")
        if aligned:
            self._align(self.varint())
        start = self.pos
        self.take(length)
        return section_id, _Reader(self.data, start, start + length, self.base)

    def _align(self, alignment: int) -> None:
        if alignment == 0 or alignment & (alignment - 1) or alignment > 4096:
            raise BytecodeError(f"invalid section alignment {alignment}")
        while (self.base + self.pos) % alignment:
            if self.byte() != 0xCB:
                raise BytecodeError("bad alignment padding byte")


# ---------------------------------------------------------------------------------------------------
# IR objects
# ---------------------------------------------------------------------------------------------------


@dataclass
class Block:
    """A block: argument types and operations."""

    arg_types: list[Any] = field(default_factory=list)
    operations: list[Operation] = field(default_factory=list)


@dataclass
class Region:
    """A region: a list of blocks."""

    blocks: list[Block] = field(default_factory=list)


@dataclass
class Operation:
    """An operation with its name, decoded attributes, result types and regions (operands are skipped)."""

    name: str
    attributes: dict[str, Any] = field(default_factory=dict)
    result_types: list[Any] = field(default_factory=list)
    regions: list[Region] = field(default_factory=list)
    operands: list[Any] = field(default_factory=list)  # BlockArg / OpResult, None when unresolved

    def walk(self):
        """Yield this operation and every nested one, pre-order."""
        yield self
        for region in self.regions:
            for block in region.blocks:
                for op in block.operations:
                    yield from op.walk()


@dataclass(frozen=True, eq=False)
class BlockArg:
    """An operand that is argument `index` of `block`."""

    block: Block
    index: int


@dataclass(frozen=True, eq=False)
class OpResult:
    """An operand that is result `index` of `op`."""

    op: Operation
    index: int


@dataclass
class Module:
    """A decoded bytecode file: header facts plus the top-level operations."""

    version: int
    producer: str
    dialects: list[str]
    operations: list[Operation]

    def walk(self):
        for op in self.operations:
            yield from op.walk()


# ---------------------------------------------------------------------------------------------------
# The file reader
# ---------------------------------------------------------------------------------------------------


@dataclass
class _Entry:
    dialect: int
    start: int
    end: int
    custom: bool


class _File:
    """State shared while decoding one bytecode buffer: tables plus lazily decoded attributes/types."""

    def __init__(self, data: bytes):
        self.data = data
        top = _Reader(data)
        if top.take(4) != MAGIC:
            raise BytecodeError("not MLIR bytecode (bad magic)")
        self.version = top.varint()
        if self.version > MAX_VERSION:
            raise BytecodeError(f"unsupported MLIR bytecode version {self.version} (max {MAX_VERSION})")
        self.producer = top.cstring()
        self.sections: dict[int, _Reader] = {}
        while not top.empty():
            section_id, reader = top.section()
            if section_id in self.sections:
                raise BytecodeError(f"duplicate section {section_id}")
            self.sections[section_id] = reader
        for required in (_S_STRING, _S_DIALECT, _S_ATTR_TYPE, _S_ATTR_TYPE_OFFSET, _S_IR):
            if required not in self.sections:
                raise BytecodeError(f"missing section {required}")
        self.strings = self._read_strings(self.sections[_S_STRING])
        self.dialects, self.op_names = self._read_dialects(self.sections[_S_DIALECT])
        self.attr_entries, self.type_entries = self._read_offsets()
        self.properties = self._read_properties()
        self._attrs: dict[int, Any] = {}
        self._types: dict[int, Any] = {}
        self._depth = 0

    # -- tables -------------------------------------------------------------------------------------

    def _read_strings(self, r: _Reader) -> list[str]:
        n = r.count("string")
        lengths = [r.varint() for _ in range(n)][::-1]
        if sum(lengths) > r.remaining:
            raise BytecodeError("string table overruns its section")
        data_start = r.end - sum(lengths)
        out, pos = [], data_start
        for length in lengths:
            out.append(r.data[pos : pos + length].rstrip(b"\0").decode("utf-8", errors="replace"))
            pos += length
        return out

    def string(self, index: int) -> str:
        if index >= len(self.strings):
            raise BytecodeError(f"string index {index} out of range")
        return self.strings[index]

    def _read_dialects(self, r: _Reader) -> tuple[list[str], list[str]]:
        dialects = []
        for _ in range(r.count("dialect")):
            if self.version < _V_DIALECT_VERSIONING:
                dialects.append(self.string(r.varint()))
                continue
            index, versioned = r.varint_flag()
            dialects.append(self.string(index))
            if versioned:
                section_id, _ = r.section()
                if section_id != _S_DIALECT_VERSIONS:
                    raise BytecodeError("expected a dialect version section")
        if self.version >= _V_ELIDE_UNKNOWN_BLOCK_ARG_LOCATION:
            r.varint()  # total number of op names, only a reservation hint
        op_names = []
        while not r.empty():
            index = r.varint()
            if index >= len(dialects):
                raise BytecodeError(f"dialect index {index} out of range")
            dialect = dialects[index]
            for _ in range(r.count("op name")):
                if self.version < _V_NATIVE_PROPERTIES:
                    index = r.varint()
                else:
                    index, _registered = r.varint_flag()
                op_names.append(f"{dialect}.{self.string(index)}")
        return dialects, op_names

    def _dialect(self, index: int) -> str:
        if index >= len(self.dialects):
            raise BytecodeError(f"dialect index {index} out of range")
        return self.dialects[index]

    def _read_offsets(self) -> tuple[list[_Entry], list[_Entry]]:
        r = self.sections[_S_ATTR_TYPE_OFFSET]
        data = self.sections[_S_ATTR_TYPE]
        num_attrs, num_types = r.count("attribute"), r.count("type")
        entries: list[_Entry] = []
        pos = data.pos
        while len(entries) < num_attrs + num_types:
            dialect = r.varint()
            self._dialect(dialect)
            for _ in range(r.count("attribute/type")):
                size, custom = r.varint_flag()
                if pos + size > data.end:
                    raise BytecodeError("attribute/type entry overruns its section")
                entries.append(_Entry(dialect, pos, pos + size, custom))
                pos += size
        if len(entries) != num_attrs + num_types:
            raise BytecodeError("attribute/type offset groups do not match the declared counts")
        return entries[:num_attrs], entries[num_attrs:]

    def _read_properties(self) -> list[tuple[int, int]]:
        r = self.sections.get(_S_PROPERTIES)
        if r is None:
            return []
        out = []
        for _ in range(r.count("properties")):
            size = r.varint()
            start = r.pos
            r.take(size)
            out.append((start, start + size))
        return out

    # -- attributes and types -----------------------------------------------------------------------

    def attr(self, index: int) -> Any:
        if index >= len(self.attr_entries):
            raise BytecodeError(f"attribute index {index} out of range")
        if index not in self._attrs:
            self._attrs[index] = self._decode(self.attr_entries[index], self._builtin_attr, OpaqueAttr)
        return self._attrs[index]

    def type(self, index: int) -> Any:
        if index >= len(self.type_entries):
            raise BytecodeError(f"type index {index} out of range")
        if index not in self._types:
            self._types[index] = self._decode(self.type_entries[index], self._builtin_type, _opaque_type)
        return self._types[index]

    def _decode(self, entry: _Entry, builtin: Callable[[_Reader], Any], textual: Callable[[str], Any]) -> Any:
        self._depth += 1
        try:
            if self._depth > _MAX_DEPTH:
                raise BytecodeError("attribute/type nesting too deep")
            r = _Reader(self.data, entry.start, entry.end)
            if not entry.custom:
                return textual(r.cstring())
            if self.dialects[entry.dialect] != "builtin":
                # Another dialect's binary encoding: we cannot interpret it, keep a placeholder.
                return OpaqueAttr(f"<{self.dialects[entry.dialect]} binary attribute/type>")
            return builtin(r)
        finally:
            self._depth -= 1

    def _builtin_attr(self, r: _Reader) -> Any:
        code = r.varint()
        handler = _ATTR_DECODERS.get(code)
        if handler is None:
            return Location(code) if code in _LOCATION_CODES else OpaqueAttr(f"<builtin attribute #{code}>")
        return handler(self, r)

    def _builtin_type(self, r: _Reader) -> Any:
        code = r.varint()
        handler = _TYPE_DECODERS.get(code)
        if handler is None:
            raise BytecodeError(f"unknown builtin type code {code}")
        return handler(self, r)

    def attr_list(self, r: _Reader) -> list[Any]:
        return [self.attr(r.varint()) for _ in range(r.count("attribute"))]

    def type_list(self, r: _Reader) -> tuple[Any, ...]:
        return tuple(self.type(r.varint()) for _ in range(r.count("type")))

    def string_attr(self, r: _Reader) -> str:
        value = self.attr(r.varint())
        if isinstance(value, str):
            return value
        if isinstance(value, SymbolRef):
            return value.name
        raise BytecodeError(f"expected a string attribute, got {value!r}")


def _opaque_type(text: str) -> Any:
    return ScalarType(text) if scalar_bits(text) is not None else OpaqueType(text)


def _shape(r: _Reader) -> tuple[int, ...]:
    return tuple(r.signed_varint() for _ in range(r.count("dimension")))


def _int_width(t: Any) -> int:
    bits = getattr(t, "bits", None)
    if not isinstance(bits, int) or bits <= 0:
        raise BytecodeError(f"integer attribute of non-integer type {type_text(t)}")
    return bits


def _read_apint(r: _Reader, width: int, signed: bool = True) -> int:
    if width <= 8:
        value = r.byte()
    elif width <= 64:
        value = r.signed_varint() & ((1 << 64) - 1)
    else:
        words = [r.signed_varint() & ((1 << 64) - 1) for _ in range(r.count("word"))]
        value = sum(w << (64 * i) for i, w in enumerate(words))
    value &= (1 << width) - 1
    if signed and width > 1 and value >> (width - 1):
        value -= 1 << width
    return value


_FLOAT_FORMATS = {"f16": "<e", "f32": "<f", "f64": "<d"}


def _float_from_bits(t: Any, bits: int) -> float | int:
    name = type_text(t)
    if name == "bf16":
        return struct.unpack("<f", struct.pack("<I", bits << 16))[0]
    fmt = _FLOAT_FORMATS.get(name)
    if fmt is None:
        return bits  # exotic float formats: keep the raw bit pattern
    size = struct.calcsize(fmt)
    return struct.unpack(fmt, bits.to_bytes(size, "little"))[0]


def _attr_array(f: _File, r: _Reader) -> list[Any]:
    return f.attr_list(r)


def _attr_dict(f: _File, r: _Reader) -> dict[str, Any]:
    out = {}
    for _ in range(r.count("named attribute")):
        name = f.string_attr(r)
        out[name] = f.attr(r.varint())
    return out


def _attr_string(f: _File, r: _Reader) -> str:
    return f.string(r.varint())


def _attr_string_with_type(f: _File, r: _Reader) -> str:
    text = f.string(r.varint())
    f.type(r.varint())
    return text


def _attr_flat_symbol(f: _File, r: _Reader) -> SymbolRef:
    return SymbolRef(f.string_attr(r))


def _attr_symbol(f: _File, r: _Reader) -> SymbolRef:
    root = f.string_attr(r)
    nested = tuple(f.string_attr(r) for _ in range(r.count("symbol")))
    return SymbolRef(root, nested)


def _attr_type(f: _File, r: _Reader) -> Any:
    return f.type(r.varint())


def _attr_unit(f: _File, r: _Reader) -> bool:
    return True


def _attr_integer(f: _File, r: _Reader) -> TypedValue:
    t = f.type(r.varint())
    width = _int_width(t)
    return TypedValue(_read_apint(r, width, signed=not type_text(t).startswith("ui")), t)


def _attr_float(f: _File, r: _Reader) -> TypedValue:
    t = f.type(r.varint())
    width = _int_width(t)
    return TypedValue(_float_from_bits(t, _read_apint(r, width, signed=False)), t)


def _attr_dense_array(f: _File, r: _Reader) -> DenseArray:
    element = f.type(r.varint())
    size = r.varint()
    raw = r.take(r.varint())
    return DenseArray(element, _dense_values(element, size, raw))


def _dense_values(element: Any, size: int, raw: bytes) -> tuple[Any, ...]:
    name = type_text(element)
    bits = getattr(element, "bits", None)
    if name == "i1":
        if len(raw) < size:
            raise BytecodeError("dense bool array shorter than its size")
        return tuple(bool(b) for b in raw[:size])
    if name in _FLOAT_FORMATS and size * struct.calcsize(_FLOAT_FORMATS[name]) == len(raw):
        return struct.unpack("<" + _FLOAT_FORMATS[name][1] * size, raw)
    if isinstance(bits, int) and bits % 8 == 0 and bits and size * bits // 8 == len(raw):
        step = bits // 8
        signed = not name.startswith("ui")
        return tuple(int.from_bytes(raw[i : i + step], "little", signed=signed) for i in range(0, len(raw), step))
    raise BytecodeError(f"dense array of {size} x {name} does not match its {len(raw)} data bytes")


def _attr_dense_elements(f: _File, r: _Reader) -> DenseElements:
    t = f.type(r.varint())
    return DenseElements(t, r.take(r.varint()))


_LOCATION_CODES = {10, 11, 12, 13, 14, 15, 22}

_ATTR_DECODERS: dict[int, Callable[[_File, _Reader], Any]] = {
    0: _attr_array,
    1: _attr_dict,
    2: _attr_string,
    3: _attr_string_with_type,
    4: _attr_flat_symbol,
    5: _attr_symbol,
    6: _attr_type,
    7: _attr_unit,
    8: _attr_integer,
    9: _attr_float,
    17: _attr_dense_array,
    18: _attr_dense_elements,
}


def _type_integer(f: _File, r: _Reader) -> ScalarType:
    value = r.varint()
    width, signedness = value >> 2, value & 3
    return ScalarType(("i", "si", "ui", "i")[signedness] + str(width))


def _type_function(f: _File, r: _Reader) -> FunctionType:
    return FunctionType(f.type_list(r), f.type_list(r))


def _type_memref(f: _File, r: _Reader, space: Any = None) -> ShapedType:
    shape = _shape(r)
    element = f.type(r.varint())
    layout = f.attr(r.varint())
    layout_text = _attr_text(layout)
    if layout_text is not None and layout_text.startswith("affine_map<") and _is_identity_map(layout_text):
        layout_text = None
    return ShapedType("memref", shape, element, _attr_text(space), layout_text)


def _type_memref_space(f: _File, r: _Reader) -> ShapedType:
    space = f.attr(r.varint())
    return _type_memref(f, r, space)


def _type_vector(f: _File, r: _Reader) -> ShapedType:
    shape = _shape(r)
    return ShapedType("vector", shape, f.type(r.varint()))


def _type_tensor(f: _File, r: _Reader) -> ShapedType:
    shape = _shape(r)
    return ShapedType("tensor", shape, f.type(r.varint()))


def _type_tensor_encoding(f: _File, r: _Reader) -> ShapedType:
    f.attr(r.varint())
    return _type_tensor(f, r)


def _type_tuple(f: _File, r: _Reader) -> OtherType:
    return OtherType("tuple<" + ", ".join(type_text(t) for t in f.type_list(r)) + ">")


def _type_wrapped(prefix: str, with_space: bool = False) -> Callable[[_File, _Reader], OtherType]:
    def decode(f: _File, r: _Reader) -> OtherType:
        if with_space:
            f.attr(r.varint())
        return OtherType(f"{prefix}<{type_text(f.type(r.varint()))}>")

    return decode


def _type_named(name: str) -> Callable[[_File, _Reader], ScalarType]:
    return lambda f, r: ScalarType(name)


_TYPE_DECODERS: dict[int, Callable[[_File, _Reader], Any]] = {
    0: _type_integer,
    1: _type_named("index"),
    2: _type_function,
    3: _type_named("bf16"),
    4: _type_named("f16"),
    5: _type_named("f32"),
    6: _type_named("f64"),
    7: _type_named("f80"),
    8: _type_named("f128"),
    9: _type_wrapped("complex"),
    10: _type_memref,
    11: _type_memref_space,
    12: _type_named("none"),
    13: _type_tensor,
    14: _type_tensor_encoding,
    15: _type_tuple,
    16: _type_wrapped("memref<*x"),
    17: _type_wrapped("memref<*x", with_space=True),
    18: _type_wrapped("tensor<*x"),
    19: _type_vector,
    20: _type_vector,  # scalable dims: the flags are folded into the shape list encoding
}
# Newer MLIR gives the small float types codes after the vector types (checked against jaxlib 0.10.2's
# writer; older writers store them as assembly text, e.g. "f8E4M3FN", which _opaque_type handles).
_TYPE_DECODERS.update(
    (code, _type_named(name))
    for code, name in enumerate(
        ("tf32", "f8E5M2", "f8E4M3", "f8E4M3FN", "f8E5M2FNUZ", "f8E4M3FNUZ", "f8E4M3B11FNUZ", "f8E3M4",
         "f4E2M1FN", "f6E2M3FN", "f6E3M2FN", "f8E8M0FNU"),
        start=21,
    )
)


def _attr_text(value: Any) -> str | None:
    """Text of an attribute used inside a type (memory space, layout)."""
    if value is None:
        return None
    if isinstance(value, OpaqueAttr):
        return value.text
    if isinstance(value, TypedValue):
        return str(value.value) + " : " + type_text(value.type)
    if isinstance(value, str):
        return '"' + value + '"'
    return str(value)


def _is_identity_map(text: str) -> bool:
    """`affine_map<(d0, d1) -> (d0, d1)>` is the default memref layout, which MLIR does not print."""
    inner = text[len("affine_map<") : -1].replace(" ", "")
    if "->" not in inner:
        return False
    dims, results = inner.split("->", 1)
    return dims == results


# ---------------------------------------------------------------------------------------------------
# IR section
# ---------------------------------------------------------------------------------------------------


class _ValueScope:
    """Value numbering of one isolated-from-above region tree, as in MLIR's reader.

    Each region reserves `numValues` consecutive ids when its parsing starts; block arguments and op
    results then take the next id of the innermost region being parsed.
    """

    def __init__(self) -> None:
        self.values: list[Any] = []
        self.next_ids: list[int] = []
        self.sizes: list[int] = []

    def push_region(self, num_values: int) -> None:
        self.next_ids.append(len(self.values))
        self.sizes.append(num_values)
        self.values.extend([None] * num_values)

    def pop_region(self) -> None:
        # A closed region's ids are free again: the next region (a sibling, or the rest of the enclosing
        # one) numbers its values from the same place (MLIR's ValueScope::pop). Keeping them shifted every
        # operand read after an `scf.if` or loop onto the wrong value.
        self.next_ids.pop()
        del self.values[len(self.values) - self.sizes.pop():]

    def define(self, value: Any) -> None:
        if not self.next_ids:
            self.values.append(value)
            return
        slot = self.next_ids[-1]
        if slot < len(self.values):
            self.values[slot] = value
        else:  # more values than the region declared: tolerate, the ids just stop resolving
            self.values.append(value)
        self.next_ids[-1] = slot + 1

    def lookup(self, index: int) -> Any:
        return self.values[index] if index < len(self.values) else None


class _IRParser:
    """Walks the IR section, building Operation/Region/Block objects with resolved operands."""

    def __init__(self, f: _File):
        self.f = f
        self.depth = 0
        self.scopes = [_ValueScope()]

    def top_level(self) -> list[Operation]:
        r = self.f.sections[_S_IR]
        block = self.block(r)
        return block.operations

    def block(self, r: _Reader) -> Block:
        num_ops, has_args = r.varint_flag()
        if num_ops > r.remaining:
            raise BytecodeError(f"block claims {num_ops} operations with {r.remaining} bytes left")
        block = Block()
        if has_args:
            block.arg_types = self.block_args(r)
            for i in range(len(block.arg_types)):
                self.scopes[-1].define(BlockArg(block, i))
        for _ in range(num_ops):
            block.operations.append(self.operation(r))
        return block

    def block_args(self, r: _Reader) -> list[Any]:
        types = []
        num_args = r.count("block argument")
        for _ in range(num_args):
            if self.f.version >= _V_ELIDE_UNKNOWN_BLOCK_ARG_LOCATION:
                index, has_loc = r.varint_flag()
                if has_loc:
                    r.varint()
            else:
                index = r.varint()
                r.varint()  # location
            types.append(self.f.type(index))
        if self.f.version >= _V_USE_LIST_ORDERING and r.byte():
            self.use_list_orders(r, num_args)
        return types

    def use_list_orders(self, r: _Reader, num_values: int) -> None:
        groups = r.varint() if num_values > 1 else 1
        for _ in range(groups):
            if num_values > 1:
                r.varint()
            count, _pairs = r.varint_flag()
            for _ in range(count):
                r.varint()

    def operation(self, r: _Reader) -> Operation:
        self.depth += 1
        if self.depth > _MAX_DEPTH:
            raise BytecodeError("operation nesting too deep")
        try:
            return self._operation(r)
        finally:
            self.depth -= 1

    def _operation(self, r: _Reader) -> Operation:
        f = self.f
        name_index = r.varint()
        if name_index >= len(f.op_names):
            raise BytecodeError(f"operation name index {name_index} out of range")
        op = Operation(f.op_names[name_index])
        mask = r.byte()
        r.varint()  # location
        if mask & _HAS_ATTRS:
            attrs = f.attr(r.varint())
            if not isinstance(attrs, dict):
                raise BytecodeError(f"{op.name}: attribute dictionary expected")
            op.attributes.update(attrs)
        if mask & _HAS_PROPERTIES:
            self.properties(r, op)
        num_results = 0
        if mask & _HAS_RESULTS:
            num_results = r.count("result")
            op.result_types = [f.type(r.varint()) for _ in range(num_results)]
        if mask & _HAS_OPERANDS:
            scope = self.scopes[-1]
            op.operands = [scope.lookup(r.varint()) for _ in range(r.count("operand"))]
        if mask & _HAS_SUCCESSORS:
            for _ in range(r.count("successor")):
                r.varint()
        for i in range(num_results):
            self.scopes[-1].define(OpResult(op, i))
        if mask & _HAS_USE_LIST_ORDERS:
            self.use_list_orders(r, num_results)
        if mask & _HAS_INLINE_REGIONS:
            num_regions, isolated = r.varint_flag()
            if num_regions > r.remaining:
                raise BytecodeError(f"{op.name}: {num_regions} regions with {r.remaining} bytes left")
            source = r
            if isolated and f.version >= _V_LAZY_LOADING:
                section_id, source = r.section()
                if section_id != _S_IR:
                    raise BytecodeError(f"{op.name}: expected an IR section for isolated regions")
            if isolated:
                self.scopes.append(_ValueScope())
            try:
                op.regions = [self.region(source) for _ in range(num_regions)]
            finally:
                if isolated:
                    self.scopes.pop()
        return op

    def properties(self, r: _Reader, op: Operation) -> None:
        if self.f.version < _V_NATIVE_PROPERTIES:
            raise BytecodeError("properties in bytecode older than version 5")
        index = r.varint()
        if index >= len(self.f.properties):
            raise BytecodeError(f"properties index {index} out of range")
        start, end = self.f.properties[index]
        # Ops without a native encoding store their properties as one attribute (a dictionary).
        try:
            value = self.f.attr(_Reader(self.f.data, start, end).varint())
        except BytecodeError:
            return
        if isinstance(value, dict):
            for key, item in value.items():
                op.attributes.setdefault(key, item)

    def region(self, r: _Reader) -> Region:
        num_blocks = r.varint()
        if num_blocks == 0:
            return Region()
        if num_blocks > r.remaining:
            raise BytecodeError(f"region claims {num_blocks} blocks with {r.remaining} bytes left")
        num_values = r.varint()
        if num_values > r.remaining * 8:
            raise BytecodeError(f"region claims {num_values} values with {r.remaining} bytes left")
        scope = self.scopes[-1]
        scope.push_region(num_values)
        try:
            return Region([self.block(r) for _ in range(num_blocks)])
        finally:
            scope.pop_region()


# ---------------------------------------------------------------------------------------------------
# Public entry points
# ---------------------------------------------------------------------------------------------------


def read_module(data: bytes) -> Module:
    """Decode MLIR bytecode into a Module; raises BytecodeError (only) when it cannot."""
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise BytecodeError(f"expected bytes, got {type(data).__name__}")
    try:
        f = _File(bytes(data))
        operations = _IRParser(f).top_level()
        return Module(f.version, f.producer, list(f.dialects), operations)
    except BytecodeError:
        raise
    except (IndexError, KeyError, ValueError, TypeError, OverflowError, RecursionError, struct.error) as exc:
        # Garbage input can trip any table lookup; callers need one exception type to report.
        raise BytecodeError(f"malformed MLIR bytecode: {type(exc).__name__}: {exc}") from exc


def decode_body(body: str | bytes) -> bytes:
    """Base64-decode a `custom_call_config.body`; raises BytecodeError on invalid base64."""
    if isinstance(body, str):
        body = body.strip().encode("ascii", errors="replace")
    try:
        return base64.b64decode(body + b"=" * (-len(body) % 4), validate=True)
    except (binascii.Error, ValueError) as exc:
        raise BytecodeError(f"kernel body is not valid base64: {exc}") from exc


# ---------------------------------------------------------------------------------------------------
# Mosaic kernel view
# ---------------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class WindowParam:
    """One entry of the kernel's `window_params`: the block shape and how it is pipelined."""

    window_bounds: tuple[int, ...] | None
    transform_indices: str | None = None
    pipeline_mode: str | None = None  # e.g. "synchronous", "double_buffered" (raw text if unknown)
    buffer_count: int | None = None  # 1/2 from pipeline_mode, None when not stated
    window_kind: str | None = None
    # What each block index is, read from the transform function: "g<k>" = grid index k, an int = a
    # constant, None = computed (e.g. from scalar prefetch). None for the whole map when unknown.
    index_map: tuple[str | int | None, ...] | None = None

    @property
    def is_windowed(self) -> bool:
        return self.window_bounds is not None


@dataclass(frozen=True, slots=True)
class Dot:
    """One `tpu.matmul` of a kernel body: lhs shape and element bits, rhs element bits, result shape."""

    lhs: tuple[int, ...]
    lhs_bits: int
    rhs_bits: int
    result: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class MosaicKernel:
    """The facts hloscan needs from a Mosaic kernel body: the main function's signature and attributes."""

    name: str
    arg_types: tuple[Any, ...]
    window_params: tuple[WindowParam, ...] | None
    iteration_bounds: tuple[int, ...] | None
    dimension_semantics: tuple[str, ...]
    scalar_prefetch: int
    scratch_operands: int
    core_type: str | None
    functions: tuple[str, ...]
    bytecode_version: int
    producer: str
    mosaic_version: int | None
    op_names: tuple[str, ...] = ()  # distinct operation names in the main function's body
    # (operation name, vector shape, element type) of every vector value the main body computes, sorted
    # (an unrolled loop repeats its values):
    # large ones live in compiler-internal VMEM scratch (hloscan.vmem's intermediate allowance).
    vector_values: tuple[tuple[str, tuple[int, ...], str], ...] = ()
    # Every dot of the body (`tpu.matmul`), with its operands as the body computes or loads them (None when
    # the body was not read): the dot-spill rule reads these, not the pallas_call's first two blocks.
    dots: tuple[Dot, ...] | None = None
    # Positions of the grid indices (the main function's leading i32 arguments) that the kernel body itself
    # reads (index maps aside); None when unknown. A body that reads none of the grid indices with extent > 1
    # does the same thing in every grid step (no init/finalize or causal-mask condition varies).
    grid_indices_read: tuple[int, ...] | None = None
    # What the body allocates itself and the vector values it keeps across reductions (mosaic/body.py);
    # None when the body was not read (MLIR text kernels).
    body: Any = None

    @property
    def grid(self) -> tuple[int, ...]:
        return self.iteration_bounds or ()

    def uses(self, op_suffix: str) -> bool:
        """Whether the main body has an operation whose name ends with `op_suffix` (`tpu.matmul`, ...)."""
        return any(name.endswith(op_suffix) for name in self.op_names)

    def results_of(self, op_suffix: str) -> list[tuple[int, ...]]:
        """Vector shapes computed by the operations ending with `op_suffix`, one per occurrence."""
        return [shape for name, shape, _ in self.vector_values if name.endswith(op_suffix)]

    def _split(self) -> tuple[int, int, int]:
        n_grid = len(self.grid)
        n_operands = len(self.arg_types) - n_grid - self.scalar_prefetch - self.scratch_operands
        return n_grid, max(n_operands, 0), self.scalar_prefetch

    @property
    def scalar_prefetch_types(self) -> tuple[Any, ...]:
        n_grid, _, n_pref = self._split()
        return self.arg_types[n_grid : n_grid + n_pref]

    @property
    def operand_types(self) -> tuple[Any, ...]:
        """Block memrefs of the kernel's operands and results, in custom-call operand-then-result order."""
        n_grid, n_ops, n_pref = self._split()
        start = n_grid + n_pref
        return self.arg_types[start : start + n_ops]

    @property
    def scratch_types(self) -> tuple[Any, ...]:
        if not self.scratch_operands:
            return ()
        return self.arg_types[-self.scratch_operands :]


_PIPELINE_BUFFERS = {"synchronous": 1, "double_buffered": 2}


def enum_text(value: Any, prefix: str) -> str | None:
    """`#tpu.dimension_semantics<parallel>` -> `parallel` (prefix is `tpu.dimension_semantics`)."""
    if value is None:
        return None
    text = value.text if isinstance(value, OpaqueAttr) else str(value)
    head = "#" + prefix + "<"
    if text.startswith(head) and text.endswith(">"):
        return text[len(head) : -1]
    return text


def int_value(value: Any, default: int = 0) -> int:
    if isinstance(value, TypedValue) and isinstance(value.value, int):
        return value.value
    if isinstance(value, int):
        return int(value)
    return default


def int_tuple(value: Any) -> tuple[int, ...] | None:
    if isinstance(value, DenseArray):
        return tuple(int(v) for v in value.values)
    if isinstance(value, list):
        return tuple(int_value(v) for v in value)
    return None


def _window_param(value: Any, funcs: dict[str, Operation], n_grid: int) -> WindowParam:
    return window_param(value, lambda name: _index_map(funcs.get(name), n_grid))


def window_param(value: Any, index_map_of: Callable[[str], tuple[str | int | None, ...] | None]) -> WindowParam:
    """A `window_params` entry (a dict of decoded attributes) as a WindowParam; shared by the text reader."""
    if not isinstance(value, dict):
        return WindowParam(None)
    mode = enum_text(value.get("pipeline_mode"), "tpu.pipeline_mode")
    transform = value.get("transform_indices")
    name = transform.name if isinstance(transform, SymbolRef) else None
    kind = value.get("window_kind")
    return WindowParam(
        window_bounds=int_tuple(value.get("window_bounds")),
        transform_indices=name,
        pipeline_mode=mode,
        buffer_count=_PIPELINE_BUFFERS.get(mode) if mode else None,
        window_kind=_attr_text(kind) if kind is not None else None,
        index_map=index_map_of(name) if name else None,
    )


def _index_map(func: Operation | None, n_grid: int) -> tuple[str | int | None, ...] | None:
    """Classify the values a transform function returns: grid index, constant, or computed."""
    if func is None or not func.regions or not func.regions[0].blocks:
        return None
    entry = func.regions[0].blocks[0]
    returns = [op for op in entry.operations if op.name.endswith("func.return")]
    if not returns:
        return None
    return tuple(_index_value(v, entry, n_grid) for v in returns[-1].operands)


def _index_value(value: Any, entry: Block, n_grid: int) -> str | int | None:
    if isinstance(value, BlockArg) and value.block is entry and value.index < n_grid:
        return f"g{value.index}"
    if isinstance(value, OpResult) and value.op.name.endswith("arith.constant"):
        constant = value.op.attributes.get("value")
        if isinstance(constant, TypedValue) and isinstance(constant.value, int):
            return constant.value
    return None


_FUNC_OPS = ("func.func", "stable_mosaic.func.func", "builtin.func")
_KERNEL_ATTRS = ("window_params", "iteration_bounds", "dimension_semantics", "scratch_operands")


def _is_func(op: Operation) -> bool:
    return op.name in _FUNC_OPS or op.name.endswith(".func.func")


def _main_function(funcs: list[Operation]) -> Operation:
    for op in funcs:
        if any(key in op.attributes for key in _KERNEL_ATTRS):
            return op
    transforms = {p for op in funcs for p in _transform_names(op)}
    for op in funcs:
        if op.attributes.get("sym_name") not in transforms:
            return op
    return funcs[0]


def _transform_names(op: Operation) -> list[str]:
    params = op.attributes.get("window_params")
    if not isinstance(params, list):
        return []
    return [p["transform_indices"].name for p in params if isinstance(p, dict) and "transform_indices" in p]


def kernel_from_module(module: Module, read_body: Callable[[Operation], Any] | None = None) -> MosaicKernel:
    """Pick the kernel's main function out of a decoded module and read its Mosaic attributes; `read_body`
    (mosaic/body.py, which builds on this module's IR) reads what the main function's body allocates."""
    funcs = [op for op in module.walk() if _is_func(op)]
    if not funcs:
        raise BytecodeError("no func.func operation in the kernel body")
    main = _main_function(funcs)
    attrs = main.attributes
    fn_type = attrs.get("function_type")
    if isinstance(fn_type, FunctionType):
        arg_types = fn_type.inputs
    elif main.regions and main.regions[0].blocks:
        arg_types = tuple(main.regions[0].blocks[0].arg_types)
    else:
        arg_types = ()
    params = attrs.get("window_params")
    semantics = attrs.get("dimension_semantics")
    grid = int_tuple(attrs.get("iteration_bounds"))
    by_name = {str(op.attributes.get("sym_name")): op for op in funcs}
    return MosaicKernel(
        name=str(attrs.get("sym_name", "")),
        arg_types=tuple(arg_types),
        window_params=tuple(
            _window_param(p, by_name, len(grid or ())) for p in params
        ) if isinstance(params, list) else None,
        iteration_bounds=grid,
        dimension_semantics=tuple(
            enum_text(s, "tpu.dimension_semantics") or "" for s in semantics
        ) if isinstance(semantics, list) else (),
        scalar_prefetch=int_value(attrs.get("scalar_prefetch")),
        scratch_operands=int_value(attrs.get("scratch_operands")),
        core_type=enum_text(attrs.get("tpu.core_type"), "tpu.core_type"),
        functions=tuple(str(op.attributes.get("sym_name", "")) for op in funcs),
        bytecode_version=module.version,
        producer=module.producer,
        mosaic_version=_mosaic_version(module),
        op_names=tuple(sorted({op.name for op in main.walk()} - {main.name})),
        vector_values=_vector_values(main),
        dots=_dots(main),
        grid_indices_read=_grid_indices_read(main, len(grid or ())),
        body=read_body(main) if read_body is not None else None,
    )


def _grid_indices_read(main: Operation, n_grid: int) -> tuple[int, ...] | None:
    """Which of the entry block's first `n_grid` arguments (the grid indices) an operation of the body uses."""
    if not main.regions or not main.regions[0].blocks:
        return None
    entry = main.regions[0].blocks[0]
    read = {value.index for op in main.walk() for value in op.operands
            if isinstance(value, BlockArg) and value.block is entry and value.index < n_grid}
    return tuple(sorted(read))


def _vector_values(main: Operation) -> tuple[tuple[str, tuple[int, ...], str], ...]:
    found = [(op.name, tuple(t.shape), type_text(t.element)) for op in main.walk() for t in op.result_types
             if isinstance(t, ShapedType) and t.kind == "vector"]
    return tuple(sorted(found))


def _dots(main: Operation) -> tuple[Dot, ...]:
    found = []
    for op in main.walk():
        if not op.name.endswith("tpu.matmul") or len(op.operands) < 2 or not op.result_types:
            continue
        lhs, rhs = (_value_type(v) for v in op.operands[:2])
        result = op.result_types[0]
        if all(isinstance(t, ShapedType) for t in (lhs, rhs, result)):
            found.append(Dot(tuple(lhs.shape), _bits(lhs), _bits(rhs), tuple(result.shape)))
    return tuple(found)


def _bits(t: ShapedType) -> int:
    return getattr(t.element, "bits", None) or 32


def _value_type(value: Any) -> Any:
    if isinstance(value, OpResult):
        return value.op.result_types[value.index] if value.index < len(value.op.result_types) else None
    if isinstance(value, BlockArg):
        return value.block.arg_types[value.index] if value.index < len(value.block.arg_types) else None
    return None


def _mosaic_version(module: Module) -> int | None:
    for op in module.operations:
        value = op.attributes.get("stable_mosaic.version")
        if value is not None:
            return int_value(value, default=-1)
    return None


def read_kernel_bytecode(data: bytes, read_body: Callable[[Operation], Any] | None = None) -> MosaicKernel:
    """Decode MLIR bytecode (starting with the `ML\\xefR` magic) into a MosaicKernel."""
    module = read_module(data)
    try:
        return kernel_from_module(module, read_body)
    except BytecodeError:
        raise
    except (IndexError, KeyError, ValueError, TypeError, AttributeError) as exc:
        raise BytecodeError(f"unexpected kernel structure: {type(exc).__name__}: {exc}") from exc
