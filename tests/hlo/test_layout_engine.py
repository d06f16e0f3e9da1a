"""Layout engine: exact bytes for every LAYOUTS.tsv row, padding attribution, and the inverse search."""

from __future__ import annotations

from hloscan.analyses.tpu import generation

import pytest

from _shape_reader import LAYOUT_DIR, parse_shape, require
from corpus import tsv_rows
from hloscan.hlo.ir import Layout, Shape, Tile
from hloscan.hlo.layout import (
    UnsizedShapeError,
    default_tiling,
    minor_to_major,
    padding,
    physical_bytes,
    size_report,
    tilings_for_size,
    tuple_table_bytes,
    unpadded_bytes,
)


def _rows() -> list[dict[str, str]]:
    return tsv_rows(require(LAYOUT_DIR / "LAYOUTS.tsv"))


def test_every_layouts_tsv_row_exact():
    rows = _rows()
    assert len(rows) == 1995
    wrong = [(r["layout"], int(r["bytes"]), physical_bytes(parse_shape(r["layout"]))) for r in rows
             if physical_bytes(parse_shape(r["layout"])) != int(r["bytes"])]
    assert wrong == [], f"{len(wrong)} of {len(rows)} rows differ, e.g. {wrong[:5]}"


def test_default_tiling_predicts_every_default_row():
    """Given the dimension order, the predicted default tile is the one the compiler chose."""
    rows = [r for r in _rows() if r["source"].startswith("buffer-assignment")]
    assert len(rows) == 1840
    wrong = []
    for r in rows:
        shape = parse_shape(r["layout"])
        physical = tuple(shape.dims[d] for d in reversed(minor_to_major(shape)))
        if default_tiling(shape.element_type, physical) != (shape.layout.tiles, shape.layout.element_size_bits):
            wrong.append(r["layout"])
    assert wrong == []


def test_inverse_finds_the_real_layout_first():
    for r in _rows():
        shape = parse_shape(r["layout"])
        found = tilings_for_size(shape.element_type, shape.dims, int(r["bytes"]), [minor_to_major(shape)])
        assert any(c.tiles == shape.layout.tiles for c in found), r["layout"]
        if r["source"].startswith("buffer-assignment"):
            assert found[0].tiles == shape.layout.tiles and found[0].is_default, r["layout"]


def test_seed_padding_dim2_40_to_128():
    shape = parse_shape("bf16[16,1280,40]{2,1,0:T(8,128)(2,1)}")
    assert physical_bytes(shape) == 5242880
    assert unpadded_bytes(shape) == 1638400
    (pad,) = padding(shape)
    assert (pad.dim, pad.size, pad.padded_size, pad.tile, pad.position) == (2, 40, 128, 128, 0)
    report = size_report(shape).to_json()
    assert report["shape"] == "bf16[16,1280,40]{2,1,0:T(8,128)(2,1)}"
    assert report["bytes"] == 5242880 and report["unpadded_bytes"] == 1638400
    assert report["padding"] == [{"dim": 2, "size": 40, "padded_size": 128, "tile": 128, "position": 0}]
    assert round(report["waste_fraction"], 2) == 0.69


def test_other_order_has_no_padding():
    shape = parse_shape("bf16[16,1280,40]{1,2,0:T(8,128)(2,1)}")
    assert physical_bytes(shape) == 1638400
    assert padding(shape) == []


def test_second_minor_padding_is_named():
    pads = padding(parse_shape("f32[14,40,100]{0,2,1:T(8,128)}"))
    assert [(p.dim, p.size, p.padded_size, p.position) for p in pads] == [(0, 14, 128, 0), (2, 100, 104, 1)]
    assert physical_bytes(parse_shape("f32[14,40,100]{0,2,1:T(8,128)}")) == 2129920


@pytest.mark.parametrize("text,expected", [
    ("f32[]{:T(128)}", 512),  # rank 0 padded as [1] to the 1-entry tile
    ("s32[6]{0:T(128)}", 512),
    ("f32[3,5]{1,0:T(8,128)}", 4096),
    ("s8[1000,300]{1,0:T(8,128)(4,1)}", 384000),
    ("s8[1000,300]{1,0:T(32,128)(4,1)}", 393216),
    ("pred[100,100]{1,0:T(8,128)(4,1)}", 13312),  # pred is one byte
    ("s4[1,16384,1,256]{3,1,0,2:T(8,128)(8,1)E(4)}", 2097152),
    ("bf16[1000]{0:T(1024)(128)(2,1)}", 2048),  # only the first tile counts
    ("bf16[1,1,40,100,128]{4,1,3,2,0:T(2,128)(2,1)}", 2048000),
    ("f32[7]{0:T(2,128)}", 1024),  # rank 1 under a 2-D tile: implicit 2nd-minor dim 1 -> 2
    ("f32[8,8]{1,0}", 256),  # untiled: dense
    ("f32[8,8]", 256),  # no layout printed: dense row-major
    ("s4[8,128]{1,0:T(8,128)}", 1024),  # s4 without E(4): one byte per element (XLA's type table)
    ("s4[8,128]{1,0:T(8,128)(8,1)E(4)}", 512),
    ("f32[3]{0:T(128)L(1024)}", 4096),  # L(n) rounds the element count
    ("f32[10]{0:M(8)}", 48),  # M(n) metadata prefix bytes
    ("f32[8,128]{1,0:T(8,128)S(5)}", 4096),  # memory space never changes the size
    ("c64[2,2]{1,0:T(2,128)}", 2048),
    ("c128[3]{0}", 48),
])
def test_bytes(text, expected):
    assert physical_bytes(parse_shape(text)) == expected


def test_memory_space_reported():
    report = size_report(parse_shape("f32[8,128]{1,0:T(8,128)S(5)}"))
    assert report.memory_space == 5 and report.to_json()["memory_space_name"] == "host"


def test_star_combines_dims_and_warns():
    shape = Shape("f32", (2, 7, 8, 11, 10), (False,) * 5,
                  Layout((4, 3, 2, 1, 0), tiles=(Tile((None, None, 2, None, 3)),)))
    report = size_report(shape)
    assert report.bytes == 49728  # [112,110] tiled (2,3) -> 112 x 111 x 4
    assert report.warnings and "ArraySize" in report.warnings[0]


def test_split_config_uses_largest_piece():
    shape = parse_shape("f32[100,128]{1,0:T(8,128)SC(0:30)}")
    assert physical_bytes(shape) == 72 * 128 * 4  # pieces 30 and 70 -> 70 padded to 72


def test_subtile_that_pads_is_flagged():
    report = size_report(parse_shape("f32[2,128]{1,0:T(1,128)(2,1)}"))
    assert report.bytes == 1024 and any("sub-tile" in w for w in report.warnings)
    assert size_report(parse_shape("bf16[8,128]{1,0:T(8,128)(2,1)}")).warnings == ()


def test_tuple_token_and_buffer():
    tup = parse_shape("(f32[8]{0:T(128)}, (bf16[16,1280,40]{2,1,0:T(8,128)(2,1)}, s32[]{:T(128)}), token[])")
    assert physical_bytes(tup) == 512 + 5242880 + 512
    assert unpadded_bytes(tup) == 32 + 1638400 + 4
    report = size_report(tup)
    assert [leaf.bytes for leaf in report.leaves] == [512, 5242880 + 512, 0]
    assert padding(tup) == []
    assert physical_bytes(parse_shape("token[]")) == 0
    assert tuple_table_bytes(tup) == 32 and tuple_table_bytes(tup, generation("v4").tuple_table_granule) == 512


def test_unbounded_dims():
    shape = Shape("f32", (-1, 4), (False, False), Layout((1, 0)))
    with pytest.raises(UnsizedShapeError):
        physical_bytes(shape)
    assert size_report(shape).warnings  # reports never raise
    assert physical_bytes(parse_shape("f32[<=10,4]{1,0}")) == 160  # bounded dynamic: the bound


def test_inverse_for_untiled_print():
    found = tilings_for_size("f32", (5, 4, 3), 10240, [(2, 1, 0)])
    assert found[0].layout_text() == "{2,1,0:T(4,128)}" and found[0].is_default
    assert "{0,1,2:T(4,128)}" in [c.layout_text() for c in tilings_for_size("f32", (5, 4, 3), 6144)]
