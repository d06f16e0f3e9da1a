"""Mosaic's own scratch decisions (hloscan.analyses.vmem.compiler_scratch) on real compiler output.

Kernels: jax's ragged paged attention, paged attention and megablox gmm/tgmm compiled for v4..v7x by the
TPU compiler (shared/corpus/tpu-oracle/real, fixtures/oracle_new/real; fixtures/oracle_new/real2_rpagmm is
the held-out batch, generated before the rules were fitted and reported apart). The figure compared is
the compiler's per-kernel `scoped_sum` (MANIFEST.tsv), as eval_real.py does.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from corpus import CORPUS, FIXTURES, tsv_rows
from hloscan.analyses.vmem.estimate import KernelEstimate, estimate_kernel, parse_backend_config
from hloscan.analyses.vmem.kernels import estimate_module
from hloscan.hlo.parser import parse_module

FAMILIES = re.compile(r"__pallas__(rpa|paged_attn|gmm)")
# Regression floors = the shares measured when the rules were added (before them: 20/41 and 7/18). The
# held-out batch scored 10/18 when first looked at; 11/18 after rule 3 was split at the register file
# (a change fitted on the other two corpora only). Since the whole model (residency included) is scored:
# 37/41 and 13/18 with rules 2 and 4 from controlled compiles, 38/41 with v7x's loop factor 0.9.
FLOORS = {"fitted": (38, 41), "heldout": (13, 18)}


def _roots(batch: str) -> list[Path]:
    if batch == "heldout":
        return [FIXTURES / "oracle_new" / "real2_rpagmm"]
    return [CORPUS / "tpu-oracle" / "real", FIXTURES / "oracle_new" / "real"]


def _rows(root: Path) -> list[dict[str, str]]:
    rows = tsv_rows(root / "MANIFEST.tsv")
    return [r for r in rows if r["verdict"] == "ok" and r["scoped_sum"] and FAMILIES.search(r["case"])]


def _estimates(path: Path, generation: str) -> list[KernelEstimate]:
    module = parse_module(path.read_text())
    found = []
    for comp, inst in module.instructions():
        if inst.opcode == "custom-call" and inst.custom_call_target == "tpu_custom_call":
            operands = [comp.operand_shape(inst, pos) for pos in range(len(inst.operands))]
            found.append(estimate_kernel(inst.attr("backend_config"), operands, inst.shape, tpu=generation,
                                         instruction_name=inst.name))
    return found


def _case(root: Path, name: str) -> tuple[list[KernelEstimate], int]:
    (row,) = [r for r in _rows(root) if r["case"] == name]
    return _estimates(root / name / "before_optimizations.txt", row["generation"]), int(row["scoped_sum"])


@pytest.mark.parametrize("batch", sorted(FLOORS))
def test_families_within_5_percent(batch: str) -> None:
    within = total = 0
    print()
    for root in _roots(batch):
        for row in _rows(root):
            module = parse_module((root / row["case"] / "before_optimizations.txt").read_text())
            # The whole model, residency included, as eval_real and `hloscan vmem` estimate the case.
            est = sum(k.estimate.predicted_bytes for k in estimate_module(module, row["generation"], None))
            want = int(row["scoped_sum"])
            total += 1
            within += abs(est - want) <= 0.05 * want
            print(f"{batch} {row['case']:50s} est={est:>10d} compiler={want:>10d} {(est - want) / want:+.1%}")
    print(f"{batch}: within 5% {within}/{total}")
    floor_within, floor_total = FLOORS[batch]
    assert total == floor_total
    assert within >= floor_within


def test_one_step_reduction_accumulator_not_counted() -> None:
    """gmm with one K step (tk = k): the f32 accumulator is forwarded away (rule 1)."""
    (est,), want = _case(CORPUS / "tpu-oracle" / "real", "v6e__pallas__gmm_t1024x1024x2048")
    (acc,) = [b for b in est.blocks if b.role == "scratch"]
    assert not acc.counted and "one-step grid reduction" in (acc.note or "")
    assert abs(est.predicted_bytes - want) <= 0.05 * want


def test_multi_step_reduction_accumulator_counted() -> None:
    (est,), _ = _case(CORPUS / "tpu-oracle" / "real", "v5e__pallas__gmm_t256x512x256")
    (acc,) = [b for b in est.blocks if b.role == "scratch"]
    assert acc.counted and acc.total_bytes == 256 * 256 * 4


def test_straight_line_grid_steps_forward_all_scratch() -> None:
    """Flash attention with block_q = block_k_major = S: grid (1, 8, 1, 1), so the causal mask and the
    init/finalize conditions compare grid indices of extent 1 only; the compiler's LLO allocation list
    had none of the m/l/acc scratch of the forward, dq and dkv kernels (rule 1b)."""
    ests = _estimates(CORPUS / "tpu-oracle" / "real" / "v7x__pallas__flash_bwd_q2048_km2048_k512"
                      / "before_optimizations.txt", "v7x")
    scratch = [b for est in ests for b in est.blocks if b.role == "scratch"]
    assert len(scratch) == 6
    assert all(not b.counted and "straight-line" in (b.note or "") for b in scratch)


def test_scratch_kept_when_the_body_reads_a_grid_index_that_varies() -> None:
    """block_q = 512 of S = 2048: the causal mask reads the q index (extent 4), the scratch stays."""
    (est,) = _estimates(CORPUS / "tpu-oracle" / "real" / "v5e__pallas__flash_fwd_q512_km2048_k512"
                        / "before_optimizations.txt", "v5e")
    scratch = [b for b in est.blocks if b.role == "scratch"]
    assert len(scratch) == 3 and all(b.counted for b in scratch)


def test_grid_indices_read_from_bytecode_kernels() -> None:
    from hloscan.analyses.vmem.estimate import kernel_body
    from hloscan.analyses.vmem.mosaic import read_kernel

    def kernels(name: str):
        module = parse_module((CORPUS / "tpu-oracle" / "real" / name / "before_optimizations.txt").read_text())
        return [read_kernel(kernel_body(parse_backend_config(inst.attr("backend_config"))))
                for _, inst in module.instructions() if inst.custom_call_target == "tpu_custom_call"]

    (flash,) = kernels("v5e__pallas__flash_fwd_q512_km2048_k512")
    assert flash.grid == (1, 8, 4, 1) and flash.grid_indices_read == (2, 3)  # q (causal mask), kv
    (matmul,) = kernels("v5e__pallas__matmul_256x1024_k1024")
    assert matmul.grid_indices_read == (2,)  # k: init/finalize of the accumulator


def test_decode_attention_dot_scratch_depends_on_mxu_width() -> None:
    """Paged attention (4-row dots): 36 KiB internal scratch on v5e (128-wide MXU), none on v6e (rule 4)."""
    root = CORPUS / "tpu-oracle" / "real"
    (v5e,), _ = _case(root, "v5e__pallas__paged_attn_ppcb4")
    (v6e,), _ = _case(root, "v6e__pallas__paged_attn_ppcb4")
    assert v5e.internal_bytes == 36 * 1024
    assert v6e.internal_bytes == 0
    assert v5e.predicted_bytes - v6e.predicted_bytes == 36 * 1024


def test_loop_attention_scores_scale_with_generation() -> None:
    """Ragged paged attention: exp() values in its kv loop, times the generation's factor (rule 3)."""
    root = CORPUS / "tpu-oracle" / "real"
    internal = {gen: _case(root, f"{gen}__pallas__rpa_kvp8_qb32")[0][0].internal_bytes for gen in ("v5e", "v7x")}
    exps = 2 * 128 * 256 * 4 + 4 * 128 * 128 * 4  # two (128, 256) score and four (128, 128) rescale values
    # all within the register file: v5e 1.2 x, v7x 0.9 x
    assert internal == {"v5e": int(exps * 1.2), "v7x": int(exps * 0.9)}
