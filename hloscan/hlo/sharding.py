"""HLO shardings (`sharding={...}`, XLA's HloSharding::Print) read far enough to size one device's shard.

Before XLA's SPMD partitioner runs, a multi-device module keeps global shapes and says how each array is
split with `sharding=`: `{replicated}`, `{maximal device=N}`, `{manual}`, a tile assignment
`{devices=[a,b,...]...}` (iota `<=[N]` or an explicit device list; `last_tile_dim_replicate` or
`last_tile_dims={...}` for trailing replication / manual groups), named (Shardy-style) meshes
`{mesh['x'=2,'y'=2], [{'x'}, {}]}`, and tuples of these. What one device holds of an array is its dims
divided by the tiles of each dimension (rounded up, as the partitioner pads).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from hloscan.hlo.values import hlo_int

# Custom calls that only annotate how a value is split (with_sharding_constraint, shard_map's entry and exit,
# Shardy's result shardings): the SPMD partitioner removes them, so the value flows through them unchanged.
# MANUAL_REGION_BOUNDS only change the view between a global array and one device's part of it (a shard_map's
# entry and exit): the device's buffer is the same memory on both sides.
MANUAL_REGION_BOUNDS = frozenset({
    "SPMDFullToShardShape", "SPMDShardToFullShape", "xla.sdy.GlobalToLocalShape", "xla.sdy.LocalToGlobalShape",
})
SHARDING_ANNOTATIONS = MANUAL_REGION_BOUNDS | {"Sharding", "xla.sdy.FuncResultSharding"}

_DEVICES = re.compile(r"devices=\[([\d,\s]*)\]")
_LAST_DIMS = re.compile(r"last_tile_dims=\{([^}]*)\}")
_MESH = re.compile(r"mesh\[([^\]]*)\]")
_AXIS = re.compile(r"'((?:[^'\\]|\\.)*)'\s*=\s*(\d+)")


@dataclass(frozen=True, slots=True)
class Sharding:
    """One array's sharding: `tiles[i]` shards along data dimension i (None: not split at all)."""

    kind: str  # "tiled", "replicated", "maximal", "manual", "unknown"
    tiles: tuple[int, ...] | None = None
    devices: int = 1  # devices in the tile assignment (replication groups included)

    @property
    def shards(self) -> int:
        """Into how many distinct pieces the array is cut."""
        return math.prod(self.tiles) if self.tiles else 1

    def local_dims(self, dims: tuple[int, ...]) -> tuple[int, ...]:
        """The dims of one device's shard (the partitioner pads uneven splits up)."""
        if not self.tiles or len(self.tiles) != len(dims):
            return tuple(dims)
        return tuple(-(-d // t) for d, t in zip(dims, self.tiles))


REPLICATED = Sharding("replicated")


def num_partitions(module) -> int:
    """How many devices one array is split across: `num_partitions` (SPMD). Replicas each hold whole
    arrays, so `replica_count` does not divide them."""
    try:
        return max(1, int(module.attr("num_partitions") or 1))
    except ValueError:
        return 1


def unpartitioned_devices(module) -> int:
    """Devices a module's global shapes are still to be split over: `num_partitions` of a module the SPMD
    partitioner has not run on (not scheduled); 1 otherwise (its shapes are already one device's)."""
    return 1 if module.attr("is_scheduled") == "true" else num_partitions(module)


def parse_sharding(text: str | None) -> list[Sharding] | None:
    """The sharding of each leaf of an instruction's shape (one entry for an array), or None when absent."""
    if text is None:
        return None
    body = text.strip()
    if body.startswith("{") and body.endswith("}"):
        body = body[1:-1].strip()
    try:
        if body.startswith("{") or body == "":
            return [_single(part) for part in _split_tuple(body)]
        return [_single(body)]
    except ValueError:
        # A tile count no int64 holds: the strict path rejects the text (validate._check_sharding); on the
        # fast path, which keeps attributes as text, the analyses read it as a sharding they do not know.
        return [Sharding("unknown")]


def _split_tuple(body: str) -> list[str]:
    """`{a}, /*index=5*/{b}` -> ["a", "b"] at brace depth one."""
    parts, depth, start = [], 0, None
    for i, ch in enumerate(body):
        if ch == "{":
            if depth == 0:
                start = i + 1
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth == 0 and start is not None:
                parts.append(body[start:i])
                start = None
    return parts


def _ints(text: str) -> list[int]:
    return [hlo_int(x) for x in text.replace(" ", "").split(",") if x]


def _single(body: str) -> Sharding:
    head = body.strip()
    if head.startswith(("replicated", "unreduced")):
        return REPLICATED
    if head.startswith("manual"):
        return Sharding("manual")
    if head.startswith("maximal") or head.startswith("maximal_mesh"):
        return Sharding("maximal")
    if head.startswith("unknown"):
        return Sharding("unknown")
    if head.startswith("mesh"):
        return _named(head)
    m = _DEVICES.search(head)
    if not m:
        return Sharding("unknown")
    dims = _ints(m.group(1))
    trailing = 0
    if "last_tile_dim_replicate" in head:
        trailing = 1
    last = _LAST_DIMS.search(head)
    if last:
        trailing = len([x for x in last.group(1).split(",") if x.strip()])
    data = dims[: len(dims) - trailing] if trailing else dims
    return Sharding("tiled", tuple(data), math.prod(dims))


def _named(head: str) -> Sharding:
    """`mesh['x'=2,'y'=4], [{'x'}, {'y':(2)2, ?}], ...`: each dimension split by the product of its axes."""
    mesh = _MESH.search(head)
    sizes = {name: int(size) for name, size in _AXIS.findall(mesh.group(1))} if mesh else {}
    rest = head[mesh.end():] if mesh else head
    start = rest.find("[")
    if start < 0:
        return Sharding("replicated", None, math.prod(sizes.values()) if sizes else 1)
    depth, end = 0, start
    for i in range(start, len(rest)):
        depth += rest[i] == "["
        depth -= rest[i] == "]"
        if depth == 0:
            end = i
            break
    tiles = []
    for dim in _split_tuple(rest[start + 1:end]):
        n = 1
        for axis in re.finditer(r"'((?:[^'\\]|\\.)*)'(?::\((\d+)\)(\d+))?", dim):
            n *= int(axis.group(3)) if axis.group(3) else sizes.get(axis.group(1), 1)
        tiles.append(n)
    return Sharding("tiled", tuple(tiles), math.prod(sizes.values()) if sizes else 1)


_IOTA = re.compile(r"devices=\[([\d,\s]*)\]\s*<=\s*\[([\d,\s]*)\](?:\s*T\(([\d,\s]*)\))?")
_LISTED = re.compile(r"devices=\[([\d,\s]*)\]\s*([\d][\d,\s]*)")


def device_coordinates(text: str | None) -> list[dict[int, int]] | None:
    """For one array's tiled HLO sharding (`devices=[2,1,4]<=[8] last_tile_dim_replicate`,
    `devices=[4,2]<=[2,4]T(1,0)`, `devices=[2,2]0,2,1,3`): per data dim, the shard index each device holds.
    Two dims split over the same mesh axis have dependent indices (the partitioner cannot split both)."""
    if not text:
        return None
    iota, listed = _IOTA.search(text), _LISTED.search(text)
    if iota:
        dims = _ints(iota.group(1))
        order = _iota_order(_ints(iota.group(2)), _ints(iota.group(3)) if iota.group(3) else None)
    elif listed:
        dims, order = _ints(listed.group(1)), _ints(listed.group(2))
    else:
        return None
    if not dims or len(order) != math.prod(dims):
        return None
    sharding = _single(text.strip().strip("{}"))
    data = len(sharding.tiles or ())
    coords: list[dict[int, int]] = [{} for _ in range(data)]
    for flat, device in enumerate(order):
        index = _unravel(flat, dims)
        for d in range(data):
            coords[d][device] = index[d]
    return coords


def _iota_order(reshape: list[int], perm: list[int] | None) -> list[int]:
    """The device ids of `<=[reshape]T(perm)`, in row-major order of the transposed array."""
    n = math.prod(reshape)
    if not perm:
        return list(range(n))
    strides = [math.prod(reshape[k + 1:]) for k in range(len(reshape))]
    shape = [reshape[p] for p in perm]
    return [sum(i * strides[p] for i, p in zip(_unravel(flat, shape), perm)) for flat in range(n)]


def _unravel(flat: int, shape: list[int]) -> list[int]:
    """The row-major index of element `flat` of an array of `shape`."""
    index = []
    for size in reversed(shape):
        index.append(flat % size)
        flat //= size
    return index[::-1]


def independent(a: dict[int, int], b: dict[int, int]) -> bool:
    """Whether two dims' shard indices vary independently over the devices (different mesh axes)."""
    pairs = {(a[d], b[d]) for d in a if d in b}
    return len(pairs) == len(set(a.values())) * len(set(b.values()))

