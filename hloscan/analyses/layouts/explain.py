"""Recognise XLA's E0102 "expected parameter ... but got buffer with incompatible size" and explain it."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Callable

from hloscan.hlo.attrs import closing_bracket
from hloscan.hlo.ir import Layout, Shape
from hloscan.hlo.layout import (
    DimPadding,
    SizeReport,
    TilingCandidate,
    memory_space_name,
    minor_to_major,
    size_report,
    tilings_for_size,
    with_layout,
)
from hloscan.hlo.shapes import parse_shape

ShapeParser = Callable[[str], Shape]

# Anchor of the runtime message; prefixes (XlaRuntimeError:, INVALID_ARGUMENT:, E0102: ...) are optional
# because logs quote it in several forms, and the shapes in parentheses are matched by a bracket scan.
_MESSAGE = re.compile(
    r"(?:Executable\((?P<exe>.*?)\)\s*)?"
    r"expected\s+parameter\s+(?P<param>\d+)\s+of\s+size\s+(?P<expected>\d+)\s*"
    r"(?P<expected_shape>\()?",
    re.S,
)
_GOT = re.compile(r"\s*but\s+got\s+buffer\s+with\s+incompatible\s+size\s+(?P<got>\d+)\s*(?P<got_shape>\()?", re.S)


@dataclass(frozen=True)
class Side:
    """One buffer of the message: the printed shape, the reported size and what the layout engine says."""

    role: str  # "expected" or "got"
    shape_text: str | None
    reported_bytes: int
    shape: Shape | None = None
    report: SizeReport | None = None  # of `effective_shape`
    effective_shape: Shape | None = None  # the printed shape, or with an inferred layout when that fits
    layout_inferred: bool = False
    candidates: tuple[TilingCandidate, ...] = ()
    parse_error: str | None = None

    @property
    def computed_bytes(self) -> int | None:
        """Size of the layout as printed (not the inferred one)."""
        if self.shape is None:
            return None
        return size_report(self.shape).bytes

    @property
    def agrees(self) -> bool | None:
        computed = self.computed_bytes
        return None if computed is None else computed == self.reported_bytes

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "shape": self.shape_text,
            "reported_bytes": self.reported_bytes,
            "computed_bytes": self.computed_bytes,
            "agrees": self.agrees,
        }
        if self.report is not None:
            out["unpadded_bytes"] = self.report.unpadded_bytes
            out["padding"] = [p.to_json() for p in self.report.padding]
            out["memory_space"] = self.report.memory_space
        if self.layout_inferred and self.effective_shape is not None:
            out["inferred_shape"] = self.effective_shape.to_text()
        if self.candidates:
            out["candidate_layouts"] = [c.to_json() for c in self.candidates]
        if self.parse_error:
            out["parse_error"] = self.parse_error
        return out


@dataclass(frozen=True)
class Difference:
    """One aspect in which the expected and the passed buffer differ."""

    aspect: str  # element type | dimensions | dimension order | tiling | element packing | memory space | ...
    expected: str
    got: str
    note: str = ""

    def to_json(self) -> dict[str, Any]:
        return {"aspect": self.aspect, "expected": self.expected, "got": self.got, "note": self.note}


@dataclass(frozen=True)
class Explanation:
    """A structured explanation of one E0102 message."""

    message: str
    executable: str | None
    parameter: int
    expected: Side
    got: Side
    differences: tuple[Difference, ...]
    padding_notes: tuple[str, ...]
    causes: tuple[str, ...]
    fixes: tuple[str, ...]
    notes: tuple[str, ...] = field(default=())
    code: str = "E0102"
    name: str = "RuntimeProgramInputMismatch"

    @property
    def size_difference(self) -> int:
        return self.expected.reported_bytes - self.got.reported_bytes

    def to_json(self) -> dict[str, Any]:
        return {
            "code": self.code,
            "name": self.name,
            "executable": self.executable,
            "parameter": self.parameter,
            "expected": self.expected.to_json(),
            "got": self.got.to_json(),
            "size_difference": self.size_difference,
            "differences": [d.to_json() for d in self.differences],
            "padding": list(self.padding_notes),
            "notes": list(self.notes),
            "causes": list(self.causes),
            "fixes": list(self.fixes),
            "message": self.message,
        }


# ---------------------------------------------------------------------------------------------------
# Recognition


@dataclass(frozen=True, slots=True)
class RawMessage:
    """The fields of an E0102 message before any shape is parsed."""

    text: str
    executable: str | None
    parameter: int
    expected_bytes: int
    expected_shape: str | None
    got_bytes: int
    got_shape: str | None


def _paren_body(text: str, m: re.Match, group: str) -> tuple[str | None, int]:
    if m.group(group) is None:
        return None, m.end()
    end = closing_bracket(text, m.start(group))
    if end is None:
        return None, m.end()
    return text[m.start(group) + 1 : end - 1].strip(), end


def match_message(text: str) -> RawMessage | None:
    """Find the first E0102 message in `text` (a log excerpt is fine)."""
    for m in _MESSAGE.finditer(text):
        expected_shape, pos = _paren_body(text, m, "expected_shape")
        g = _GOT.match(text, pos)
        if g is None:
            continue
        got_shape, end = _paren_body(text, g, "got_shape")
        exe = m.group("exe")
        return RawMessage(text[m.start() : end], exe.strip() if exe else None, int(m.group("param")),
                          int(m.group("expected")), expected_shape, int(g.group("got")), got_shape)
    return None


def is_e0102(text: str) -> bool:
    return match_message(text) is not None


# ---------------------------------------------------------------------------------------------------
# Sides: parse, size, infer unprinted tiles


def _default_parser() -> ShapeParser:
    return parse_shape


def _parse(text: str | None, parse: ShapeParser) -> tuple[Shape | None, str | None]:
    if text is None:
        return None, "the message prints no shape"
    try:
        shape = parse(text)
    except Exception as exc:  # noqa: BLE001 - any parser failure just means "explain by sizes only"
        return None, f"could not parse shape {text!r}: {str(exc).splitlines()[0] if str(exc) else type(exc).__name__}"
    return shape, None


def _build_side(role: str, text: str | None, reported: int, parse: ShapeParser) -> Side:
    shape, error = _parse(text, parse)
    if shape is None or not shape.is_array:
        report = size_report(shape) if shape is not None else None
        return Side(role, text, reported, shape, report, shape, parse_error=error)
    report = size_report(shape)
    if report.bytes == reported:
        return Side(role, text, reported, shape, report, shape)
    candidates = _candidates(shape, reported)
    if not candidates:
        return Side(role, text, reported, shape, report, shape)
    effective = _with_candidate(shape, candidates[0])
    return Side(role, text, reported, shape, size_report(effective), effective, True, tuple(candidates))


def _candidates(shape: Shape, reported: int) -> list[TilingCandidate]:
    """Tilings that account for the reported size: the printed dimension order first, then any order."""
    printed = [minor_to_major(shape)]
    found = tilings_for_size(shape.element_type, shape.dims, reported, printed)
    return found or tilings_for_size(shape.element_type, shape.dims, reported)


def _with_candidate(shape: Shape, candidate: TilingCandidate) -> Shape:
    old = shape.layout or Layout(())
    layout = Layout(candidate.minor_to_major, tiles=candidate.tiles,
                    element_size_bits=candidate.element_size_bits or old.element_size_bits,
                    memory_space=old.memory_space)
    return with_layout(shape, layout)


# ---------------------------------------------------------------------------------------------------
# Differences and padding attribution


def _minor_most(shape: Shape) -> str:
    order = minor_to_major(shape)
    if not order:
        return "a scalar"
    return f"minor-most dim {order[0]} (size {shape.dims[order[0]]})"


def differences(expected: Shape, got: Shape) -> list[Difference]:
    """Every printed aspect in which two array shapes differ, most fundamental first."""
    out: list[Difference] = []
    if expected.element_type != got.element_type:
        out.append(Difference("element type", expected.element_type, got.element_type))
    if expected.dims != got.dims:
        out.append(Difference("dimensions", str(list(expected.dims)), str(list(got.dims))))
    if not expected.is_array or not got.is_array:
        return out
    e, g = expected.layout or Layout(()), got.layout or Layout(())
    if expected.dims == got.dims and minor_to_major(expected) != minor_to_major(got):
        out.append(Difference(
            "dimension order", "{" + ",".join(map(str, minor_to_major(expected))) + "}",
            "{" + ",".join(map(str, minor_to_major(got))) + "}",
            f"{_minor_most(expected)} vs {_minor_most(got)}"))
    if e.tiles != g.tiles:
        out.append(Difference("tiling", _tiles(e), _tiles(g), _tile_note(e, g)))
    if e.element_size_bits != g.element_size_bits:
        out.append(Difference("element packing", _ebits(e, expected), _ebits(g, got),
                              "E(n) sets the bits per element in memory; sub-byte types are packed only with E(n)"))
    if e.memory_space != g.memory_space:
        out.append(Difference("memory space", f"S({e.memory_space}) {memory_space_name(e.memory_space)}",
                              f"S({g.memory_space}) {memory_space_name(g.memory_space)}"))
    for label, a, b in (("tail padding L(n)", e.tail_padding_alignment, g.tail_padding_alignment),
                        ("split configs SC", e.split_configs, g.split_configs),
                        ("dynamic metadata M(n)", e.dynamic_shape_metadata_prefix_bytes,
                         g.dynamic_shape_metadata_prefix_bytes)):
        if a != b:
            out.append(Difference(label, str(a), str(b)))
    return out


def _tiles(layout: Layout) -> str:
    return "T" + "".join(t.to_text() for t in layout.tiles) if layout.tiles else "untiled"


def _tile_note(e: Layout, g: Layout) -> str:
    if not e.tiles or not g.tiles:
        return "one side is untiled (dense); a TPU device buffer is always tiled"
    if e.tiles[0] != g.tiles[0]:
        return f"first tile {e.tiles[0].to_text()} vs {g.tiles[0].to_text()}: the first tile sets the padding"
    return "only sub-tiles differ: same size, different element order inside a tile"


def _ebits(layout: Layout, shape: Shape) -> str:
    return f"E({layout.element_size_bits})" if layout.element_size_bits else f"natural ({shape.element_type})"


def _padding_line(role: str, report: SizeReport) -> str:
    if not report.padding:
        return f"{role}: no padding ({report.bytes} bytes = the {report.unpadded_bytes} logical bytes)"
    pads = "; ".join(_pad_text(p) for p in report.padding)
    share = f"{report.waste_fraction:.0%}"
    return f"{role}: {pads} -> {report.waste_bytes} bytes of padding ({share} of {report.bytes})"


def _pad_text(p: DimPadding) -> str:
    return f"{p.describe()}, x{p.factor:.2f}"


def _culprits(report: SizeReport) -> str:
    return ", ".join(f"dim {p.dim} ({p.size} -> {p.padded_size})" if p.dim is not None else
                     f"an implicit dim (1 -> {p.padded_size})" for p in report.padding)


def padding_notes(expected: Side, got: Side) -> list[str]:
    """Which dimension's padding accounts for the size difference, per side."""
    er, gr = expected.report, got.report
    if er is None or gr is None or not er.bytes and not gr.bytes:
        return []
    out = [_padding_line("expected", er), _padding_line("got", gr)]
    diff = er.bytes - gr.bytes
    if diff and er.unpadded_bytes == gr.unpadded_bytes:
        (bigger, name), (smaller, other) = ((er, "expected"), (gr, "passed"))[:: 1 if diff > 0 else -1]
        if bigger.padding and not smaller.padding:
            out.append(f"the {abs(diff)}-byte difference is padding: {_culprits(bigger)} in the {name} layout")
        elif bigger.padding:
            out.append(f"the {abs(diff)}-byte difference is the net of both paddings: the {name} layout pads "
                       f"{_culprits(bigger)} ({bigger.waste_bytes} bytes), the {other} layout pads "
                       f"{_culprits(smaller)} ({smaller.waste_bytes} bytes)")
    elif diff:
        out.append(f"the logical sizes differ ({er.unpadded_bytes} vs {gr.unpadded_bytes} bytes): "
                   "not only the layout but the data itself differs (element type, shape or packing)")
    return out


# ---------------------------------------------------------------------------------------------------
# Causes and fixes


_CAUSES = {
    "dimension order": "The buffer was produced with another dimension order: typically an array restored "
    "from a checkpoint or handed over from another executable compiled under a different XLA/libtpu/jax "
    "version, XLA flags, mesh or topology, whose default (or auto-chosen) layout put another dim minor-most.",
    "tiling": "The buffer was tiled for another configuration: default tilings depend on the TPU generation "
    "and flags (e.g. large 2nd-minor tiles for 16-bit types on TPU7x or with "
    "--xla_tpu_enable_large_2nd_minor_layout_for_x16; (8,128) vs (32,128) for 8-bit types).",
    "element packing": "Sub-byte packing differs (E(n)): e.g. int4 stored packed two per byte on one side "
    "and one per byte on the other, from different XLA versions or a host-side conversion.",
    "memory space": "The buffer lives in another memory space (e.g. pinned host S(5) vs device HBM): a "
    "memory_kind/out_shardings mismatch between the producer and this executable.",
    "element type": "The array has another element type than the compiled parameter (a dtype change, e.g. "
    "a checkpoint saved in f32 restored into a bf16 program without casting).",
    "dimensions": "The array has another logical shape than the compiled parameter (e.g. a different "
    "batch size or sharding, so the per-device shard differs).",
}
_GENERIC_CAUSE = ("The executable was compiled for a layout that differs from the layout of the array "
                  "passed in; the runtime checks byte sizes, so only size-changing differences surface here.")

_FIXES = (
    "Re-lay out the array to what the executable expects before the call: get the compiled executable's "
    "input layouts (`compiled = jitted.lower(*args).compile(); fmts = compiled.input_formats`) and "
    "`jax.device_put(x, fmts[...])` with the matching entry; this is an on-device copy, the values are "
    "unchanged.",
    "When restoring a checkpoint, restore straight into the executable's input layouts: pass "
    "`jax.ShapeDtypeStruct(shape, dtype, sharding=Format(Layout(...), sharding))` targets (jax "
    "`jax.experimental.layout.Format`/`Layout`; `DeviceLocalLayout` in older jax) built from "
    "`compiled.input_formats`, instead of default-layout arrays.",
    "Or pin the layout at compile time so producer and consumer agree: `jax.jit(f, in_shardings=Format("
    "Layout(major_to_minor=...), sharding))` (or `Layout.AUTO` on both sides), and keep jax/jaxlib/libtpu "
    "versions, XLA flags and topology identical between the run that wrote the buffers and this one; "
    "recompile instead of reusing a serialized executable from another setup.",
    "Compare the two programs' entry signatures (`hloscan diff old.txt new.txt`) to find every parameter "
    "whose physical layout changed, not only this one.",
)


def causes_for(diffs: list[Difference]) -> list[str]:
    out = [_CAUSES[d.aspect] for d in diffs if d.aspect in _CAUSES]
    return list(dict.fromkeys(out)) or [_GENERIC_CAUSE]


def fixes_for(diffs: list[Difference]) -> list[str]:
    out = list(_FIXES)
    aspects = {d.aspect for d in diffs}
    if aspects & {"element type", "dimensions"}:
        out.insert(0, "The logical shape or dtype differs: fix the data (cast, reshape or reshard) first; "
                      "re-laying out cannot change the number of elements.")
    if "memory space" in aspects:
        out.insert(0, "Move the array to the expected memory kind (`jax.device_put(x, "
                      "sharding.with_memory_kind('device'|'pinned_host'))`) or make out_shardings/in_shardings "
                      "memory kinds agree.")
    return out


# ---------------------------------------------------------------------------------------------------
# Entry points


def explain_e0102(text: str, parse_shape: ShapeParser | None = None) -> Explanation | None:
    """Explain the first E0102 message in `text`; None when `text` holds no such message."""
    raw = match_message(text)
    if raw is None:
        return None
    parse = parse_shape or _default_parser()
    expected = _build_side("expected", raw.expected_shape, raw.expected_bytes, parse)
    got = _build_side("got", raw.got_shape, raw.got_bytes, parse)
    diffs = _differences(expected, got)
    return Explanation(raw.text, raw.executable, raw.parameter, expected, got, tuple(diffs),
                       tuple(padding_notes(expected, got)), tuple(causes_for(diffs)), tuple(fixes_for(diffs)),
                       tuple(_notes(expected) + _notes(got) + _agreement_notes(expected, got, diffs)))


def _differences(expected: Side, got: Side) -> list[Difference]:
    if expected.effective_shape is None or got.effective_shape is None:
        return []
    return differences(expected.effective_shape, got.effective_shape)


def _notes(side: Side) -> list[str]:
    out = []
    if side.parse_error:
        out.append(f"{side.role}: {side.parse_error}")
    if side.shape is None or side.agrees in (True, None) or side.report is None:
        return out
    printed = side.shape.to_text()
    computed = side.computed_bytes
    if side.layout_inferred and side.effective_shape is not None:
        names = ", ".join(c.layout_text() + (" (XLA's default)" if c.is_default else "")
                          for c in side.candidates[:6])
        out.append(f"{side.role}: the printed layout {printed} does not account for {side.reported_bytes} bytes "
                   f"(it gives {computed}); the runtime printed the layout without its tiles. Layouts that "
                   f"give {side.reported_bytes} bytes: {names}. Assuming {side.effective_shape.to_text()}.")
    else:
        out.append(f"{side.role}: the printed layout {printed} gives {computed} bytes, not the reported "
                   f"{side.reported_bytes}, and no common TPU tiling of this shape gives that size.")
    return out


def _agreement_notes(expected: Side, got: Side, diffs: list[Difference]) -> list[str]:
    if expected.effective_shape is None or got.effective_shape is None:
        return ["sizes only: the shapes could not be read, so the differing aspect is unknown"]
    if not diffs:
        return ["the printed shapes are identical; the size difference comes from layout parts the message "
                "does not print"]
    if all(d.aspect == "tiling" and "sub-tiles" in d.note for d in diffs):
        return ["only sub-tiles differ, which never changes the size; check the unprinted layout parts"]
    return []


def _side_line(side: Side) -> str:
    computed = side.computed_bytes
    if computed is None:
        check = "(not computed)"
    elif computed == side.reported_bytes:
        check = "= computed"
    elif side.layout_inferred and side.report is not None:
        check = f"!= {computed} computed from the printed layout; {side.report.bytes} with the inferred tiles"
    else:
        check = f"!= {computed} computed"
    return f"  {side.role + ':':9} {side.shape_text or '?'}\n             {side.reported_bytes} bytes reported {check}"


def render_text(explanation: Explanation) -> str:
    """A human-readable multi-line explanation."""
    e = explanation
    where = f"executable {e.executable}, " if e.executable else ""
    lines = [f"{e.code} {e.name}: {where}parameter {e.parameter}", _side_line(e.expected), _side_line(e.got)]
    diff = e.size_difference
    lines.append(f"  size difference: {abs(diff)} bytes ({'expected is larger' if diff > 0 else 'passed is larger'})"
                 if diff else "  size difference: none (reported sizes are equal)")
    if e.differences:
        lines.append("  what differs:")
        lines += [f"    - {d.aspect}: {d.expected} (expected) vs {d.got} (got)" + (f"; {d.note}" if d.note else "")
                  for d in e.differences]
    if e.padding_notes:
        lines.append("  padding:")
        lines += [f"    - {n}" for n in e.padding_notes]
    if e.notes:
        lines.append("  notes:")
        lines += [f"    - {n}" for n in e.notes]
    lines.append("  likely causes:")
    lines += [f"    - {c}" for c in e.causes]
    lines.append("  fixes:")
    lines += [f"    - {f}" for f in e.fixes]
    return "\n".join(lines)


__all__ = ["Difference", "Explanation", "RawMessage", "Side", "differences", "explain_e0102", "is_e0102",
           "match_message", "padding_notes", "render_text"]
