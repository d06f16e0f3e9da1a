"""The hloscan IR: frozen dataclasses for modules, computations, instructions, shapes and layouts.

Both parse paths (the fast line splitter and the strict lark grammar) build exactly these objects, and
`Module.to_text()` prints them back in XLA's canonical text form. Attribute values are kept as the raw
text the dump holds (one source of truth, identical on both paths); typed views such as `metadata`
or `entry_computation_layout` are parsed on first access by `hloscan.attrs`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from itertools import chain, compress
from operator import attrgetter
from typing import Iterator, NamedTuple

from hloscan.hlo.attrs import parse_name_list, split_attributes, unquote

# Element types and their widths in bits, as in xla_data.proto (PrimitiveType). `pred` occupies a byte.
ELEMENT_BITS: dict[str, int] = {
    "pred": 8,
    "s1": 1, "s2": 2, "s4": 4, "s8": 8, "s16": 16, "s32": 32, "s64": 64,
    "u1": 1, "u2": 2, "u4": 4, "u8": 8, "u16": 16, "u32": 32, "u64": 64,
    "f16": 16, "f32": 32, "f64": 64, "bf16": 16,
    "f8e5m2": 8, "f8e4m3": 8, "f8e4m3fn": 8, "f8e4m3b11fnuz": 8, "f8e3m4": 8,
    "f8e5m2fnuz": 8, "f8e4m3fnuz": 8, "f8e8m0fnu": 8,
    "f4e2m1fn": 4, "f6e3m2fn": 6, "f6e2m3fn": 6,
    "c64": 64, "c128": 128,
    "token": 0, "opaque": 0,
}

# Opcodes whose operand slot holds a literal (a parameter number, a constant's value), not operands.
LITERAL_OPCODES = frozenset({"parameter", "constant"})

# Memory space ids XLA uses in layouts (`S(n)`). 5 is host memory on TPU and GPU.
HOST_MEMORY_SPACE = 5
MEMORY_SPACE_NAMES = {0: "device", 1: "alternate (VMEM/HBM fast)", 2: "sram", 3: "pinned device", 5: "host"}


@dataclass(frozen=True, slots=True)
class Tile:
    """One tile of a tiled layout, e.g. (8,128). A dimension of None is XLA's `*` (combine dimension)."""

    dims: tuple[int | None, ...]

    def to_text(self) -> str:
        return "(" + ",".join("*" if d is None else str(d) for d in self.dims) + ")"


@dataclass(frozen=True, slots=True)
class SplitConfig:
    """`SC(dim:i,j)`: a dimension split at the given indices (memory-space splitting)."""

    dimension: int
    split_indices: tuple[int, ...]

    def to_text(self) -> str:
        return f"({self.dimension}:" + ",".join(map(str, self.split_indices)) + ")"


@dataclass(frozen=True, slots=True)
class Layout:
    """An XLA layout: minor_to_major plus the optional parts after `:`, in XLA's fixed order."""

    minor_to_major: tuple[int, ...]
    dim_level_types: str | None = None  # raw `D(...)` body; parse-only in XLA, kept verbatim
    tiles: tuple[Tile, ...] = ()
    tail_padding_alignment: int | None = None  # L(n)
    index_type: str | None = None  # #(u32)
    pointer_type: str | None = None  # *(u64)
    element_size_bits: int = 0  # E(n)
    memory_space: int = 0  # S(n)
    split_configs: tuple[SplitConfig, ...] = ()
    physical_shape: Shape | None = None  # P(shape)
    dynamic_shape_metadata_prefix_bytes: int = 0  # M(n)

    def to_text(self) -> str:
        out = ["{", ",".join(map(str, self.minor_to_major))]
        tail = self._tail_text()
        if tail:
            out.append(":" + tail)
        out.append("}")
        return "".join(out)

    def _tail_text(self) -> str:
        parts = []
        if self.dim_level_types is not None:
            parts.append(f"D({self.dim_level_types})")
        if self.tiles:
            parts.append("T" + "".join(t.to_text() for t in self.tiles))
        if self.tail_padding_alignment is not None:
            parts.append(f"L({self.tail_padding_alignment})")
        if self.index_type is not None:
            parts.append(f"#({self.index_type})")
        if self.pointer_type is not None:
            parts.append(f"*({self.pointer_type})")
        if self.element_size_bits:
            parts.append(f"E({self.element_size_bits})")
        if self.memory_space:
            parts.append(f"S({self.memory_space})")
        if self.split_configs:
            parts.append("SC" + "".join(s.to_text() for s in self.split_configs))
        if self.physical_shape is not None:
            parts.append(f"P({self.physical_shape.to_text()})")
        if self.dynamic_shape_metadata_prefix_bytes:
            parts.append(f"M({self.dynamic_shape_metadata_prefix_bytes})")
        return "".join(parts)

    @property
    def is_host(self) -> bool:
        return self.memory_space == HOST_MEMORY_SPACE


# A dimension of unbounded dynamic size (`?`).
UNBOUNDED = -1


@dataclass(frozen=True, slots=True)
class Shape:
    """An array, tuple, token, opaque or buffer shape.

    `element_type` is the lower-case type name, or "tuple"/"buffer". `dims` hold sizes (UNBOUNDED for `?`);
    `dynamic` marks `<=` bounded dims. A buffer shape `b(...)` keeps its one array in `tuple_shapes`.
    """

    element_type: str
    dims: tuple[int, ...] = ()
    dynamic: tuple[bool, ...] = ()
    layout: Layout | None = None
    tuple_shapes: tuple[Shape, ...] = ()

    @property
    def is_tuple(self) -> bool:
        return self.element_type == "tuple"

    @property
    def is_array(self) -> bool:
        return self.element_type not in ("tuple", "buffer", "token", "opaque")

    @property
    def memory_space(self) -> int:
        return self.layout.memory_space if self.layout is not None else 0

    def leaves(self, prefix: tuple[int, ...] = ()) -> Iterator[tuple[tuple[int, ...], Shape]]:
        """Yield (shape index, array shape) for every non-tuple leaf, in order."""
        if self.is_tuple:
            for i, sub in enumerate(self.tuple_shapes):
                yield from sub.leaves(prefix + (i,))
        else:
            yield prefix, self

    def at(self, index: tuple[int, ...]) -> Shape | None:
        """The subshape at a shape index, or None when the index does not exist."""
        shape: Shape = self
        for i in index:
            if not shape.is_tuple or i >= len(shape.tuple_shapes):
                return None
            shape = shape.tuple_shapes[i]
        return shape

    def to_text(self, with_layout: bool = True) -> str:
        if self.element_type == "tuple":
            return "(" + _join_indexed([s.to_text(with_layout) for s in self.tuple_shapes]) + ")"
        if self.element_type == "buffer":
            return "b(" + self.tuple_shapes[0].to_text(with_layout) + ")"
        dims = ",".join(
            "?" if d == UNBOUNDED else ("<=" if dyn else "") + str(d) for d, dyn in zip(self.dims, self.dynamic)
        )
        text = f"{self.element_type}[{dims}]"
        if with_layout and self.layout is not None and (self.dims or self.layout._tail_text()):
            text += self.layout.to_text()
        return text

    def __str__(self) -> str:
        return self.to_text()


def _join_indexed(items: list[str]) -> str:
    """Join tuple elements the way XLA's printer does: `/*index=N*/` before every fifth element."""
    return ", ".join(f"/*index={i}*/{s}" if i and i % 5 == 0 else s for i, s in enumerate(items))


class _OperandFields(NamedTuple):
    name: str | None
    shape: Shape | None = None
    tuple_index: tuple[int, ...] = ()
    text: str | None = None


class Operand(_OperandFields):
    """One operand of an instruction.

    `name` is the referenced instruction (without `%`); `shape` is present when the dump prints operand
    shapes (long form). `tuple_index` is the compact get-tuple-element suffix `%t#1#0`. A nested
    instruction operand (parser tests only) has name None and its raw text in `text`.

    A NamedTuple, not a dataclass: a 50 MB dump builds about a million operands and instructions, and a
    tuple is built several times faster than a frozen dataclass (which sets each field through
    object.__setattr__). It is immutable all the same.
    """

    __slots__ = ()

    def to_text(self, percent: bool = True) -> str:
        if self.name is None:
            return self.text or ""
        ref = ("%" if percent else "") + self.name + "".join(f"#{i}" for i in self.tuple_index)
        return f"{self.shape.to_text()} {ref}" if self.shape is not None else ref


def resolve_operand_shape(operand: Operand, producers: "dict[str, Instruction]") -> Shape | None:
    """An operand's shape: printed (long form), else its producer's in `producers` at its tuple index."""
    if operand.shape is not None:
        return operand.shape
    producer = producers.get(operand.name) if operand.name else None
    shape = producer.shape if producer is not None else None
    for k in operand.tuple_index:
        shape = shape.at((k,)) if shape is not None else None
    return shape


class _InstructionFields(NamedTuple):
    name: str
    opcode: str
    shape: Shape | None
    operands: tuple[Operand, ...] = ()
    attrs_text: str = ""
    is_root: bool = False
    literal: str | None = None
    line: int = 0
    col: int = 0


class Instruction(_InstructionFields):
    """One HLO instruction.

    `attrs_text` is the raw text after the operand list (", dimensions={1}, metadata={...}"); `attrs`
    splits it into (name, raw value) pairs on first access, since most attributes of a 50 MB dump are
    never read. For `parameter` and `constant` the operand slot holds a number or literal, kept in
    `literal`. `line` and `col` are 1-based and point at the instruction's first token.

    A NamedTuple like Operand, for the same reason (construction speed). It declares no `__slots__`, so
    the split attributes can be cached in its instance dict, which exists only once something is cached.
    """

    @property
    def attrs(self) -> tuple[tuple[str, str], ...]:
        cache = self.__dict__
        cached = cache.get("_attrs")
        if cached is None:
            cached = cache["_attrs"] = tuple(split_attributes(self.attrs_text))
        return cached

    def attr(self, name: str, default: str | None = None) -> str | None:
        if name not in self.attrs_text:  # cheap pre-check before splitting
            return default
        for key, value in self.attrs:
            if key == name:
                return value
        return default

    @property
    def operand_names(self) -> list[str]:
        return [o.name for o in self.operands if o.name is not None]

    @property
    def parameter_number(self) -> int | None:
        if self.opcode != "parameter" or self.literal is None:
            return None
        try:
            return int(self.literal)
        except ValueError:
            return None

    @property
    def custom_call_target(self) -> str | None:
        target = self.attr("custom_call_target")
        if target is None:
            return None
        return unquote(target)

    @property
    def branch_names(self) -> list[str]:
        """The computations a conditional calls, in branch order (branch_computations, or true then false)."""
        names = parse_name_list(self.attr("branch_computations"))
        if names:
            return names
        return [n for n in (self.attr("true_computation"), self.attr("false_computation")) if n]

    def to_text(self, percent: bool = True) -> str:
        sigil = "%" if percent else ""
        head = ("ROOT " if self.is_root else "") + sigil + self.name + " = "
        if self.shape is not None:
            head += self.shape.to_text() + " "
        if self.literal is not None:
            body = self.literal
        else:
            operands = [o.to_text(percent) for o in self.operands]
            # ShortParsable output (no `%` sigils) sets the operand index-comment interval to 0.
            body = _join_indexed(operands) if percent else ", ".join(operands)
        return f"{head}{self.opcode}({body}){self.attrs_text}"


@dataclass(frozen=True, slots=True)
class Parameter:
    """A parameter in a computation signature: `name: shape` (signature shapes carry no layout)."""

    name: str
    shape: Shape


@dataclass(frozen=True)
class Computation:
    """A computation: its instructions in order, optional signature, entry flag and execution thread."""

    name: str
    instructions: tuple[Instruction, ...]
    is_entry: bool = False
    parameters: tuple[Parameter, ...] | None = None  # None when printed without a signature
    result: Shape | None = None
    execution_thread: str | None = None
    line: int = 0
    col: int = 0

    def __repr__(self) -> str:
        return f"<Computation {self.name}{' (ENTRY)' if self.is_entry else ''}: {len(self.instructions)} instructions>"

    @cached_property
    def by_name(self) -> dict[str, Instruction]:
        return {inst.name: inst for inst in self.instructions}

    @cached_property
    def root(self) -> Instruction:
        for inst in self.instructions:
            if inst.is_root:
                return inst
        return self.instructions[-1]

    def operand_shape(self, inst: Instruction, pos: int) -> Shape | None:
        """The shape of operand `pos` of `inst`: printed with the operand, else its producer's (at the
        operand's `#i` tuple index). None when unknown."""
        if pos >= len(inst.operands):
            return None
        return resolve_operand_shape(inst.operands[pos], self.by_name)

    @cached_property
    def parameter_instructions(self) -> dict[int, Instruction]:
        out = {}
        for inst in self.instructions:
            if inst.opcode == "parameter":  # first: the property call per instruction was the cost
                number = inst.parameter_number
                if number is not None:
                    out[number] = inst
        return out

    def to_text(self, percent: bool = True) -> str:
        sigil = "%" if percent else ""
        head = ("ENTRY " if self.is_entry else "") + sigil + self.name + " "
        if self.parameters is not None and self.result is not None:
            params = _join_params(self.parameters)
            head += f"({params}) -> {self.result.to_text(with_layout=False)} "
        lines = [head + "{"]
        lines.extend("  " + inst.to_text(percent) for inst in self.instructions)
        tail = "}"
        if self.execution_thread is not None:
            tail += f", execution_thread={self.execution_thread}"
        lines.append(tail)
        return "\n".join(lines)


def _join_params(params: tuple[Parameter, ...]) -> str:
    return ", ".join(f"{p.name}: {p.shape.to_text(with_layout=False)}" for p in params)


@dataclass(frozen=True, slots=True)
class Location:
    """A Python source location resolved from metadata (stack frames or source_file/source_line)."""

    file: str
    line: int
    function: str | None = None
    column: int | None = None

    def __str__(self) -> str:
        return f"{self.file}:{self.line}"


@dataclass(frozen=True)
class StackFrameTables:
    """The FileNames/FunctionNames/FileLocations/StackFrames tables after the module header."""

    file_names: tuple[tuple[int, str], ...] = ()
    function_names: tuple[tuple[int, str], ...] = ()
    # id -> (file_name_id, function_name_id, line, end_line, column, end_column), raw field text kept
    file_locations: tuple[tuple[int, tuple[tuple[str, int], ...]], ...] = ()
    stack_frames: tuple[tuple[int, tuple[tuple[str, int], ...]], ...] = ()

    def to_text(self) -> str:
        sections = [
            ["FileNames"] + [f"{i} {s}" for i, s in self.file_names],
            ["FunctionNames"] + [f"{i} {s}" for i, s in self.function_names],
            ["FileLocations"] + [f"{i} {{" + " ".join(f"{k}={v}" for k, v in f) + "}" for i, f in self.file_locations],
            ["StackFrames"] + [f"{i} {{" + " ".join(f"{k}={v}" for k, v in f) + "}" for i, f in self.stack_frames],
        ]
        return "\n\n".join("\n".join(lines) for lines in sections) + "\n"


# XLA's printer starts `debug_attributes` on a line of its own, and ends `origin_recovery_table` with a
# newline of its own (so one more blank line follows the header).
_NEWLINE_BEFORE_HEADER_ATTRS = frozenset({"debug_attributes"})
_NEWLINE_AFTER_HEADER_ATTRS = frozenset({"origin_recovery_table"})


# Column readers of the NamedTuple records (C-level, for whole-module filters).
_OPCODE = attrgetter("opcode")
_SHAPE = attrgetter("shape")
_OPERANDS = attrgetter("operands")


@dataclass(frozen=True)
class Module:
    """An HLO module: header attributes (raw text), optional stack-frame tables and computations.

    `percent_names` records whether the dump wrote `%` sigils (default dumps do; ShortParsable does not),
    so that `to_text()` reproduces the input's form. `path` and `line` say where it came from.
    """

    name: str
    computations: tuple[Computation, ...]
    attrs: tuple[tuple[str, str], ...] = ()
    stack_frames: StackFrameTables | None = None
    has_header: bool = True
    percent_names: bool = True
    path: str | None = field(default=None, compare=False)
    line: int = field(default=1, compare=False)

    def attr(self, name: str, default: str | None = None) -> str | None:
        for key, value in self.attrs:
            if key == name:
                return value
        return default

    def __repr__(self) -> str:
        # A summary: the generated repr printed the whole IR (a million records for a big dump).
        where = f" from {self.path}:{self.line}" if self.path else ""
        return (f"<Module {self.name}: {len(self.computations)} computations, {self.instruction_count} "
                f"instructions{where}>")

    @cached_property
    def entry(self) -> Computation:
        for comp in self.computations:
            if comp.is_entry:
                return comp
        return self.computations[-1]

    @cached_property
    def computations_by_name(self) -> dict[str, Computation]:
        return {c.name: c for c in self.computations}

    def instructions(self) -> Iterator[tuple[Computation, Instruction]]:
        for comp in self.computations:
            for inst in comp.instructions:
                yield comp, inst

    def with_opcode(self, opcode: str) -> list[tuple[Computation, Instruction]]:
        """The (computation, instruction) pairs of one opcode, in module order; memoized per opcode.

        Checks ask for a few opcodes each (custom-call, copy-start...) on modules of 300k+ instructions:
        the filter runs in C (compress over the opcode column), a few ms per opcode."""
        memo = self.__dict__.setdefault("_with_opcode", {})
        found = memo.get(opcode)
        if found is None:
            is_it = opcode.__eq__
            found = memo[opcode] = [(comp, inst) for comp in self.computations
                                    for inst in compress(comp.instructions, map(is_it, map(_OPCODE, comp.instructions)))]
        return found

    @cached_property
    def distinct_shapes(self) -> tuple[Shape, ...]:
        """Every distinct (by identity) shape object of the instructions and of their printed operands.
        The fast path shares one object per shape string, so a whole-module question about shapes (is any
        leaf in host memory?) looks at a few thousand objects instead of every instruction."""
        shapes: dict[int, Shape] = {}
        for comp in self.computations:
            insts = comp.instructions
            found = list(map(_SHAPE, insts))
            found += filter(None, map(_SHAPE, chain.from_iterable(map(_OPERANDS, insts))))
            shapes.update(zip(map(id, found), found))
        return tuple(s for s in shapes.values() if s is not None)

    @property
    def instruction_count(self) -> int:
        return sum(len(c.instructions) for c in self.computations)

    @cached_property
    def graph(self):  # -> networkx.MultiDiGraph; imported lazily so IR users need not pay for networkx
        from hloscan.hlo.graph import build_graph

        return build_graph(self)

    @property
    def graph_if_built(self):
        """`graph` when something built it already, else None (without building it)."""
        return self.__dict__.get("graph")

    def to_text(self) -> str:
        parts = []
        if self.has_header:
            header = "HloModule " + self.name
            for key, value in self.attrs:
                separator = ",\n" if key in _NEWLINE_BEFORE_HEADER_ATTRS else ", "
                header += f"{separator}{key}={value}"
                if key in _NEWLINE_AFTER_HEADER_ATTRS:
                    header += "\n"
            parts.append(header)
            parts.append("")
        if self.stack_frames is not None:
            parts.append(self.stack_frames.to_text())
            parts.append("")
        for comp in self.computations:
            parts.append(comp.to_text(self.percent_names))
            parts.append("")
        return "\n".join(parts) + "\n"
