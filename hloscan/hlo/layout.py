"""Physical (tiled, padded) byte sizes of XLA shapes, padding attribution, and inverse tiling search.

Sizing follows XLA's `ShapeUtil::ArraySize`, checked against every row of the TPU oracle's LAYOUTS.tsv:

* dims are ordered major -> minor by reversing `minor_to_major`;
* only the FIRST tile pads: it applies to the k most-minor physical dims (missing dims count as 1, so a
  scalar `f32[]{:T(128)}` holds 128 elements); later tiles such as (2,1)/(4,1)/(8,1)/(128) only permute
  elements inside the first tile. When a later tile does not divide the tile before it, a warning says so;
* a `*` entry combines that dim with the next more-minor one (the documented semantics; XLA's ArraySize
  does not implement it, so a warning quotes both figures);
* element bits come from `E(n)` when set, else the type's width rounded up to whole bytes (XLA's
  ByteSizeOfPrimitiveType: pred and unpacked s4 take one byte each);
* `L(n)` rounds the element count, `SC` splits size by their largest piece, `M(n)` adds prefix bytes;
* a tuple's bytes are the sum of its leaves (the data). The tuple buffer itself is a separate table of
  4-byte device pointers, which TPU buffer assignment rounds up to 32 bytes (v5p/v6e/v7x) or 512 bytes
  (v4/v5e); `tuple_table_bytes` gives that figure but it is never added to `physical_bytes`;
* token and opaque shapes occupy 0 bytes; the memory space `S(n)` never changes the size.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from itertools import permutations
from typing import Any, Iterable

from hloscan.hlo.ir import ELEMENT_BITS, MEMORY_SPACE_NAMES, UNBOUNDED, Layout, Shape, Tile

# Element types whose shapes take no device memory.
ZERO_SIZE_TYPES = frozenset({"token", "opaque"})


class UnsizedShapeError(ValueError):
    """Raised for shapes whose size cannot be known statically (unbounded `?` dims, unknown types)."""


@dataclass(frozen=True, slots=True)
class DimPadding:
    """One physical dimension rounded up by the first tile.

    `dim` is the logical dimension index, or None for a dimension the tile adds to a lower-rank array
    (a scalar padded as [1], or the implicit 2nd-minor dim of a rank-1 array under a 2-D tile).
    `combined` lists all logical dims folded into this one by `*` tile entries.
    """

    dim: int | None
    size: int
    padded_size: int
    tile: int
    position: int  # 0 = most minor physical dimension
    combined: tuple[int, ...] = ()

    @property
    def factor(self) -> float:
        return self.padded_size / self.size if self.size else math.inf

    def describe(self) -> str:
        what = "implicit dim" if self.dim is None else f"dim {self.dim}"
        if len(self.combined) > 1:
            what = "dims " + "*".join(map(str, self.combined))
        where = "minor-most" if self.position == 0 else f"{_ordinal(self.position + 1)}-minor"
        return f"{what} ({where}) of size {self.size} padded to {self.padded_size} (tile {self.tile})"

    def to_json(self) -> dict[str, Any]:
        out = {"dim": self.dim, "size": self.size, "padded_size": self.padded_size, "tile": self.tile,
               "position": self.position}
        if len(self.combined) > 1:
            out["combined"] = list(self.combined)
        return out


@dataclass(frozen=True, slots=True)
class SizeReport:
    """Everything `hloscan size` prints for one shape."""

    shape_text: str
    bytes: int
    unpadded_bytes: int
    padding: tuple[DimPadding, ...]
    memory_space: int
    element_bits: int | None = None
    tiles: str = ""
    warnings: tuple[str, ...] = ()
    leaves: tuple["SizeReport", ...] = ()  # per-leaf reports of a tuple

    @property
    def waste_bytes(self) -> int:
        return self.bytes - self.unpadded_bytes

    @property
    def waste_fraction(self) -> float:
        return self.waste_bytes / self.bytes if self.bytes else 0.0

    @property
    def memory_space_name(self) -> str:
        return memory_space_name(self.memory_space)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "shape": self.shape_text,
            "bytes": self.bytes,
            "unpadded_bytes": self.unpadded_bytes,
            "padding": [p.to_json() for p in self.padding],
            "memory_space": self.memory_space,
            "memory_space_name": self.memory_space_name,
            "waste_bytes": self.waste_bytes,
            "waste_fraction": round(self.waste_fraction, 4),
        }
        if self.element_bits is not None:
            out["element_bits"] = self.element_bits
        if self.tiles:
            out["tiles"] = self.tiles
        if self.warnings:
            out["warnings"] = list(self.warnings)
        if self.leaves:
            out["leaves"] = [leaf.to_json() for leaf in self.leaves]
        return out


def memory_space_name(space: int) -> str:
    return MEMORY_SPACE_NAMES.get(space, f"memory space {space}")


def _ordinal(n: int) -> str:
    return {1: "1st", 2: "2nd", 3: "3rd"}.get(n, f"{n}th")


# ---------------------------------------------------------------------------------------------------
# Element width


def natural_bits(element_type: str) -> int:
    """The type's width in bits (s4 -> 4, pred -> 8); raises for unknown types."""
    try:
        return ELEMENT_BITS[element_type]
    except KeyError:
        raise UnsizedShapeError(f"unknown element type {element_type!r}") from None


def element_bits(shape: Shape) -> int:
    """Bits one element occupies in memory: `E(n)` when set, else the width rounded up to bytes."""
    layout = shape.layout
    if layout is not None and layout.element_size_bits:
        return layout.element_size_bits
    bits = natural_bits(shape.element_type)
    # Without E(n) XLA stores sub-byte types one per byte (ByteSizeOfPrimitiveType).
    return max(8, 8 * math.ceil(bits / 8)) if bits else 0


# ---------------------------------------------------------------------------------------------------
# Physical dimension order and tiling


def minor_to_major(shape: Shape) -> tuple[int, ...]:
    """The layout's minor_to_major, or XLA's default (row-major: last dim most minor) when absent."""
    layout = shape.layout
    rank = len(shape.dims)
    if layout is None or (not layout.minor_to_major and rank):
        return tuple(range(rank - 1, -1, -1))
    if sorted(layout.minor_to_major) != list(range(rank)):
        raise UnsizedShapeError(f"minor_to_major {layout.minor_to_major} is not a permutation of rank {rank}")
    return layout.minor_to_major


def _dim_size(shape: Shape, dim: int) -> int:
    size = shape.dims[dim]
    if size == UNBOUNDED or size < 0:
        raise UnsizedShapeError(f"dimension {dim} of {shape.to_text()} is unbounded")
    layout = shape.layout
    for split in layout.split_configs if layout is not None else ():
        if split.dimension == dim:
            # XLA sizes a split dimension by its largest piece (LayoutUtil::MaxSplitSize).
            cuts = [0, *split.split_indices, size]
            return max(b - a for a, b in zip(cuts, cuts[1:]))
    return size


@dataclass(frozen=True, slots=True)
class _PhysDim:
    dims: tuple[int, ...]  # logical dims folded into this physical dim; () for an implicit size-1 dim
    size: int


def _physical_dims(shape: Shape) -> list[_PhysDim]:
    """Dims in physical order, major -> minor."""
    return [_PhysDim((d,), _dim_size(shape, d)) for d in reversed(minor_to_major(shape))]


@dataclass(frozen=True, slots=True)
class _Tiled:
    elements: int
    padding: tuple[DimPadding, ...]
    warnings: tuple[str, ...]


def _apply_first_tile(phys: list[_PhysDim], tile: Tile) -> _Tiled:
    k = len(tile.dims)
    phys = [_PhysDim((), 1)] * max(0, k - len(phys)) + list(phys)
    head, tail = phys[: len(phys) - k], phys[len(phys) - k:]
    tail, entries, warnings = _combine_star_dims(tail, tile.dims)
    elements = math.prod(p.size for p in head)
    pads = []
    for position, (p, t) in enumerate(zip(reversed(tail), reversed(entries))):
        padded = -(-p.size // t) * t
        elements *= padded
        if padded != p.size:
            dim = p.dims[-1] if p.dims else None
            pads.append(DimPadding(dim, p.size, padded, t, position, p.dims))
    return _Tiled(elements, tuple(pads), warnings)


def _combine_star_dims(
    tail: list[_PhysDim], entries: tuple[int | None, ...]
) -> tuple[list[_PhysDim], list[int], tuple[str, ...]]:
    """Fold every `*` tile entry's dim into the next more-minor dim (docs/tiled_layout.md)."""
    if None not in entries:
        return tail, list(entries), ()
    out_dims: list[_PhysDim] = []
    out_entries: list[int] = []
    carry: _PhysDim | None = None
    for p, t in zip(tail, entries):
        if carry is not None:
            p = _PhysDim(carry.dims + p.dims, carry.size * p.size)
            carry = None
        if t is None:
            carry = p
            continue
        out_dims.append(p)
        out_entries.append(t)
    if carry is not None:  # a trailing `*` has no more-minor dim to merge into: leave it untiled
        out_dims.append(carry)
        out_entries.append(1)
    # ShapeUtil::ArraySize rounds each dim separately and leaves `*` dims unrounded.
    naive = math.prod(p.size if t is None else -(-p.size // t) * t for p, t in zip(tail, entries))
    warning = (
        "tile has `*` (combined) dims: sized by the documented semantics; XLA's ShapeUtil::ArraySize "
        f"ignores `*` and would count {naive} elements in the tiled dims instead of "
        f"{math.prod(-(-p.size // t) * t for p, t in zip(out_dims, out_entries))}"
    )
    return out_dims, out_entries, (warning,)


def _subtile_warnings(tiles: tuple[Tile, ...]) -> tuple[str, ...]:
    """Later tiles are assumed to add no padding; say so when one does not divide its predecessor."""
    out = []
    for prev, tile in zip(tiles, tiles[1:]):
        prev_dims = [d for d in prev.dims if d is not None]
        for p, t in zip(reversed(prev_dims), reversed(tile.dims)):
            if t is not None and t > 0 and p % t:
                out.append(f"sub-tile {tile.to_text()} does not divide tile {prev.to_text()}; "
                           "XLA assumes sub-tiles add no padding, so the size may be understated")
                break
    return tuple(out)


def _tiled(shape: Shape) -> _Tiled:
    layout = shape.layout
    phys = _physical_dims(shape)
    if layout is None or not layout.tiles:
        return _Tiled(math.prod(p.size for p in phys), (), ())
    tiled = _apply_first_tile(phys, layout.tiles[0])
    extra = _subtile_warnings(layout.tiles)
    return _Tiled(tiled.elements, tiled.padding, tiled.warnings + extra) if extra else tiled


def _array_bytes(shape: Shape, elements: int) -> int:
    layout = shape.layout or Layout(())
    if layout.tail_padding_alignment and layout.tail_padding_alignment > 1:
        elements = -(-elements // layout.tail_padding_alignment) * layout.tail_padding_alignment
    data = -(-elements * element_bits(shape) // 8)
    return data + layout.dynamic_shape_metadata_prefix_bytes


# ---------------------------------------------------------------------------------------------------
# Public sizing API


def _array_of(shape: Shape) -> Shape:
    """A buffer shape `b(...)` sizes as its one array."""
    return shape.tuple_shapes[0] if shape.element_type == "buffer" and shape.tuple_shapes else shape


def physical_bytes(shape: Shape) -> int:
    """Bytes the shape occupies in device memory under its layout (tuples: sum of leaves)."""
    shape = _array_of(shape)
    if shape.is_tuple:
        return sum(physical_bytes(s) for s in shape.tuple_shapes)
    if shape.element_type in ZERO_SIZE_TYPES:
        return 0
    return _array_bytes(shape, _tiled(shape).elements)


def unpadded_bytes(shape: Shape) -> int:
    """Bytes of the logical elements alone, at the same element width as `physical_bytes`."""
    shape = _array_of(shape)
    if shape.is_tuple:
        return sum(unpadded_bytes(s) for s in shape.tuple_shapes)
    if shape.element_type in ZERO_SIZE_TYPES:
        return 0
    elements = math.prod(_dim_size(shape, d) for d in range(len(shape.dims)))
    return -(-elements * element_bits(shape) // 8)


def padding(shape: Shape) -> list[DimPadding]:
    """The physical dimensions the first tile rounds up (empty for untiled and tuple shapes)."""
    shape = _array_of(shape)
    if not shape.is_array:
        return []
    return list(_tiled(shape).padding)


def tiles_text(shape: Shape) -> str:
    layout = _array_of(shape).layout
    if layout is None or not layout.tiles:
        return ""
    text = "T" + "".join(t.to_text() for t in layout.tiles)
    return text + (f"E({layout.element_size_bits})" if layout.element_size_bits else "")


def tuple_table_bytes(shape: Shape, granule: int = 32) -> int:
    """Size of a tuple's own pointer-table buffer on TPU: 4 bytes per element, rounded up to `granule`.

    The granule depends on the TPU generation (hloscan.analyses.tpu: 512 bytes on v4/v5e, 32 on
    v5p/v6e/v7x, measured in the oracle's buffer assignments: 2 or 3 elements -> 32 bytes, 23 -> 96).
    """
    if not shape.is_tuple:
        return 0
    raw = 4 * len(shape.tuple_shapes)
    return -(-raw // granule) * granule if raw else 0


def size_report(shape: Shape, shape_text: str | None = None) -> SizeReport:
    """A SizeReport for any shape; tuples carry one report per leaf. Never raises for unsized shapes."""
    text = shape_text if shape_text is not None else shape.to_text()
    shape = _array_of(shape)
    if shape.is_tuple:
        leaves = tuple(size_report(s) for s in shape.tuple_shapes)
        return SizeReport(text, sum(x.bytes for x in leaves), sum(x.unpadded_bytes for x in leaves), (),
                          shape.memory_space, None, "", sum((x.warnings for x in leaves), ()), leaves)
    if shape.element_type in ZERO_SIZE_TYPES:
        return SizeReport(text, 0, 0, (), shape.memory_space, 0)
    try:
        tiled = _tiled(shape)
        return SizeReport(text, _array_bytes(shape, tiled.elements), unpadded_bytes(shape), tiled.padding,
                          shape.memory_space, element_bits(shape), tiles_text(shape), tiled.warnings)
    except UnsizedShapeError as exc:
        return SizeReport(text, 0, 0, (), shape.memory_space, None, tiles_text(shape), (str(exc),))


# ---------------------------------------------------------------------------------------------------
# Inverse: which common TPU tilings give a reported size


@dataclass(frozen=True, slots=True)
class TilingCandidate:
    """A layout (minor_to_major + tiles) of the given dims whose physical size equals the target."""

    minor_to_major: tuple[int, ...]
    tiles: tuple[Tile, ...]
    element_size_bits: int
    bytes: int
    is_default: bool = False  # the tiling XLA:TPU picks by default for this dimension order

    @property
    def layout(self) -> Layout:
        return Layout(self.minor_to_major, tiles=self.tiles, element_size_bits=self.element_size_bits)

    def layout_text(self) -> str:
        return self.layout.to_text()

    def to_json(self) -> dict[str, Any]:
        return {"layout": self.layout_text(), "minor_to_major": list(self.minor_to_major), "bytes": self.bytes,
                "is_default": self.is_default}


# Default TPU tilings per element width, read off LAYOUTS.tsv (identical on v4..v7x): the 2nd-minor
# tile entry follows the physical 2nd-minor dim; (16,128)(2,1) is the large-2nd-minor x16 variant.
_SECOND_MINOR = {32: (8, 4, 2, 1), 64: (8, 4, 2, 1), 16: (8, 4, 2, 16), 8: (8, 4, 32), 4: (8, 64)}
_PACKING = {16: (2, 1), 8: (4, 1), 4: (8, 1)}
_RANK1_BASE = {16: 256, 8: 512, 4: 1024}  # 32/64-bit and wider: 128


def _width(element_type: str) -> int:
    bits = natural_bits(element_type)
    return 64 if bits > 32 else 32 if bits > 16 else 16 if bits > 8 else 8 if bits > 4 else 4


def _tiles_2d(second: int, width: int) -> tuple[Tile, ...]:
    pack = _PACKING.get(width)
    return (Tile((second, 128)), Tile(pack)) if pack else (Tile((second, 128)),)


def _tiles_1d(n: int, width: int, rank: int) -> tuple[Tile, ...]:
    pack = _PACKING.get(width)
    if rank == 0 or not pack:
        return (Tile((n,)),)
    return (Tile((n,)), Tile((128,)), Tile(pack))


def default_tiling(element_type: str, physical_dims: tuple[int, ...]) -> tuple[tuple[Tile, ...], int]:
    """XLA:TPU's usual (tiles, E bits) for an array with these dims in physical major->minor order.

    Given the dimension order, this reproduces the tiles of all 1840 default layouts in LAYOUTS.tsv.
    The 8-/4-bit "large" tiles ((32,128)(4,1), (64,128)(8,1)) appear there at 4M elements and not at
    819200, so the 1M-element threshold used here is a guess; rank-1 tiles beyond 1024 are untested.
    """
    width = _width(element_type)
    e_bits = 4 if width == 4 else 0
    rank = len(physical_dims)
    if rank <= 1:
        base = _RANK1_BASE.get(width, 128)
        n = base
        while rank and n < min(physical_dims[0], 1024):
            n *= 2
        return _tiles_1d(n, width, rank), e_bits
    second = physical_dims[-2]
    large = math.prod(physical_dims) >= 1 << 20
    if width == 4:
        return _tiles_2d(64 if large else 8, width), e_bits
    if width == 8:
        return _tiles_2d(32 if large else 4 if second <= 4 else 8, width), e_bits
    floor = 2 if width == 16 else 1
    tile = next(t for t in (floor, 2, 4, 8) if t >= min(second, 8) and t >= floor)
    return _tiles_2d(tile, width), e_bits


def default_tilings(element_type: str, rank: int) -> list[tuple[tuple[Tile, ...], int]]:
    """(tiles, E bits) pairs XLA:TPU commonly picks for this type and rank, plus the untiled layout."""
    width = _width(element_type)
    e_bits = 4 if width == 4 else 0
    if rank >= 2:
        out = [(_tiles_2d(s, width), e_bits) for s in _SECOND_MINOR[width]]
    else:
        base = _RANK1_BASE.get(width, 128)
        out = [(_tiles_1d(base << k, width, rank), e_bits) for k in range(4) if base << k <= 1024]
    return out + [((), e_bits)]


def _orders(rank: int, minor_to_majors: Iterable[tuple[int, ...]] | None) -> list[tuple[int, ...]]:
    if minor_to_majors is not None:
        return list(dict.fromkeys(tuple(m) for m in minor_to_majors))
    default = tuple(range(rank - 1, -1, -1))
    if rank > 5:
        return [default]
    return [default] + [tuple(p) for p in permutations(range(rank)) if tuple(p) != default]


def tilings_for_size(
    element_type: str,
    dims: tuple[int, ...],
    target_bytes: int,
    minor_to_majors: Iterable[tuple[int, ...]] | None = None,
) -> list[TilingCandidate]:
    """Common TPU layouts of `element_type[dims]` whose physical size is exactly `target_bytes`.

    `minor_to_majors` restricts the dimension orders tried (default: row-major first, then every
    permutation for rank <= 5). Within an order, the tiling XLA would pick by default comes first.
    """
    rank = len(dims)
    out = []
    for m2m in _orders(rank, minor_to_majors):
        physical = tuple(dims[d] for d in reversed(m2m))
        options = default_tilings(element_type, rank)
        preferred = default_tiling(element_type, physical)
        options.sort(key=lambda option: option != preferred)
        for tiles, e_bits in options:
            shape = Shape(element_type, tuple(dims), (False,) * rank,
                          Layout(tuple(m2m), tiles=tiles, element_size_bits=e_bits))
            try:
                size = physical_bytes(shape)
            except UnsizedShapeError:
                continue
            if size == target_bytes:
                out.append(TilingCandidate(tuple(m2m), tiles, e_bits, size, (tiles, e_bits) == preferred))
    return out


def with_layout(shape: Shape, layout: Layout) -> Shape:
    """The same array with another layout (helper for what-if sizing)."""
    return Shape(shape.element_type, shape.dims, shape.dynamic, layout, shape.tuple_shapes)


__all__ = [
    "DimPadding", "SizeReport", "TilingCandidate", "UnsizedShapeError", "default_tiling", "default_tilings",
    "element_bits", "memory_space_name", "minor_to_major", "natural_bits", "padding", "physical_bytes", "size_report",
    "tiles_text", "tilings_for_size", "tuple_table_bytes", "unpadded_bytes", "with_layout",
]
