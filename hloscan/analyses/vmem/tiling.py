"""How Pallas blocks and XLA:TPU arrays are padded: lanes, sublane tiles and the bytes they take.

One home for the sizing rules the VMEM estimate (estimate.py), the residency prediction (residency.py) and the
compiler-scratch allowances (compiler_scratch.py, scores_scratch.py) share.
"""

from __future__ import annotations

import math
from typing import Sequence

from hloscan.hlo.ir import ELEMENT_BITS

LANES = 128
# One vreg: (8, 128) 32-bit lanes, the unit register allocation spills in. The vector register file: 64 of them;
# larger values cannot stay in registers.
VREG_BYTES = 8 * LANES * 4
VREG_FILE_BYTES = 64 * VREG_BYTES


def dtype_bits(dtype: str) -> int:
    """Storage bits of an HLO element type; sub-byte types are packed (s4 -> 4)."""
    return ELEMENT_BITS.get(dtype, 32) or 32


def lane_packing(bits: int) -> int:
    """How many values of `bits` share one 32-bit lane (1 for 32-bit, 2 for bf16, 4 for int8)."""
    return max(1, 32 // max(bits, 1))


def vmem_sublane_tile(bits: int, rows: int) -> int:
    """Second-minor tile Mosaic gives a VMEM block (jax infer_tiling / Mosaic getTilingFactor).

    Tall blocks use the "large" tile 8 × packing (8/16/32/64 rows for 32/16/8/4-bit types) when their
    rows are a whole number of such tiles, else the normal 8-row tile (Mosaic's getTilingFactor: a
    bf16[66, 256] block of a 3x3 stencil's padded image took 72 rows in the compiler's allocation list, not
    80); short blocks start at one packed row group and double until they cover min(rows, 8).
    """
    packing = lane_packing(bits)
    large = 8 * packing
    if rows >= large and rows % large == 0:
        return large
    if rows >= 8:
        return 8
    tile = packing
    while tile < min(rows, 8):
        tile *= 2
    return tile


def hbm_sublane_tile(bits: int, rows: int) -> int:
    """Second-minor tile of XLA:TPU's default HBM layout, which Mosaic's E2002 check uses.

    8/4-bit arrays take the large tile (32/64) when the second-minor dim is a multiple of it (the oracle:
    s8[1600,300] and s8[2048,2048] are T(32,128), s8[1000,40] and s8[40,129] are T(8,128)).
    """
    packing = lane_packing(bits)
    if packing >= 4 and rows % (8 * packing) == 0:
        return 8 * packing
    if rows <= 2 and packing <= 2:
        return 2
    if rows <= 4 and packing <= 4:
        return 4
    return 8


def padded_bytes(shape: Sequence[int], bits: int, sublane_tile: int, compact_columns: bool = True) -> int:
    """Bytes of a VMEM buffer: last dim padded to 128 lanes, second-minor to the sublane tile.

    With `compact_columns` a (rows, 1) block (e.g. a row-reduction output) is not padded to 128 lanes:
    the oracle measured a few KiB for (1024, 1) f32 on v5e/v6e where (8, 128) tiling predicts 512 KiB,
    so it is sized as a lane-dense vector of rows, rounded to whole (8, 128) tiles. On v4/v5p/v7x the
    oracle measured exactly the (8, 128)-tiled size (`TpuGeneration.compact_columns` False).
    """
    dims = list(shape) or [1]
    if compact_columns and len(dims) >= 2 and dims[-1] == 1:
        dims = [math.prod(dims[:-1])]
    if len(dims) == 1:
        elements = round_up(dims[0], LANES * 8 if dims[0] > LANES else LANES * lane_packing(bits))
    else:
        lead = math.prod(dims[:-2])
        elements = lead * round_up(dims[-2], sublane_tile) * round_up(dims[-1], LANES)
    return math.ceil(elements * bits / 8)


def round_up(value: int, multiple: int) -> int:
    return -(-value // multiple) * multiple


def raw_bytes(shape: Sequence[int], bits: int) -> int:
    return math.ceil(math.prod(shape) * bits / 8)


def hbm_array_bytes(dims: Sequence[int], bits: int) -> int:
    """Bytes of a whole array in XLA:TPU's default HBM layout: minor dim padded to 128 lanes, second-minor to
    the HBM sublane tile (bf16[512,32,4,128] is T(4,128): 16 MiB, not 32)."""
    dims = tuple(dims) if len(dims) >= 2 else (1, dims[0] if dims else 1)
    return padded_bytes(dims, bits, hbm_sublane_tile(bits, dims[-2]), compact_columns=False)
