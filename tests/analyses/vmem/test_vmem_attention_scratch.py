"""The attention score-matrix allowance (analyses/vmem/scores_scratch.py) and predicted VMEM residency on
real flash-attention kernels of the shared corpus (jax's Pallas kernels compiled by the TPU compiler)."""

from __future__ import annotations

from corpus import CORPUS, FIXTURES, require_path
from hloscan.analyses.vmem.kernels import estimate_module
from hloscan.hlo.loader import load

REAL = CORPUS / "tpu-oracle" / "real"
MIB = 1 << 20


def _kernels(case: str, tpu: str):
    path = require_path(REAL / case / "before_optimizations.txt")
    return {k.estimate.kernel_name: k.estimate for module in load(path) for k in estimate_module(module, tpu, None)}


def test_forward_allowance_scales_with_generation():
    # One 2048x2048 f32 score matrix: 0.85 x 16 MiB on v6e, 1.0 x 16 MiB on v7x.
    v6e = _kernels("v6e__pallas__flash_fwd_q2048_km2048_k2048", "v6e")["_flash_attention_kernel"]
    v7x = _kernels("v7x__pallas__flash_fwd_q2048_km2048_k2048", "v7x")["_flash_attention_kernel"]
    assert v6e.internal_bytes == int(0.85 * 16 * MIB)
    assert v7x.internal_bytes == 16 * MIB


def test_backward_allowance_does_not_grow_with_unrolled_key_blocks():
    # dq/dkv with 2048x512 score blocks, four key blocks unrolled: 1.2 x one 4 MiB matrix, not 4 x.
    kernels = _kernels("v6e__pallas__flash_bwd_q2048_km2048_k512", "v6e")
    assert kernels["_flash_attention_dq_kernel"].internal_bytes == int(1.2 * 4 * MIB)
    assert kernels["_flash_attention_dkv_kernel"].internal_bytes == int(1.2 * 4 * MIB)


def test_v7x_forward_kernel_loses_two_windows_to_vmem_residency():
    # Compiler: q and k S(1) on v7x, 1007616 bytes scoped; v (8 MiB more) kept its window.
    est = _kernels("v7x__pallas__flash_fwd_q256_km256_k256", "v7x")["_flash_attention_kernel"]
    uncounted = [b.index for b in est.blocks if b.role == "input" and not b.counted]
    assert uncounted == [0, 1]
    assert abs(est.estimate_bytes - 1007616) / 1007616 < 0.05
    assert any("predicted to be placed whole in VMEM" in n for n in est.notes)


def test_v5e_forward_kernel_keeps_its_windows():
    est = _kernels("v5e__pallas__flash_fwd_q256_km256_k256", "v5e")["_flash_attention_kernel"]
    assert all(b.counted for b in est.blocks if b.role == "input")


def _fixture_kernels(folder: str, case: str, tpu: str):
    path = FIXTURES / "oracle_new" / folder / case / "before_optimizations.txt"
    return {k.estimate.kernel_name: k.estimate for module in load(path) for k in estimate_module(module, tpu, None)}


def test_unrolled_register_file_sized_scores_spill_whole():
    # Two key blocks of 256 x 256 f32 (each the size of the register file) unrolled in one step: 1.0 x 2 x
    # 256 KiB on v7x (the compiler's figure, 1118208 bytes, left 580 KiB beyond the windows); one such
    # block alone keeps the small factor (0.5 x 256 KiB).
    unrolled = _fixture_kernels("real3", "v7x__pallas__flash_fwd_nc_q256_km512_k256", "v7x")["_flash_attention_kernel"]
    assert unrolled.internal_bytes == 2 * 256 * 1024
    single = _kernels("v7x__pallas__flash_fwd_q256_km256_k256", "v7x")["_flash_attention_kernel"]
    assert single.internal_bytes == int(0.5 * 256 * 1024)


def test_head_dim_64_parameters_are_relaid_out_into_vmem_on_v5e():
    # f32[1,4,1024,64] q, k, v: XLA lays them out {2,3,1,0} and copies them for the kernel; the copies were
    # S(1) and the compiler's figure 503808 bytes held no input window.
    est = _fixture_kernels("real", "v5e__pallas__flash_fwd_nc_d64_q128_km1024_k128", "v5e")["_flash_attention_kernel"]
    assert [b.index for b in est.blocks if b.role == "input" and not b.counted] == [0, 1, 2]


def test_inputs_read_again_in_another_computation_are_prefetched_for_the_later_kernel():
    # Fused splash backward on v5e: q, k, v are read by the forward kernel (first, in one called computation)
    # and by the dkv kernel (in another). after_optimizations: S(1) for the dkv kernel, windows for the
    # forward kernel.
    kernels = _fixture_kernels("real3", "v5e__pallas__splash_bwd_fused_f32_q256_kv512_c256", "v5e")
    dkv = kernels["splash_mha_dkv_no_residuals"]
    fwd = kernels["splash_mha_fwd_residuals"]
    assert {0, 1, 2} <= {b.index for b in dkv.blocks if b.role == "input" and not b.counted}
    assert not {0, 1, 2} & {b.index for b in fwd.blocks if b.role == "input" and not b.counted}


def test_forward_kernel_with_128_wide_key_blocks_is_not_taken_for_a_backward_one():
    # v7x flash forward, 256 x 128 f32 score blocks, two key blocks unrolled, head dim 128: its score and
    # value matmuls and its rescaling exps all have the score's shape. Forward allowance 1.0 x 2 x 128 KiB
    # (the compiler's figure left 463 KiB beyond the windows; the backward rule gave nothing).
    est = _fixture_kernels("real4", "v7x__pallas__flash_fwd_f32_q256_km256_k128", "v7x")["_flash_attention_kernel"]
    assert est.internal_bytes == 2 * 128 * 1024
    assert any("1.0 x 2 f32 score matrices of 256x128" in n for n in est.notes)
