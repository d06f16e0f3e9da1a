"""compiler_scratch rule 2 (a K-tiled 16-bit dot's spilled lhs block) against the controlled compiles it was
read off: fixtures/oracle_new/dot_grid/DOT_SPILL.tsv, the compiler's own allocation lists for jax's matmul and
megablox gmm over a grid of block shapes on v4..v7x (written by fixtures/oracle_new/dot_grid.py)."""

from __future__ import annotations

from collections import Counter

import pytest

from corpus import FIXTURES, tsv_rows
from hloscan.analyses.tpu import generation
from hloscan.analyses.vmem.compiler_scratch import dot_spill_bytes, partial_tile_dot_scratch
from hloscan.analyses.vmem.kernels import estimate_module
from hloscan.hlo.parser import parse_module

GRID = FIXTURES / "oracle_new" / "dot_grid" / "DOT_SPILL.tsv"
# Kernels whose figure, with the compiler's windows and scratch and the rule's spill, is within 5% of the
# compiler's, per generation: 258 of 271 (the 1.2 x / 0.5 x lhs allowances the rule replaced: 94 of the 129
# v5e/v6e/v7x kernels with 256..1024-row and -column blocks). The bn = 128 kernels were added after the
# held-out real9 showed a one-pass dot (v5e 512x128 blocks, +28%) keeps no lhs in registers.
FLOORS = {"v4": (48, 50), "v5e": (48, 50), "v5p": (48, 50), "v6e": (59, 60), "v7x": (55, 61)}


def _within_5_percent() -> tuple[Counter, Counter]:
    held, total = Counter(), Counter()
    for row in tsv_rows(GRID):
        gen, rows, width, depth = row["generation"], int(row["bm"]), int(row["bn"]), int(row["bk"])
        exact = sum(int(row[k]) for k in ("windows", "scratch", "other", "internal"))
        estimate = exact + dot_spill_bytes(generation(gen), rows, depth, width, rows * depth * 2)
        total[gen] += 1
        held[gen] += abs(estimate - int(row["figure"])) <= 0.05 * int(row["figure"])
    return held, total


@pytest.mark.parametrize("gen", sorted(FLOORS))
def test_rule_reproduces_the_grid(gen: str) -> None:
    held, total = _within_5_percent()
    floor, kernels = FLOORS[gen]
    assert (total[gen], held[gen] >= floor) == (kernels, True), (held[gen], total[gen])


def test_spill_follows_the_generation_conditions() -> None:
    """The conditions the grid showed: v7x spills nothing with a 512-wide rhs block below 2048 rows, v6e
    only its result pass with a 256-wide one, 128-wide MXUs the lhs from bk = 512 on when there are two
    column passes, and only the result pass with one."""
    lhs = 1024 * 2048 * 2
    result_pass = 1024 * 128 * 4 - 160 * 1024
    assert dot_spill_bytes(generation("v7x"), 1024, 2048, 512, lhs) == 0
    assert dot_spill_bytes(generation("v7x"), 1024, 2048, 1024, lhs) == lhs - 32 * 1024
    assert dot_spill_bytes(generation("v6e"), 1024, 2048, 256, lhs) == 1024 * 256 * 4 - 160 * 1024
    assert dot_spill_bytes(generation("v6e"), 1024, 512, 1024, 1024 * 512 * 2) == 0
    assert dot_spill_bytes(generation("v5e"), 256, 512, 256, 256 * 512 * 2) == 256 * 512 * 2 - 32 * 1024
    assert dot_spill_bytes(generation("v5e"), 1024, 2048, 128, lhs) == result_pass
    assert dot_spill_bytes(generation("v5e"), 1024, 2048, 512, lhs) == lhs - 32 * 1024 + result_pass


def test_real_gmm_kernel_gets_the_rule_through_its_blocks() -> None:
    """megablox gmm compiled for v7x with (512, 2048, 256) tiles: no spill in the compiler's allocation list,
    and none predicted (the 1.2 x lhs allowance put it at +80%)."""
    case = FIXTURES / "oracle_new" / "real8" / "v7x__pallas__gmm_t512x2048x256" / "before_optimizations.txt"
    (kernel,) = estimate_module(parse_module(case.read_text()), "v7x", None)
    assert not kernel.estimate.allowances and kernel.estimate.predicted_bytes == 3145728


PARTIAL_TILE = FIXTURES / "oracle_new" / "dot_grid" / "PARTIAL_TILE_DOT.tsv"


def test_partial_tile_dot_scratch_is_the_compilers_internal_scratch() -> None:
    """Rule 4 against paged attention compiled with 1..16 q heads per kv head: the compiler's internal scratch
    is the rule's constant exactly, kernel by kernel."""
    rows = tsv_rows(PARTIAL_TILE)
    assert len(rows) >= 150 and {r["generation"] for r in rows} == set(FLOORS)
    for row in rows:
        expected = partial_tile_dot_scratch(generation(row["generation"]), int(row["rows"]))
        assert int(row["internal"]) == expected, row
    assert {int(r["rows"]) for r in rows if int(r["internal"])} == {2, 3, 4, 6, 12}


USER2 = FIXTURES / "oracle_new" / "user2"


@pytest.mark.parametrize("case, gen, rows, depth, width", [
    ("v5p__pallas__mm_nt_bf16_4096_bm512_bn512_bk1024", "v5p", 512, 1024, 512),    # o[...] += dot(x, w.T)
    ("v5e__pallas__mm_bias_gelu_bf16_k1024_bm256_bn512", "v5e", 256, 1024, 512),   # gelu(dot(x, w) + b)
    ("v7x__pallas__cumsum_bf16_4096x8192_bm1024_bn1024", "v7x", 1024, 1024, 1024),  # rhs built in a scratch
])
def test_a_dot_without_accumulator_scratch_spills_its_lhs(case: str, gen: str, rows: int, depth: int,
                                                          width: int) -> None:
    """The lhs spill does not depend on where the dot's result goes (an f32 scratch, the output block, or
    nowhere) nor on where its operands come from (the dot is read from the body): the compiler spilled the
    lhs blocks of these kernels (v5p 1.09 MiB, v5e 0.61 MiB, v7x 2.29 MiB in their allocation lists)."""
    (kernel,) = estimate_module(parse_module((USER2 / case / "before_optimizations.txt").read_text()), gen, None)
    spills = [a.size for a in kernel.estimate.allowances if a.rule == "dot-lhs-spill"]
    assert spills == [dot_spill_bytes(generation(gen), rows, depth, width, rows * depth * 2)]
    assert spills[0] >= rows * depth * 2 - 8 * 4096
