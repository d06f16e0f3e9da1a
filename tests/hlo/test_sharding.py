"""HLO shardings read far enough to size one device's shard (hloscan.hlo.sharding)."""

from __future__ import annotations

import pytest

from hloscan.hlo.sharding import parse_sharding


@pytest.mark.parametrize("text, tiles, local", [
    ("{devices=[4,1]<=[4]}", (4, 1), (2, 8)),
    ("{devices=[2,2]0,1,2,3}", (2, 2), (4, 4)),
    ("{devices=[2,1,2]<=[4] last_tile_dim_replicate}", (2, 1), (4, 8)),
    ("{devices=[1,2,2]<=[2,2]T(1,0) last_tile_dims={replicated}}", (1, 2), (8, 4)),
    ("{mesh['x'=2,'y'=4], [{'x'}, {'y':(2)2}]}", (2, 2), (4, 4)),
    ("{mesh['data'=4], [{'data'}, {}]}", (4, 1), (2, 8)),
])
def test_tiled_shardings_give_each_dimension_its_split(text: str, tiles: tuple, local: tuple) -> None:
    (s,) = parse_sharding(text)
    assert s.kind == "tiled" and s.tiles == tiles
    assert s.local_dims((8, 8)) == local


def test_uneven_splits_round_up_as_the_partitioner_pads() -> None:
    (s,) = parse_sharding("{devices=[4,1]<=[4]}")
    assert s.local_dims((10, 3)) == (3, 3)


@pytest.mark.parametrize("text, kind", [("{replicated}", "replicated"), ("{maximal device=1}", "maximal"),
                                        ("{manual}", "manual"), ("{unknown}", "unknown")])
def test_whole_array_shardings(text: str, kind: str) -> None:
    (s,) = parse_sharding(text)
    assert s.kind == kind and s.shards == 1 and s.local_dims((8, 8)) == (8, 8)


def test_tuple_shardings_have_one_entry_per_leaf() -> None:
    leaves = parse_sharding("{{devices=[1,4]<=[4]}, {replicated}, /*index=2*/{maximal device=0}}")
    assert [s.kind for s in leaves] == ["tiled", "replicated", "maximal"]
    assert leaves[0].shards == 4


def test_no_sharding_is_none() -> None:
    assert parse_sharding(None) is None


def test_device_coordinates_tell_which_dims_share_a_mesh_axis():
    from hloscan.hlo.sharding import device_coordinates, independent
    table = device_coordinates("{devices=[4,2]<=[2,4]T(1,0)}")  # P(model, data) on a (2, 4) mesh
    tokens = device_coordinates("{devices=[2,1,4]<=[8] last_tile_dim_replicate}")  # P(data)
    assert len(table) == 2 and len(tokens) == 2  # data dims only, not the replication dim
    assert table[1] == {d: d // 4 for d in range(8)} and tokens[0] == {d: d // 4 for d in range(8)}
    assert not independent(tokens[0], table[1]) and independent(tokens[0], table[0])
    listed = device_coordinates("{devices=[2,2]0,2,1,3}")
    assert listed[0] == {0: 0, 2: 0, 1: 1, 3: 1} and independent(listed[0], listed[1])
    assert device_coordinates("{replicated}") is None and device_coordinates(None) is None
