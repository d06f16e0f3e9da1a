"""What a kernel body allocates itself (analyses/vmem/mosaic/body.py, body_allocations.py), against the TPU
compiler on user-written kernels.

fixtures/oracle_new/user1 holds kernels written the way users write them (gen_user.py / user_kernels.py),
compiled for v5e..v7x with each kernel's allocation list after register allocation (LLO_BREAKDOWN.tsv). The
body model was built looking at them; held-out figures are reported from sets compiled after it was frozen.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from corpus import FIXTURES, rows_by_case, tsv_rows
from hloscan.analyses.tpu import MIB
from hloscan.analyses.vmem.allowance import measured_spread
from hloscan.analyses.vmem.body_allocations import HELD_SPREAD, body_peak, spill_bound
from hloscan.analyses.tpu import generation
from hloscan.analyses.vmem.estimate import kernel_body, parse_backend_config, steps_per_core
from hloscan.analyses.vmem.kernels import estimate_module, tpu_custom_calls
from hloscan.analyses.vmem.mosaic import read_kernel
from hloscan.analyses.vmem.mosaic.bytecode import OpResult, read_module, decode_body, _is_func, _main_function
from hloscan.hlo.parser import parse_module

USER1 = FIXTURES / "oracle_new" / "user1"
USER2 = FIXTURES / "oracle_new" / "user2"


def _module(case: str, root: Path = USER1):
    return parse_module((root / case / "before_optimizations.txt").read_text())


def _kernel(case: str, root: Path = USER1):
    (comp, inst), = list(tpu_custom_calls(_module(case, root)))
    return read_kernel(kernel_body(parse_backend_config(inst.attr("backend_config"))))


def _figure(case: str) -> int:
    (row,) = [r for r in tsv_rows(USER1 / "MANIFEST.tsv") if r["case"] == case]
    return int(row["scoped_sum"])


# ------------------------------------------------------------------------------------------ allocations


def test_nested_regions_add_up_and_siblings_share_their_space() -> None:
    nested = _kernel("v5e__pallas__scoped_nested_bf16_2048_1024").body
    siblings = _kernel("v5e__pallas__scoped_siblings_bf16_2048_1024").body
    assert [a.shape for a in nested.allocas] == [(2048, 2048), (1024, 2048)]
    assert body_peak(nested) == 12 * MIB  # the compiler: 12.2 MiB with its 0.12 MiB output window
    assert body_peak(siblings) == 8 * MIB  # the compiler: 8.15 MiB
    for case in ("v5e__pallas__scoped_nested_bf16_2048_1024", "v5e__pallas__scoped_siblings_bf16_2048_1024"):
        (k,) = estimate_module(_module(case), "v5e", None)
        assert abs(k.estimate.predicted_bytes - _figure(case)) <= 0.02 * _figure(case)


def test_a_temporary_read_back_in_straight_line_code_is_forwarded() -> None:
    straight = _kernel("v5e__pallas__scoped_temp_bf16_512x1024").body
    in_when = _kernel("v6e__pallas__scoped_temp_when_bf16_512x1024").body
    assert [a.forwarded for a in straight.allocas] == [True]
    assert [a.forwarded for a in in_when.allocas] == [False]
    assert body_peak(straight) == 0
    assert body_peak(in_when) == 2 * MIB  # the compiler's 'scoped memory' allocation


def test_inner_pipeline_buffers_count_their_buffering() -> None:
    body = _kernel("v5p__pallas__inner_mm_bf16_512x1024x512_b3").body
    assert [a.shape for a in body.allocas] == [(3, 512, 1024), (2, 1024, 512), (2, 512, 512)]
    assert body_peak(body) == 7 * MIB  # the allocation list: 3 + 2 + 2 MiB


# ------------------------------------------------------------------------------------------ held values


def test_upcast_block_is_held_across_the_row_reduction() -> None:
    held = _kernel("v5e__pallas__rmsnorm_bf16_256x4096").body
    assert held.held_peak_bytes == 4 * MIB  # f32[256, 4096]; the compiler spilled 4.04 MiB
    assert [(h.shape, h.element) for h in held.held] == [((256, 4096), "f32")]
    # An f32 block loaded from its window is loaded again instead: nothing held, and none spilled.
    assert _kernel("v5p__pallas__rmsnorm_f32_256x2048").body.held_peak_bytes == 0


def test_repeated_subexpressions_are_one_value() -> None:
    """jax traces `x - max` twice in log-softmax; Mosaic keeps one, held across the sum."""
    body = _kernel("v6e__pallas__log_softmax_f32_16x50304").body
    assert [h.op.rsplit(".", 1)[-1] for h in body.held if h.bytes > MIB] == ["subf"]


def test_values_live_across_control_flow_are_held() -> None:
    """A dot computed before its accumulator's `pl.when` init is kept whole across it."""
    body = _kernel("v5p__pallas__mm_f32_640x640x640").body
    assert body.across_peak_bytes == 640 * 640 * 4
    assert body.held_peak_bytes == 0


def test_operands_after_a_region_resolve_to_their_values() -> None:
    """MLIR bytecode numbers the values of a closed region again from the same place: a reader that kept
    the ids shifted read the emit_pipeline matmul's result as a boolean's operand."""
    (comp, inst), = list(tpu_custom_calls(_module("v7x__pallas__inner_mm_bf16_1024x2048x1024_b3")))
    module = read_module(decode_body(kernel_body(parse_backend_config(inst.attr("backend_config")))))
    main = _main_function([op for op in module.walk() if _is_func(op)])
    dots = [op for op in main.walk() if op.name.endswith("tpu.matmul")]
    users = [op.name.rsplit(".", 1)[-1] for op in main.walk()
             for v in op.operands if isinstance(v, OpResult) and v.op is dots[0]]
    assert users == ["addf"]


def test_values_stored_after_another_store_are_held_across_it() -> None:
    """Adam writes the parameter, then the two moments it computed before: both moment blocks (f32[64, 4096],
    1 MiB each) are kept across the first store (the compiler spilled 1.86 MiB on v6e)."""
    body = _kernel("v6e__pallas__adam_f32_8192x4096_br64", USER2).body
    assert body.across_peak_bytes == 2 * MIB
    assert {h.across for h in body.held if h.bytes == MIB} == {"store"}


def test_a_slice_read_after_a_store_is_hoisted_above_it() -> None:
    """A causal conv1d stores its output, then keeps `x[bt - 8:]` of its f32 block for the next step: the
    8-row slice is computed before the store, the block is not kept (the compiler: 0.14 MiB of spill)."""
    body = _kernel("v6e__pallas__conv1d_k4_bf16_bt1024_bd1024", USER2).body
    assert body.across_peak_bytes <= 8 * 1024 * 4


def test_a_value_stored_whole_before_its_reduction_is_read_back_not_held() -> None:
    """A Hamming kNN stores its i32[1024, 2048] distance block, then reduces it and compares it with the row
    minimum: the compiler reads the block back from its output window (1.42 MiB of spill, not 8 MiB). Soft-capped
    logits stored only after their logsumexp are kept whole (3.9 MiB of spill)."""
    stored_first = _kernel("v6e__pallas__hamming_d1024_1024x2048", USER1.parent / "user10").body
    stored_after = _kernel("v6e__pallas__softcap_lse_f32_32x32768", USER1.parent / "user6").body
    assert stored_first.held_peak_bytes <= 64 * 1024  # the (1024, 1) row minima, not the 8 MiB block
    assert stored_after.held_peak_bytes == 32 * 32768 * 4


def _held_ratios() -> list[float]:
    """The compiler's figure minus the exact part (windows, scratch, body allocations), over the held-value
    allowance, for every accepted single-kernel case of user1..user7 that gets one."""
    ratios = []
    for folder in ("user1", "user2", "user3", "user4", "user5", "user6", "user7"):
        root = USER1.parent / folder
        manifest = {r["case"]: r for r in tsv_rows(root / "MANIFEST.tsv")}
        for case, rows in rows_by_case(root / "LLO_BREAKDOWN.tsv").items():
            if manifest[case]["verdict"] != "ok":
                continue
            kernels = estimate_module(_module(case, root), manifest[case]["generation"], None)
            if len(kernels) != 1 or len(rows) != 1:
                continue
            est = kernels[0].estimate
            held = [a for a in est.allowances if a.rule == "held-across-reduction"]
            if held:
                exact = est.predicted_bytes - est.internal_bytes
                ratios.append((int(rows[0]["figure"]) - exact) / held[0].size)
    return ratios


def test_held_value_spread_is_the_measured_one() -> None:
    ratios = _held_ratios()
    assert len(ratios) == HELD_SPREAD.kernels
    low, high = measured_spread(ratios)
    assert (round(low, 2), round(high, 2)) == (HELD_SPREAD.low, HELD_SPREAD.high)


# ------------------------------------------------------------------------------------------ the whole set

# Measured on user1 before the body model: 23/54 within 5%, 7/15 compiler VMEM errors found; after it:
# 49/56 and 14/15 (the miss sits at its limit: 48.00 MiB estimated, 48.43 MiB used of a 48 MiB limit).
# user2 (held out, compiled after the model was frozen; scored here as hloscan.vmem estimates of the
# before-optimisation dump): 54/127 and 20/23, with the DMA-wait rule added after that scoring; its one
# false error is tokamax's f32 attention on v5p (+113%, the exp2 score rule does not apply).
FLOORS = {"user1": {"within": (49, 56), "errors": (14, 15), "false": 0},
          "user2": {"within": (54, 127), "errors": (20, 23), "false": 1},
          # user8 (held out, compiled after the freeze at 10a704a, scored once): the false error is a soft Dice
          # kernel on v5p estimated 3% over the compiler's figure, which sat 1% under its 16 MiB limit.
          "user8": {"within": (17, 54), "errors": (17, 18), "false": 1},
          # user9 (held out, compiled after the freeze at b57c6c7, scored once): the 6 errors missed are kernels
          # whose spill the body model does not see (2:4 pruning's rolled partners, a Fourier-feature MLP's dot
          # chain, bit packing, squeeze-excite, stream compaction's permutation matmul, batch-hard triplets).
          "user9": {"within": (14, 57), "errors": (9, 15), "false": 0},
          # user10 (held out, compiled after the freeze at e487566, whose VMEM model is b57c6c7's, scored once): the
          # false errors are a v6e Hamming kNN (+35%: int8 popcount matmul spill counted whole) and a v7x RMSprop
          # step whose 48 MiB the compiler placed from offset 0 of a scoped region XLA started at 16 MiB (its
          # limit was offset + size), which the before-optimisation dump does not show. Scored: 7/34, 11/14, 2 false.
          # Then (after all three were scored) a value stored whole before a reduction over it is read back from
          # its ref, not held: 9/34, the Hamming kNN's false error gone; every other folder unchanged in count.
          "user10": {"within": (9, 34), "errors": (11, 14), "false": 1},
          # user11 (held out, 17 new kinds compiled after the freeze at 13fd580, scored once): the false error is a
          # v6e 8-bit Adam step whose large operands memory-space assignment placed whole in VMEM (+30%). Scored:
          # 21/52, 12/16; 24/52, 13/16 with GeM's reduced transcendentals and the lane-roll rule (78f7f2d, 69c3445).
          "user11": {"within": (25, 52), "errors": (13, 16), "false": 1},
          # user12 (held out, 20 new kinds compiled after the freeze at 69c3445, scored once): the errors missed are
          # a connected-components while loop (-50% on the kernels accepted), a parallel cyclic reduction and an
          # int16 audio kernel with hardware PRNG dither (-17..-23%). On 09f0025, before this session: 23/64, 12/16.
          # Scored 23/64, 13/16; 24/64, 15/16 after rules it taught (dots in turn, rolls of loop values and sources),
          # 24/64, 14/16 with rolled values counted halfway between hoisted and in order (user13's LPC).
          "user12": {"within": (24, 64), "errors": (15, 16), "false": 0},
          # user13 (held out, 20 new kinds compiled after the freeze at 30c9136, scored once): 8/68, 8/12, two false
          # E1001 (LPC kernels whose 32 rolled taps were counted all hoisted, +110%/+182%); with rolled values counted
          # halfway, one (the v5e LPC, +65%). On 09f0025: 8/68, 6/12, no false error.
          "user13": {"within": (8, 68), "errors": (8, 12), "false": 1},
          # user14 (held out, 19 new kinds compiled after the freeze at ed04451, scored once): 13/55, 16/21 (10/21 on
          # 09f0025); the two false E1001 (v5e FAVOR+ +103%, v5e Adam-mini +228%) are the same on both models.
          # Then sublane rolls of computed values counted as rolled values (mosaic/body._sublane_roll_of_computed): an
          # associative scan's carried rows (user11 -46% -> +2%), a connected-components loop's 1024x1024 E1001 found
          # (user12), MobileNet depthwise taps -83/-87% -> +4/-8% and a v6e E1001 found (user14): within 5% 539 -> 542
          # and errors found 244 -> 247 over user1-14 and jax's kernels, no new false error.
          "user14": {"within": (14, 55), "errors": (17, 21), "false": 2},
          # user17 (held out, 18 new kinds compiled after the freeze at 911ec84, scored once): 23/62, 6/10 (eval_real,
          # whose check raises HLO201 only past the stated error: 5/10), no false E1001. The errors missed are kernels
          # whose spill the body model does not see: slot attention's and a count-min sketch's one-hot dot operands
          # (-58%, -99% on the kernels accepted), a Monte-Carlo option pricer's paths (-47%).
          "user17": {"within": (23, 62), "errors": (6, 10), "false": 0},
          # user18 (held out, 16 new kinds compiled after the freeze at c75e9cd, scored once): 6/59, 4/5, no false E1001.
          # The same counts on the session's starting model (3f8c45e); the sublane-roll rule moved Perona-Malik and
          # red-black SOR from -13..-37% to -11..-23%.
          "user18": {"within": (6, 59), "errors": (4, 5), "false": 0},
          # user19 (held out, 16 new kinds compiled after the freeze at 5e76ac9, scored once): 9/54, 7/10, no false
          # E1001; the same on the session's starting model (382efef). The errors missed: a v5p Hopfield retrieval
          # (DMA'd patterns), and a v6e LayerNorm-GELU-linear and non-local-means kernel warned within 10% of the limit.
          "user19": {"within": (9, 54), "errors": (7, 10), "false": 0},
          # user20 (held out, 16 new kinds compiled after the freeze at 0260b42, scored once): 4/56, 3/4, no false
          # E1001 or warning. Register spill is most of every miss: an n-body tile's five (bi, bj) f32 values read by
          # three lane reductions at once (-89..-99%: no value is kept across a reduction, yet all spilled), CG and
          # SGLD bodies (-28..-48%); the missed error is a v6e SGLD step (Box-Muller noise).
          "user20": {"within": (4, 56), "errors": (3, 4), "false": 0},
          # user21 (held out, 16 new kinds compiled after the freeze at 0260b42, scored once): 11/60, 1/4, two false
          # E1001: a v5p multi-scale MMD tile (+71%: its 15 exps of three distance matrices counted as 15 unrolled
          # attention score blocks) and a v6e Adan step (+10%: windows of its four in-place states over-counted).
          "user21": {"within": (11, 60), "errors": (1, 4), "false": 2},
          # user22 (held out, 16 new kinds compiled after the freeze at 0260b42, scored once): 11/56, no compiler
          # error in the set (every kernel meant to exceed its limit fitted), no false E1001 or warning; worst -90% (a
          # Lennard-Jones + Coulomb tile on v5e, register spill).
          "user22": {"within": (11, 56), "errors": (0, 0), "false": 0}}


def _cases(root: Path):
    for row in tsv_rows(root / "MANIFEST.tsv"):
        if row["family"] != "pallas" or not (root / row["case"]).is_dir():
            continue
        error = row["verdict"].startswith("E1001") or row["error_kind"] == "vmem_capacity_oom"
        if row["verdict"] == "ok" or error:
            yield row, error


@pytest.mark.parametrize("folder", sorted(FLOORS))
def test_user_kernels_within_5_percent_and_errors_found(folder: str) -> None:
    root = USER1.parent / folder
    floors = FLOORS[folder]
    within = total = found = errors = false_errors = 0
    for row, error in _cases(root):
        kernels = estimate_module(_module(row["case"], root), row["generation"], None)
        # An accepted kernel estimated over its limit is a false error; one estimated within 10% of it is
        # "tight" (a warning on the pre-optimisation dump, which eval_real's check of the whole case folder
        # does not raise: its after_codegen figure is the compiler's own).
        flagged = any(k.estimate.exceeds for k in kernels)
        if error:
            errors += 1
            found += any(k.estimate.exceeds for k in kernels)
            continue
        est = sum(k.estimate.predicted_bytes for k in kernels)
        if not row["scoped_sum"]:
            continue
        want = int(row["scoped_sum"])
        total += 1
        within += abs(est - want) <= 0.05 * want
        false_errors += flagged
        print(f"{row['case']:55s} est={est:>10d} compiler={want:>10d} {(est - want) / max(want, 1):+.1%}")
    print(f"within 5%: {within}/{total}; errors found {found}/{errors}; false errors {false_errors}")
    assert (total, errors) == (floors["within"][1], floors["errors"][1])
    assert within >= floors["within"][0] and found >= floors["errors"][0]
    assert false_errors <= floors["false"]


def test_a_large_scratch_read_whole_is_scoped() -> None:
    """A cumsum builds an f32[2048, 2048] triangular matrix in a scratch and dots it whole: the compiler
    counted it with 16 MiB of windows (E1001, "Scoped allocation with size 32.25M and limit 32.00M"), while
    a scratch touched a tile at a time stays a separate allocation (tpu-oracle/vmem's scratch cases)."""
    (kernel,) = estimate_module(_module("v6e__pallas__cumsum_f32_2048x8192_bm512_bn2048", USER2), "v6e", None)
    assert kernel.estimate.predicted_bytes == 33816576
    assert kernel.estimate.verdict == "E1001"


@pytest.mark.parametrize("root, case, narrow_bytes", [
    (USER2, "v5p__pallas__argmax_bf16_v131072_bm128_bv8192", 128 * 8192 * 2),       # max, then x == max
    (FIXTURES / "oracle_new" / "user3", "v6e__pallas__lse_bf16_v131072_bm256_bv16384", 256 * 16384 * 2),
])
def test_a_block_widened_only_for_a_reduction_is_held_narrow(root: Path, case: str, narrow_bytes: int) -> None:
    """The compiler spilled about half of the f32 upcast of these bf16 blocks: it holds the loaded vregs and
    widens them in the reduction and again after it."""
    (comp, inst), = list(tpu_custom_calls(_module(case, root)))
    body = read_kernel(kernel_body(parse_backend_config(inst.attr("backend_config")))).body
    assert body.held_peak_bytes == narrow_bytes


def test_a_block_read_by_a_runtime_loop_is_held_for_the_loop() -> None:
    """Power iteration loads A once and reads it in every `lax.while_loop` iteration: the compiler kept the
    whole f32[1024, 1024] (3.99 MiB of spill on v5e), though it is a plain load."""
    (comp, inst), = list(tpu_custom_calls(_module("v5e__pallas__power_f32_n1024", FIXTURES / "oracle_new" / "user3")))
    body = read_kernel(kernel_body(parse_backend_config(inst.attr("backend_config")))).body
    assert body.across_peak_bytes >= 4 * MIB
    assert any(h.across == "loop" and h.bytes == 4 * MIB for h in body.held)


def test_a_1d_value_fills_its_vregs_unless_widened_from_a_narrow_block() -> None:
    """SGD with momentum over 1-D blocks holds two values across its first store: f32 blocks of 262144 fill
    1 MiB of vregs each (v5e spilled 1.31 MiB); computed from a widened bf16 gradient they take one row of
    each vreg (v7x spilled 17.88 MiB for 524288-element blocks)."""
    user3 = FIXTURES / "oracle_new" / "user3"
    for case, per_value in (("v5e__pallas__sgd1d_f32g_n16m_bn256k", 1 * MIB),
                            ("v7x__pallas__sgd1d_bf16g_n16m_bn512k", 16 * MIB)):
        (comp, inst), = list(tpu_custom_calls(_module(case, user3)))
        body = read_kernel(kernel_body(parse_backend_config(inst.attr("backend_config")))).body
        assert {h.bytes for h in body.held if h.across == "store" and len(h.shape) == 1 and h.bytes > MIB // 2} == {per_value}


def test_a_megacore_chip_single_buffers_one_grid_step_per_core() -> None:
    """v5p splits a parallel grid of 2 between its two TensorCores: each runs one step and the compiler
    allocated one buffer per window (8 MiB in, 2 MiB out)."""
    case = "v5p__pallas__avgpool2_bf16_64x64_c256_bh128"
    (kernel,) = estimate_module(_module(case, FIXTURES / "oracle_new" / "user3"), "v5p", None)
    assert kernel.estimate.predicted_bytes == 10 * MIB
    assert steps_per_core((2,), ("parallel",), generation("v5p")) == 1
    assert steps_per_core((2,), ("parallel",), generation("v6e")) == 2  # one core: both steps, double-buffered
    assert steps_per_core((4, 3), ("arbitrary", "parallel"), generation("v4")) == 8


def _body(case: str, folder: str):
    (comp, inst), = list(tpu_custom_calls(_module(case, FIXTURES / "oracle_new" / folder)))
    return read_kernel(kernel_body(parse_backend_config(inst.attr("backend_config")))).body


@pytest.mark.parametrize("case", [
    "v5e__pallas__gelu_bwd_bf16_bm256_bd1024",    # dx stored, then db += sum(g): the sum is taken before
    "v7x__pallas__sr_sgd_bf16g_d4096_bm256",      # w stored, then rounded to bf16: read back from its ref
    "v6e__pallas__rank_sort_f32_n2048_bm8",       # (n, n) iotas read in a fori_loop: generated again
])
def test_what_the_compiler_did_not_keep_across_a_store_or_a_loop(case: str) -> None:
    """Each spilled (almost) nothing in the compiler's allocation list (fixtures/oracle_new/user4)."""
    assert _body(case, "user4").across_peak_bytes <= 64 * 1024


def test_a_block_widened_for_a_sublane_reduction_is_held_wide() -> None:
    """Welford column stats (mean over axis 0, then the squared deviations summed) of a bf16 (512, 2048)
    block spilled the whole f32 upcast on v7x."""
    assert _body("v7x__pallas__welford_bf16_bm512_bd2048", "user4").held_peak_bytes == 512 * 2048 * 4


@pytest.mark.parametrize("case, folder, value_bytes", [
    ("v6e__pallas__gem_bf16_hw49_c2048_bn8", "user11", 8 * 56 * 2048 * 4),  # exp(p log x) summed over 49 rows
    ("v5p__pallas__welford_f32_bm512_bd1024", "user4", 512 * 1024 * 4),     # (x - mean)^2 / n summed over rows
])
def test_a_transcendental_chain_reduced_over_rows_is_spilled_whole(case: str, folder: str, value_bytes: int) -> None:
    """The compiler spilled 0.93-0.96 of these values (LLO_BREAKDOWN.tsv), which nothing keeps across a
    barrier: only the reduction reads them."""
    body = _body(case, folder)
    assert body.reduced_peak_bytes == value_bytes
    assert body.held_peak_bytes < value_bytes


@pytest.mark.parametrize("case, folder", [
    ("v5p__pallas__silu_bwd_bf16_bm512_bd2048", "user4"),  # the summed value is also stored (dx): no spill
    ("v6e__pallas__colmax_f32_2048x256", "user6"),         # max(|x|) over rows: no transcendental, no spill
    ("v6e__pallas__log_softmax_f32_16x50304", "user1"),    # a lane reduction: the held-value rule's
])
def test_other_reductions_are_not_spilled_whole_by_this_rule(case: str, folder: str) -> None:
    assert _body(case, folder).reduced_peak_bytes == 0


def test_dots_run_one_at_a_time() -> None:
    """An STFT's cosine and sine transforms of one windowed frame block: the frames are kept across the first
    dot (the second reads them after it) and its result across the second; the compiler spilled 5.12 MiB."""
    held = {h.op.rsplit(".", 1)[-1]: h for h in _body("v6e__pallas__stft_hop512_bt768", "user12").held}
    assert (held["mulf"].shape, held["mulf"].phases) == ((768, 1024), (0, 1))
    assert (held["matmul"].shape, held["matmul"].phases) == ((768, 512), (1, 2))


@pytest.mark.parametrize("case, folder, peak_mib, spilled_mib", [
    ("v7x__pallas__prune24_bf16_n4096_bk64", "user9", 6.0, 6.28),    # 8 lane taps of |x| and |x| itself
    ("v5e__pallas__conv1d_bf16_t4096_k4_bm64", "user4", 2.5, 3.07),  # 3 lane taps, all hoisted
    ("v6e__pallas__st3d_f32_512x512_bz4", "user7", 1.5, 2.58),       # 4 planes, each loaded after the last store
    ("v6e__pallas__cc_512x512", "user12", 2.5, 4.18),                # a while loop's carried labels rolled 4 ways
    # sublane rolls of computed values: a depthwise conv's taps of its expanded activations, a Jacobi grid
    ("v5e__pallas__mb_16x32_c128_e512", "user14", 4.0, 3.80),
    ("v5e__pallas__jacobi_f32_512x512_it16", "user5", 3.5, 4.31),
])
def test_rolled_values_live_at_once_are_spilled(case: str, folder: str, peak_mib: float, spilled_mib: float) -> None:
    """What the compiler spilled (LLO_BREAKDOWN.tsv) for lane rolls of blocks wider than a vreg, which the peak
    of rolled values (halfway between all taps hoisted and the block's order) does not exceed by more than 12%;
    without the loads kept after stores, the 3-D stencil's 8 lane rolls would all count (8 MiB hoisted)."""
    assert _body(case, folder).rotated_peak_bytes == peak_mib * MIB
    assert peak_mib <= spilled_mib * 1.12


def test_many_rolled_taps_count_halfway() -> None:
    """An LPC residual's 32 lane taps of a 1 MiB f32 block (plus the autocorrelation's 32 lags): hoisted they
    would all be live (33 MiB); the compiler spilled 14.6 MiB (fixtures/oracle_new/user13, v6e)."""
    assert _body("v6e__pallas__lpc_bf16_bb32_l8192_p32", "user13").rotated_peak_bytes == 18.5 * MIB


@pytest.mark.parametrize("case, folder", [
    ("v7x__pallas__rope_f32_s8192_d256_bs4096", "user2"),  # a roll by 128 lanes renames vregs: nothing spilled
    ("v5e__pallas__conv1d_k4_bf16_bt512_bd512", "user2"),  # loaded rows rolled (sublanes): reloadable, nothing spilled
])
def test_rolls_that_do_not_count(case: str, folder: str) -> None:
    assert _body(case, folder).rotated_peak_bytes == 0


# ------------------------------------------------------------------------------------------ spill bound


def _spill(root: Path, case: str) -> int:
    (row,) = [r for r in tsv_rows(root / "LLO_BREAKDOWN.tsv") if r["case"] == case]
    return int(row["spill"])


@pytest.mark.parametrize("folder, case", [
    ("user5", "v5e__pallas__focal_bf16_256x1024"),  # six f32 blocks of an elementwise loss, nothing held
    ("user1", "v5e__pallas__rmsnorm_bf16_256x4096"),  # the upcast held across the mean
    # 32 unrolled compares of loaded planes, hoisted ahead of the OR chain that reads them one by one: only the
    # earliest-first order holds them all (7.93 MiB spilled; 1-2 MiB in the body's own or latest-first order)
    ("user9", "v5p__pallas__bitpack_c2048_br32"),
    ("user10", "v7x__pallas__band_bf16_n8192_k9_bb64"),  # nine shifted diagonals hoisted the same way
])
def test_the_most_a_body_could_spill_bounds_the_compiler_spill(folder: str, case: str) -> None:
    root = USER1.parent / folder
    (comp, inst), = list(tpu_custom_calls(_module(case, root)))
    body = read_kernel(kernel_body(parse_backend_config(inst.attr("backend_config")))).body
    assert 0 < _spill(root, case) <= spill_bound(body)
    (k,) = estimate_module(_module(case, root), case.split("__")[0], None)
    low, high = k.estimate.range_bytes
    assert k.estimate.figure_kind == "range" and low <= _figure_in(root, case) <= high


def _figure_in(root: Path, case: str) -> int:
    (row,) = [r for r in tsv_rows(root / "MANIFEST.tsv") if r["case"] == case]
    return int(row["scoped_sum"])


# What each estimate says of itself, against the compiler: "exact" within 5%, or the figure inside the
# stated range. Before the spill bound: 165 of 285 stated figures held (14 of user5's "exact" estimates, none
# within 5%); with it 320 of 387, and 14 of the 16 still called exact are within 5%. With the held-value
# spread measured on user1..user4 and the bound counting nested blocks and kept loads: 349 of 388, 13 of
# the 15 called exact (one exact estimate that held is now a range: its bound counts a kept load). With the
# earliest-first order in the bound: 364 of 388 (user9 and user10, not counted here: 42/56 -> 43/57 and 27/32
# -> 29/34), 10 of the 11 called exact: three depthwise-conv stencils within 5% are now ranges, their nine
# shifted taps could be hoisted together (0.6 MiB) though the compiler did not.
def test_estimates_hold_what_they_say_of_themselves() -> None:
    stated = held = exact = exact_held = 0
    for folder in ("user1", "user2", "user3", "user4", "user5"):
        root = USER1.parent / folder
        for row, error in _cases(root):
            if error or not row["scoped_per_instr"]:
                continue
            figures = json.loads(row["scoped_per_instr"])
            kernels = estimate_module(_module(row["case"], root), row["generation"], None)
            for k in kernels:
                fig = figures.get(k.inst.name) if len(kernels) > 1 else sum(figures.values())
                est = k.estimate
                if fig is None or est.figure_kind not in ("exact", "range"):
                    continue
                stated += 1
                if est.figure_kind == "exact":
                    exact += 1
                    exact_held += abs(est.estimate_bytes - fig) <= 0.05 * fig
                    held += abs(est.estimate_bytes - fig) <= 0.05 * fig
                else:
                    low, high = est.range_bytes
                    held += low * 0.999 <= fig <= high * 1.001
    print(f"stated {held}/{stated}, exact {exact_held}/{exact}")
    assert held >= 364 and held >= 0.93 * stated
    assert exact_held >= 10 and exact_held >= 0.85 * exact


def test_an_attention_like_kernel_still_counts_what_it_keeps_across_its_loop() -> None:
    """Slot attention (exp of dot results, so the attention rules apply) computes k and v (6400x256 bf16) before
    its routing `fori_loop` and reads them in every iteration: they are kept whole across the loop and spilled
    (the compiler's spill, LLO_BREAKDOWN.tsv: 9.47 MiB; without this allowance the estimate was its windows)."""
    case = "v6e__pallas__slot_n6400_d256_s8"
    root = USER1.parent / "user17"
    (kernel,) = estimate_module(_module(case, root), "v6e", None)
    (allowance,) = [a for a in kernel.estimate.allowances if a.rule == "held-across-control-flow"]
    assert allowance.size >= 2 * 6400 * 256 * 2 - 48 * 4096
    assert "6400x256" in allowance.why and allowance.size <= _spill(root, case)
