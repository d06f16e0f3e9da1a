"""Turns lark parse trees of the HLO grammar into IR objects (shapes here; whole modules in strict.py)."""

from __future__ import annotations

from lark import Token, Tree

from hloscan.hlo.ir import UNBOUNDED, Layout, Shape, SplitConfig, Tile
from hloscan.hlo.values import ShapeError, hlo_int

def shape_from_tree(tree: Tree) -> Shape:
    kind = tree.data
    if kind == "array_shape":
        return _array_shape(tree)
    if kind == "tuple_shape":
        return Shape("tuple", tuple_shapes=tuple(shape_from_tree(c) for c in tree.children if isinstance(c, Tree)))
    if kind == "buffer_shape":
        inner = next(c for c in tree.children if isinstance(c, Tree))
        return Shape("buffer", tuple_shapes=(shape_from_tree(inner),))
    raise ValueError(f"not a shape: {kind}")


def _array_shape(tree: Tree) -> Shape:
    element_type = str(tree.children[0])
    dims: list[int] = []
    dynamic: list[bool] = []
    layout = None
    for child in tree.children[1:]:
        if not isinstance(child, Tree):
            continue
        if child.data == "static_dim":
            dims.append(hlo_int(child.children[0]))
            dynamic.append(False)
        elif child.data == "bounded_dim":
            dims.append(hlo_int(child.children[0]))
            dynamic.append(True)
        elif child.data == "unbounded_dim":
            dims.append(UNBOUNDED)
            dynamic.append(True)
        elif child.data == "layout":
            layout = _layout(child)
    if layout is not None:
        problem = _layout_problem(layout, len(dims))
        if problem:
            raise ShapeError(f"{element_type}[{','.join(map(str, dims))}]: {problem}", tree.meta.line, tree.meta.column)
    return Shape(element_type, tuple(dims), tuple(dynamic), layout)


def _layout_problem(layout: Layout, rank: int) -> str | None:
    """What XLA's layout validation would reject (LayoutUtil::ValidateLayoutForShape), or None."""
    m2m = layout.minor_to_major
    if m2m and len(m2m) != rank:
        # XLA: "Dimensions size is N, but minor to major size is M".
        return f"{rank} dimension(s) but the layout lists {len(m2m)}"
    if m2m and sorted(m2m) != list(range(rank)):
        return f"layout {{{','.join(map(str, m2m))}}} is not a permutation of the dimensions 0..{rank - 1}"
    for tile in layout.tiles:
        if any(d is not None and d <= 0 for d in tile.dims):
            return f"tile {tile.to_text()} has a dimension that is not positive"
    if layout.element_size_bits < 0 or layout.memory_space < 0:
        return "negative element size or memory space"
    return None


def _ints(node: Tree) -> list[int]:
    return [hlo_int(t) for t in node.children if isinstance(t, Token) and t.type == "INT"]


def _layout(tree: Tree) -> Layout:
    minor_to_major = tuple(_ints(tree))
    parts: dict = {}
    tail = next((c for c in tree.children if isinstance(c, Tree) and c.data == "layout_tail"), None)
    for part in tail.children if tail is not None else ():
        _LAYOUT_PARTS[part.data](part, parts)
    return Layout(minor_to_major, **parts)


def _tiles(part: Tree, out: dict) -> None:
    tiles = []
    for tile in part.children:
        if isinstance(tile, Tree):
            dims = tuple(
                None if d.children[0].type == "STAR" else hlo_int(d.children[0]) for d in tile.children if isinstance(d, Tree)
            )
            tiles.append(Tile(dims))
    out["tiles"] = tuple(tiles)


def _split_configs(part: Tree, out: dict) -> None:
    configs = []
    for node in part.children:
        if isinstance(node, Tree):
            ints = _ints(node)
            configs.append(SplitConfig(ints[0], tuple(ints[1:])))
    out["split_configs"] = tuple(configs)


def _first_token(part: Tree, type_: str) -> str:
    return next(str(t) for t in part.children if isinstance(t, Token) and t.type == type_)


_LAYOUT_PARTS = {
    "dim_level_types": lambda p, o: o.__setitem__(
        "dim_level_types", ",".join(str(t) for t in p.children if isinstance(t, Token) and t.type == "DIM_LEVEL")
    ),
    "tiles": _tiles,
    "tail_padding": lambda p, o: o.__setitem__("tail_padding_alignment", _ints(p)[0]),
    "index_type": lambda p, o: o.__setitem__("index_type", _first_token(p, "ELEMENT_TYPE")),
    "pointer_type": lambda p, o: o.__setitem__("pointer_type", _first_token(p, "ELEMENT_TYPE")),
    "element_size": lambda p, o: o.__setitem__("element_size_bits", _ints(p)[0]),
    "memory_space": lambda p, o: o.__setitem__("memory_space", _ints(p)[0]),
    "split_configs": _split_configs,
    "physical_shape": lambda p, o: o.__setitem__(
        "physical_shape", shape_from_tree(next(c for c in p.children if isinstance(c, Tree)))
    ),
    "dynamic_metadata": lambda p, o: o.__setitem__("dynamic_shape_metadata_prefix_bytes", _ints(p)[0]),
}
