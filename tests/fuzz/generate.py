"""Hypothesis strategies that build random valid IR modules, printable by `Module.to_text()` and parseable again."""

from __future__ import annotations

import re

from hypothesis import strategies as st

from hloscan.hlo.ir import (ELEMENT_BITS, UNBOUNDED, Computation, Instruction, Layout, Module, Operand, Parameter,
                        Shape, SplitConfig, StackFrameTables, Tile)

# Words the grammar reads as keywords or literals, so a `%`-less printer could not use them as names.
_RESERVED = re.compile(
    r"(?:" + "|".join(sorted(ELEMENT_BITS, key=len, reverse=True)) + r"|ROOT|ENTRY|HloModule|parameter|constant"
    r"|FileNames|FunctionNames|FileLocations|StackFrames|-?nan.*|-?inf|true|false|maximal.*|mesh|T|D|S|L|E|M|P|SC)"
)
ARRAY_TYPES = sorted(t for t in ELEMENT_BITS if t not in ("token", "opaque"))
# Strings that have broken reporters and printers elsewhere: quotes, markup, newlines, braces, arrows,
# GitHub workflow-command syntax, format characters, and non-ASCII.
HOSTILE = ('"', "<", ">", "&", "\n", "\r", "}", "{", "->", "%", "::", "\\", "'", "\t", "/*", "*/", "//",
           "\x1b[31m", "\u202e", "é", "😀", "%0A", "::error file=x::", "]]>", "<script>", "${x}", ",", "=")

names = st.from_regex(r"[A-Za-z_][A-Za-z0-9_.\-]{0,11}", fullmatch=True).filter(
    lambda n: _RESERVED.fullmatch(n) is None
)
hostile_text = st.lists(st.one_of(st.sampled_from(HOSTILE), st.text(max_size=6)), max_size=5).map("".join)


def c_escape(text: str) -> str:
    """Quote a string the way XLA's printer does (CEscape), so unquote() must give the text back."""
    out = []
    for ch in text:
        if ch in '"\\':
            out.append("\\" + ch)
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\t":
            out.append("\\t")
        elif ch == "\r":
            out.append("\\r")
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"\\{ord(ch):03o}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


@st.composite
def layouts(draw, rank: int) -> Layout | None:
    minor_to_major = tuple(draw(st.permutations(range(rank))))
    tiles = tuple(draw(st.lists(st.builds(Tile, st.lists(st.one_of(st.none(), st.integers(1, 512)),
                                                                  min_size=1, max_size=3).map(tuple)), max_size=2)))
    layout = Layout(
        minor_to_major,
        tiles=tiles,
        tail_padding_alignment=draw(st.none() | st.integers(1, 64)),
        index_type=draw(st.none() | st.sampled_from(["u32", "s64"])),
        pointer_type=draw(st.none() | st.sampled_from(["u64", "u32"])),
        element_size_bits=draw(st.sampled_from([0, 0, 4, 8])),
        memory_space=draw(st.sampled_from([0, 0, 1, 5])),
        split_configs=tuple(draw(st.lists(st.builds(SplitConfig, st.integers(0, 3),
                                                    st.lists(st.integers(0, 99), min_size=1, max_size=2).map(tuple)),
                                          max_size=1))),
        dynamic_shape_metadata_prefix_bytes=draw(st.sampled_from([0, 0, 8])),
    )
    # The printer drops a scalar's empty layout (`f32[]{}` is not a layout), so scalars keep only tails.
    return None if rank == 0 and not layout._tail_text() else layout


@st.composite
def array_shapes(draw, with_layout: bool = True) -> Shape:
    etype = draw(st.sampled_from(ARRAY_TYPES))
    rank = draw(st.integers(0, 4))
    dims, dynamic = [], []
    for _ in range(rank):
        kind = draw(st.sampled_from(["static", "static", "static", "bounded", "unbounded"]))
        dims.append(UNBOUNDED if kind == "unbounded" else draw(st.integers(0, 2**40)))
        dynamic.append(kind != "static")
    layout = draw(st.none() | layouts(rank)) if with_layout else None
    return Shape(etype, tuple(dims), tuple(dynamic), layout)


def shapes(with_layout: bool = True, depth: int = 2):
    leaf = st.one_of(array_shapes(with_layout), array_shapes(with_layout),
                     st.sampled_from([Shape("token"), Shape("opaque")]))
    return st.recursive(leaf, lambda inner: st.lists(inner, max_size=7).map(
        lambda parts: Shape("tuple", tuple_shapes=tuple(parts))), max_leaves=depth * 4)


def _attrs_text(draw) -> str:
    """Hostile strings in the attributes that carry free text: metadata, frontend attributes, backend_config."""
    parts = []
    if draw(st.booleans()):
        fields = [f"op_name={c_escape(draw(hostile_text))}"]
        if draw(st.booleans()):
            fields.append(f"source_file={c_escape(draw(hostile_text))} source_line={draw(st.integers(0, 2**31))}")
        parts.append("metadata={" + " ".join(fields) + "}")
    if draw(st.booleans()):
        keys = draw(st.lists(names, min_size=1, max_size=3, unique=True))
        parts.append("frontend_attributes={" + ",".join(f"{k}={c_escape(draw(hostile_text))}" for k in keys) + "}")
    if draw(st.booleans()):
        parts.append(f"backend_config={c_escape(draw(hostile_text))}")
    return "".join(", " + p for p in parts)


@st.composite
def computations(draw, name: str, is_entry: bool, callees: list[Computation]) -> Computation:
    params = [draw(shapes(with_layout=False)) for _ in range(draw(st.integers(0, 3)))]
    used: set[str] = set()

    def fresh() -> str:
        n = draw(names.filter(lambda n: n not in used))
        used.add(n)
        return n

    insts: list[Instruction] = []
    for i, shape in enumerate(params):
        insts.append(Instruction(fresh(), "parameter", shape, (), _attrs_text(draw), literal=str(i)))
    for _ in range(draw(st.integers(0 if params else 1, 5))):
        insts.append(draw(_instruction(fresh(), insts, callees)))
    root = insts[-1]
    insts[-1] = Instruction(root.name, root.opcode, root.shape, root.operands, root.attrs_text, True, root.literal)
    signature = draw(st.booleans())
    parameters = tuple(Parameter(i.name, i.shape) for i in insts if i.opcode == "parameter") if signature else None
    result = _strip_layout(root.shape) if signature else None
    return Computation(name, tuple(insts), is_entry, parameters, result)


def _strip_layout(shape: Shape) -> Shape:
    if shape.is_tuple:
        return Shape("tuple", tuple_shapes=tuple(_strip_layout(s) for s in shape.tuple_shapes))
    return Shape(shape.element_type, shape.dims, shape.dynamic)


@st.composite
def _instruction(draw, name: str, earlier: list[Instruction], callees: list[Computation]) -> Instruction:
    long_form = draw(st.booleans())

    def ref(inst: Instruction) -> Operand:
        return Operand(inst.name, inst.shape if long_form else None)

    kinds = ["custom-call", "tuple", "after-all"] + (["copy", "negate"] if earlier else []) + (
        ["call"] if callees else [])
    kind = draw(st.sampled_from(kinds))
    picks = draw(st.lists(st.sampled_from(earlier), max_size=4)) if earlier else []
    attrs = _attrs_text(draw)
    if kind in ("copy", "negate"):
        src = draw(st.sampled_from(earlier))
        return Instruction(name, kind, src.shape, (ref(src),), attrs)
    if kind == "tuple":
        return Instruction(name, "tuple", Shape("tuple", tuple_shapes=tuple(p.shape for p in picks)),
                           tuple(ref(p) for p in picks), attrs)
    if kind == "after-all":
        return Instruction(name, "after-all", Shape("token"), (), attrs)
    if kind == "call":
        callee = draw(st.sampled_from(callees))
        return Instruction(name, "call", callee.root.shape, tuple(ref(p) for p in picks),
                           f", to_apply=%{callee.name}" + attrs)
    target = c_escape(draw(hostile_text))
    return Instruction(name, "custom-call", draw(shapes()), tuple(ref(p) for p in picks),
                       f", custom_call_target={target}" + attrs)


@st.composite
def stack_frames(draw) -> StackFrameTables:
    files = tuple((i + 1, c_escape(draw(hostile_text))) for i in range(draw(st.integers(1, 3))))
    funcs = tuple((i + 1, c_escape(draw(hostile_text))) for i in range(draw(st.integers(1, 3))))
    locs = tuple((i + 1, (("file_name_id", draw(st.integers(1, len(files)))),
                          ("function_name_id", draw(st.integers(1, len(funcs)))), ("line", draw(st.integers(0, 9999)))))
                 for i in range(draw(st.integers(1, 3))))
    frames = tuple((i + 1, (("file_location_id", draw(st.integers(1, len(locs)))), ("parent_frame_id", i)))
                   for i in range(draw(st.integers(1, 3))))
    return StackFrameTables(files, funcs, locs, frames)


@st.composite
def modules(draw) -> Module:
    comp_names = draw(st.lists(names, min_size=1, max_size=3, unique=True))
    comps: list[Computation] = []
    for i, cname in enumerate(comp_names):
        comps.append(draw(computations(cname, i == len(comp_names) - 1, list(comps))))
    frames = draw(st.none() | stack_frames())
    return Module(draw(names), tuple(comps), (), frames, True, True)
