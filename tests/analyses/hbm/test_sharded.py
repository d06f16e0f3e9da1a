"""Per-device HBM of sharded programs before partitioning, against the TPU compiler's memory-usage reports.

fixtures/oracle_new/sharded1 (the set the model was built with) and sharded2 (compiled after it was frozen):
decoder train and decode steps over 4- and 8-device meshes with dp / fsdp / tp / fsdp_tp shardings; sharded3
and sharded4 (held out when compiled, built on since): other decoders, ViT, BERT, MoE, T5, shard_map steps. Floors are
the figures measured when each set was scored; a change that loses one fails here.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from corpus import FIXTURES, tsv_rows
from hloscan.analyses.hbm import analyze_modules
from hloscan.hlo.loader import load
from hloscan.analyses.layouts.memory_report import memory_report
from hloscan.hlo.signature import diff_signatures, module_signature

ORACLE = FIXTURES / "oracle_new"
# (before within 15%, verdicts agreeing, programs); false E1000 errors must stay 0. Host-offloaded optimizer
# state (pinned_host arguments) is not HBM since 6873338+1: two opt_host programs that were within 15% only
# because those arguments were counted in HBM are now under (their device copies of the state are the
# temporaries the prediction still misses).
# Expensive elementwise values with several readers kept in a buffer (liveness.EXPENSIVE): sharded1 12 -> 11
# (a tp step went from +11% to +28%), sharded2 17 -> 18, sharded3 16 -> 20. Splits carried through reshapes,
# slices, concatenations and embedding gathers (partition.py): 12, 23 and 24. Device copies of host-memory
# arguments between their use and the program's start (analyze.py), an embedding gather whose table and tokens
# are split over one mesh axis keeping the table's split, and squeezed unit dims keeping a reshape's splits:
# 14, 27 and 28 (fsdp_tp 3 -> 8 of 11). One verdict in sharded2 went the other way (gemma fsdp_tp on v7x, +128%:
# its logits are batch-split by a reduce-scatter the forward propagation does not see), one in sharded3 came right.
# sharded4 (other architectures, held out: 21/40 and 29/40 with 4 false errors on the frozen 859a6c7), then built
# on: a scan inside a gradient-accumulation loop keeps its residuals' splits, a shard_map's exit is split as
# its local values and its entry/exit and Shardy's result annotations are views, not buffers, and an output a
# loop stacks while it reads the donated argument keeps a buffer of its own (decode steps), buffer donors
# paired with outputs as XLA pairs them: 32/40 and 38/40.
# sharded5 (12 more kinds, held out: 25/40 and 35/40 with one false error on the frozen 0b80d71), then built on:
# shrinking ops (dots, reduces, convolutions) scheduled as soon as their operands are ready instead of in the
# text's post-order (unrolled layer loops: Muon +207% -> +27%, phi +125% -> +74%, a Whisper decoder's false
# error gone), a dot split only on its contracted dim in a data-parallel program keeping its pieces, and an
# embedding table's gradient scattered into zeros kept as a buffer (DLRM -68..-48% -> -62..-29%): sharded4
# 34/40, sharded5 28/40 and 36/40; interleaving pads (associative scans) kept as buffers: 29/40 (Mamba on v6e -66% -> +9%).
# sharded6 (16 more kinds, held out, compiled after the freeze at 2196c40, scored once): 28/37 and 36/37 (the
# miss is a compiler crash, not a memory verdict). Then, from sharded1-6's v7x programs: 16-bit weight stacks and
# read-only caches a layer loop slices from entry parameters are re-tiled to v7x's 16-row tiles in a copy that
# lives through the loop (chunked prefill -32% -> +5%, speculative decoding -15% -> 0%, T5 decode -39% -> -7%,
# MoE decode -22% -> 0% and its missed OOM found, StarCoder LoRA -19% -> -3%; distillation +10% -> +15%):
# sharded4 35/40 and 39/40, sharded5 30/40.
# sharded7 (15 more kinds, held out, compiled after the freeze at f5445fc, scored once): 21/28 and 28/30 (two
# cases without a report) with one false error, the v7x diffusion sampler (+186%). Then: a widening expensive
# value (a softmax's f32 exp of bf16 scores) is recomputed in each fusing reader, not kept, and causal-masked
# scores are written by the dot's output fusion in their f32 type (liveness._duplicated, _output_fused_shape):
# the sampler +186% -> 0%, its v6e twin +153% -> -2%, sharded3 28 -> 30, sharded6 28 -> 31; sequence-parallel
# steps with 32k-token scores go over (their masked scores stayed bf16: +15..+27% -> +43..+56%, one v7x step
# -5% -> +18%, a warning) and the widening rule takes T5 and CLIP steps under (t5_large +7% -> -24%): sharded1
# 14 -> 13, sharded4 35 -> 33 and 39 -> 38, sharded5 30 -> 28, sharded6 verdicts 36 -> 35 (an expert-choice MoE
# step +18% "tight" -> +24%, a warning).
# sharded8 (16 more kinds, held out, compiled after the freeze at cc49e4d, scored once): 24/36 and 35/36.
# Then: in a data-parallel step (weights replicated), a weight gradient summed over the split examples is
# whole, not split (the ViT-e's stacked f32 gradient accumulators: -17% -> -3%; dp_L8_over -16% -> -1%,
# wide_dp_L4_offload -20% -> +3%), and a dot's two largest free dims are laid out minor when both are
# 128 or more (197-token attention scores padded to 200 x 256): sharded1 14, sharded2 28, sharded4 34,
# sharded5 29.
# Then (after the freeze at e76b444, from sharded9's v7x mLSTM generation loop, +610%): a broadcast of a scalar
# that a sharding annotation reads is created split (its zero-filled 192G state was 24G per device). The v7x
# beam search of sharded8 had leaned on its cache's zeros counted whole: +11% (E1000) -> -15% (ok, an OOM
# missed): sharded8 24 -> 23 and 35 -> 34.
# sharded9 (16 more kinds, held out, compiled after the freeze at e76b444, scored once on it): 21/31 and 24/31 with
# one false error (that mLSTM loop); with the broadcast rule above 21/31 and 26/31, no false error. Then a batched
# gather (a vmapped embedding lookup, `operand_batching_dims`) takes its indices' splits as an unbatched one does: the
# v6e GPT ensemble (members x data mesh) +57% E1000 -> -8%: 22/31 and 27/31; every other folder unchanged.
FLOORS = {"sharded1": (14, 16, 16), "sharded2": (28, 30, 31), "sharded3": (29, 34, 34), "sharded4": (34, 38, 40),
          "sharded5": (29, 36, 40), "sharded6": (29, 35, 36), "sharded7": (21, 27, 28), "sharded8": (23, 34, 36),
          "sharded9": (22, 27, 31), "sharded10": (25, 30, 32), "sharded11": (27, 31, 32), "sharded12": (29, 33, 34),
          "sharded13": (23, 29, 29), "sharded14": (24, 36, 36), "sharded18": (27, 30, 31), "sharded19": (17, 21, 22),
          "sharded20": (25, 34, 34), "sharded21": (33, 35, 36),
          "sharded22": (22, 30, 33)}
# sharded10 (16 more kinds, held out, compiled after the freeze at 10a704a, scored once on it): 20/32 and 28/32 with
# one false error, a v7x Memorizing Transformer (+307%: its approximate top-k over a 32k-entry memory). Then:
# top-k, sort and PartialReduce keep their operand's split on the dims they do not work along, zeros and iotas
# read by one op of their dims (a scatter through its batching dims) are created split like it, and a top-k the
# compiler sorts whole holds two operand-sized buffers: that program +307% -> +8%, its v6e twin +33% -> 0%
# (an OOM, now by its three 16G sort buffers): 22/32 and 29/32, no false error; sharded1-9 unchanged.
# sharded11 (16 more kinds, held out, compiled after the freeze at b57c6c7, scored once on it): 26/32 and 31/32, no
# false E1000, all 11 OOMs flagged; the one disagreement is a warning within the stated error (a v7x circular
# pipeline, +24%); after optimization within 5% 31/32.
# sharded12 (12 more kinds, held out, compiled after the freeze at 4096456 (HBM code of 08e0fae), scored once): 27/34 and
# 32/34, no false E1000, 11 of 12 OOMs flagged (a v6e multi-LoRA generation loop, -35%, missed); the other disagreement
# is a warning within the stated error on an accepted v6e DeBERTa step (+9%); after optimization within 5% 30/34.
# Then (after sharded10-12 were scored): a donated argument a while loop updates, whose entry layout orders its dims
# otherwise than the program prints it, keeps the loop's copy as a buffer of its own (decode loops over KV caches):
# sharded10 22 -> 25 and 29 -> 30 (an H2O generation loop's OOM found; with v7x's re-tiling, an MLA decoder -41% -> -4%), sharded11 26 -> 27, sharded12 27 -> 29 and
# 32 -> 33 (the multi-LoRA loop's OOM found); sharded1-9 unchanged.
# sharded13 (10 more kinds, held out, compiled after the freeze at 56e11af, the rule above included, scored once): 23/29
# and 29/29, no false E1000, all 10 OOMs flagged. On the model before the rule (4096456) it was 21/29: two decode
# loops over relaid caches -47% and -49%, with it -8% and -8%.
# sharded14 (12 more kinds, held out, compiled after the freeze at 40074c7, whose HBM code is 09f0025's, scored
# once): 24/36 and 36/36, no false E1000, all 12 OOMs flagged; after optimization within 5% 34/36. Its misses:
# reversible-layer and DiLoCo steps over (+19..+31%), DGCNN's kNN graph features and a chunked-CE step under
# (-28..-41%), a v7x blockwise-attention step +41% (an OOM, flagged).
# sharded18 (12 more kinds, held out, compiled after the freeze at 911ec84, whose HBM code is 50251b7's, scored once): 24/31
# and 30/31, no false E1000, all 14 OOMs flagged; after optimization within 5% 15/17. The one disagreement is a warning
# within the stated error on an accepted v5e IMPALA V-trace step (+34%); a weight-offload generation loop (-40%) and a
# LlamaGen CFG loop (-44%) are under but their OOMs flagged. The same on the session's starting model (3f8c45e).
# Then a donated cache relaid for its generation loop is sized in the layout the loop prints (its padding too) unless
# that layout's minor dim is tiny: a LlamaGen CFG loop's K/V caches [.., 12, 64] -44% -> -1%, decode loops of
# sharded10-14 -13..-8% -> -5..0%; sharded18 25/31, every other count unchanged.
# A program rejected for something else than HBM is no longer scored (sharded6's v6e Swin step, a compiler error
# with a memory report, had counted as within 15% and as an OOM missed: sharded6 31/37 -> 30/36, verdicts 35/36).
# sharded19 (8 more kinds, held out, compiled after the freeze at c75e9cd with that rule, scored once): 16/22 and 21/22,
# no false E1000, all 9 OOMs flagged, after optimization within 5% 12/13. The disagreement is a warning within the
# stated error (a v5p gossip-averaging step, +13%); YOCO generation loops (-58%, -59%) and a prompt-lookup decoding
# loop (-53%) are under. A v5p YOCO loop the compiler rejected for scoped VMEM (E1001 in a fusion) is not scored.
# Then (after sharded18 and 19 were scored): f32 scores masked per example by jax's `_where` (a prompt's padding, not
# a causal mask) are kept, unless the figure with them is over capacity (XLA's rematerialisation recomputes them):
# a prompt-lookup prefill -53% -> -1%, best-of-n loops -25% -> -5% and -17% -> +11%, a v6e YOCO loop -58% -> +28%;
# sharded18 27/31, sharded19 17/22; a v5p chunked-prefill step whose per-example-masked scores stayed bf16 0% -> +21%:
# sharded6 29/36. 404/510 within 15% over all folders (401 before), verdicts unchanged.
# Then a dot whose operands are both split on the contracted dim, with a result larger than either (a vocabulary
# projection), has its partial sums reduce-scattered onto the examples: a v7x Gemma FSDP x TP step +128% (E1000) ->
# -17% (ok), its logits f32[8, 4096, 128000] per device as compiled; two v5e/v5p FSDP x TP steps whose logits had
# been the predicted peak +6%, +2% -> -15%, -19% (their attention buffers are under): sharded2 verdicts 30/31,
# sharded3 29/34; 403/510 within 15%, verdicts 487/510.
# sharded20 (9 more kinds: masked-diffusion LM, ORPO, I-JEPA, Slot Attention, PGD adversarial training, evolution
# strategies and PGD in `shard_map`, Recurrent Memory Transformer, an EnCodec-like RVQ codec, contrastive decoding;
# compiled after the freeze at 2b2d1d3 with the per-example-mask rule, scored once): 25/34 and 34/34, no false E1000,
# all 11 OOMs flagged, after optimization within 5% 22/23; on the session's starting model 24/34. Under: evolution
# strategies in `shard_map` (-25..-32%), an RVQ step (-28%), a v7x contrastive-decoding OOM (-39%); over: RMT (+27%).
# sharded21 (9 more kinds: XLNet two-stream, PaLM parallel blocks with a 256k vocabulary, KTO against a frozen
# reference, a CRF tagger, WaveNet, linear-attention sequence parallelism and all-gather context parallelism in
# `shard_map`, EAGLE speculative decoding, diverse beam search; compiled after the freeze at 8a264b6, whose HBM code
# is 0260b42's, scored once): 33/36 and 35/36, no false E1000, 9/10 OOMs flagged, after optimization within 5% 21/26.
# The disagreement is a v7x diverse-beam loop under (-37%, an OOM missed: its cache reordered to the chosen parents
# every step); the other misses are a v5e all-gather context-parallel step over (+17%, an OOM, flagged) and a v7x
# PaLM step with host-offloaded optimizer state under (-17%).
# sharded22 (9 more kinds: Infini-attention, PatchTST, SOAP, DCN-v2 with all_to_all, a 3-D U-Net with halo exchange,
# VICReg, top-k gradient compression, Fusion-in-Decoder and LLaVA decoding; compiled after the freeze at 29e1ebd, whose
# HBM code is 0260b42's, three SOAP steps over the 240 s compile limit left out; scored once): 22/33 and 30/33, no false
# E1000, 9/10 OOMs flagged, after optimization within 5% 21/23. Under: 3-D U-Net activations (-25..-60%: a v6e OOM
# missed), DCN-v2 embedding exchanges (-31%, -32%), FiD caches on v5e/v6e (-24%, -37%); over: FiD on v5p/v7x (+81%,
# +25%), a v5p DCN-v2 step with host-offloaded optimizer state (+44%), LLaVA on v5p (+21%). The other two disagreements
# are warnings within the stated error on accepted top-k gradient-compression steps (+14%).
# (sharded15-17 were compiled by the session of 2026-12-05, whose submission did not land: their data is not here.)
FALSE_ERRORS: dict[str, int] = {}


def _report_total(case: Path) -> int | None:
    for name in ("memory-usage-report.txt", "memory-usage-report.txt.xz"):
        path = case / name
        if path.exists():
            import lzma
            text = lzma.open(path, "rt").read() if name.endswith(".xz") else path.read_text()
            m = re.search(r"Memory Space: default \(color=0\)\nTotal bytes: (\d+)", text)
            return int(m.group(1)) if m else None
    return None


def _stage(case: Path, stage: str) -> Path | None:
    for name in (f"{stage}.txt", f"{stage}.txt.xz"):
        if (case / name).exists():
            return case / name
    return None


def _simulated(path: Path, generation: str):
    """hloscan's figure for the largest module of a dump, without the reports beside it."""
    return max(analyze_modules(load(path), str(path), generation, use_reports=False), key=lambda r: r.xla_total_bytes)


@pytest.mark.parametrize("folder", sorted(FLOORS))
def test_per_device_prediction_before_partitioning(folder: str) -> None:
    within = agree = total = false_errors = checked_args = 0
    for row in tsv_rows(ORACLE / folder / "MANIFEST.tsv"):
        case = ORACLE / folder / row["case"]
        want = _report_total(case)
        before = _stage(case, "before_optimizations")
        if want is None or before is None:
            continue
        if row["verdict"] != "ok" and row["error_kind"] != "hbm_temporaries_oom":
            continue  # rejected for something else than HBM (scoped VMEM in a fusion): no HBM verdict to agree with
        r = _simulated(before, row["generation"])
        oom = row["verdict"] != "ok"
        total += 1
        within += abs(r.xla_total_bytes - want) <= 0.15 * want
        agree += (r.verdict == "E1000") == oom
        false_errors += r.verdict == "E1000" and r.certainly_over and not oom
        assert r.devices > 1, row["case"]
        # One device's arguments are compiled.memory_analysis()'s (host-memory arguments excluded).
        if row["argument_size_in_bytes"]:  # empty for a program that did not compile (OOM)
            want_args = int(row["argument_size_in_bytes"])
            assert abs(r.arguments_bytes - want_args) <= 0.005 * want_args, row["case"]
            checked_args += 1
        print(f"{row['case']:50s} {r.xla_total_bytes / 2**30:7.2f}G vs {want / 2**30:7.2f}G "
              f"{(r.xla_total_bytes - want) / want:+.0%} {r.verdict}")
    floor_within, floor_agree, cases = FLOORS[folder]
    print(f"{folder}: within 15% {within}/{total}, verdicts {agree}/{total}, false errors {false_errors}")
    assert total == cases and checked_args >= total // 2
    assert within >= floor_within and agree >= floor_agree and false_errors <= FALSE_ERRORS.get(folder, 0)


@pytest.mark.parametrize("folder", sorted(FLOORS))
def test_signature_per_device_sizes_before_partitioning_equal_the_compiled_ones(folder: str) -> None:
    """The E0102 sizes of a sharded program: each parameter and output of the before-optimization module, cut
    as its sharding says, has the bytes of the compiled (partitioned) module's buffer for one device."""
    compared = 0
    for case in sorted((ORACLE / folder).glob("*__programs__*")):
        before, after = _stage(case, "before_optimizations"), _stage(case, "after_optimizations")
        if before is None or after is None or not load(after):
            continue  # a program the compiler rejected has no after-optimization module
        old, new = (module_signature(max(load(p), key=lambda m: len(m.entry.instructions))) for p in (before, after))
        assert len(old.parameters) == len(new.parameters) and len(old.outputs) == len(new.outputs), case.name
        for o, n in zip(old.parameters + old.outputs, new.parameters + new.outputs):
            assert (o.device_bytes, o.label) == (n.bytes, o.label), case.name
            compared += 1
        assert not diff_signatures(old, new).e0102_risks, case.name
        # `hloscan memory`'s per-device totals are the compiled module's totals, space by space.
        per_device = {t.memory_space: (t.device_parameter_bytes, t.device_output_bytes)
                      for t in memory_report(old).spaces}
        assert per_device == {t.memory_space: (t.parameter_bytes, t.output_bytes) for t in memory_report(new).spaces}
        assert memory_report(old).devices > 1 and memory_report(new).devices == 1
        split = [e for e in old.parameters if e.device_shape is not None]
        # A shard can keep the padded size of the whole (a split dim inside one tile); most are smaller.
        assert split and all(e.devices > 1 and e.device_bytes <= e.bytes for e in split), case.name
        assert any(e.device_bytes < e.bytes for e in split), case.name
    assert compared > 1000


@pytest.mark.parametrize("case", ["sharded3/v6e__programs__mistral_zero_L8", "sharded3/v7x__programs__mistral_zero_L16_b32",
                                  "sharded3/v7x__programs__decode_phi_tp4_b256"])
def test_temporaries_in_donated_argument_buffers_after_optimization(case: str) -> None:
    """ZeRO train steps rotate their replicated parameters through relayout copies that XLA places in the
    buffers of donated arguments already read (and a tp decode step its cache update in the output's
    buffer): counting them in the heap put the simulated figure 20-38% over the compiler's."""
    path = ORACLE / case
    after = _stage(path, "after_optimizations")
    generation = path.name.split("__", 1)[0]
    result = _simulated(after, generation)
    want = _report_total(path)
    assert abs(result.xla_total_bytes - want) <= 0.02 * want, (result.xla_total_bytes, want)


def test_top_k_over_a_sharded_memory_is_split_and_sorted_whole() -> None:
    """A kNN memory's top-32 of [batch, heads, queries, 32768] scores split by batch: exact top-k is sorted whole
    (scores, sorted values and s32 indices: 3 x 16G per device on v6e), the approximate one reads an iota split like
    its scores; counted whole, the iota alone was 128G on one v7x device (a false E1000)."""
    for case, generation in (("v6e__programs__memorizing_d2k_l16_fsdp_full_b16_s2k_m32k", "v6e"),
                             ("v7x__programs__memorizing_d4k_l24_fsdp_full_b16_s2k_m32k_approx", "v7x")):
        path = ORACLE / "sharded10" / case
        before = _stage(path, "before_optimizations")
        r = _simulated(before, generation)
        want = _report_total(path)
        assert abs(r.xla_total_bytes - want) <= 0.10 * want, (case, r.xla_total_bytes, want)


def test_a_vmapped_embedding_lookup_keeps_the_tokens_split() -> None:
    """An ensemble vmapped over its members (tables P(member), tokens P(member, data)) gathers with
    operand_batching_dims: the residual stream is split by member and by data (4 pieces on 4 devices), not by the
    table's member split alone (2 pieces: its stacked attention residuals twice the compiler's, a false E1000)."""
    path = ORACLE / "sharded9" / "v6e__programs__ens8_gpt125m_members2_dp2_none_b4_s1k"
    r = _simulated(_stage(path, "before_optimizations"), "v6e")
    want = _report_total(path)
    assert abs(r.xla_total_bytes - want) <= 0.10 * want and r.verdict != "E1000", (r.xla_total_bytes, want)


@pytest.mark.parametrize("case", ["sharded12/v6e__programs__multilora_llama13b_dp2_tp2_b16_s3k_a32_r16",
                                  "sharded11/v5p__programs__jacobi_llama13b_dp2_tp2_b112_s4k_n16_x2",
                                  "sharded10/v5p__programs__h2o_llama13b_dp2_tp2_b128_bg2k_p1536_n1k",
                                  # v7x: a latent cache [.., 8192, 512] re-tiled from (8,128) to (16,128) for the loop
                                  "sharded10/v7x__programs__mla_v2dense60_dp2_tp4_b288_s8k_n64"])
def test_a_relaid_cache_a_loop_updates_is_copied_for_the_loop(case: str) -> None:
    """Generation loops over donated KV caches whose entry layout puts the heads dim major to the sequence
    ({4,2,3,1,0}, sparing padding) while the loop works in the printed {4,3,2,1,0}: XLA copies each cache into the
    loop's layout (a cache-sized buffer per cache) and back at the end. Counted as aliased in place, these were
    35-51% under the compiler and two OOMs went unflagged."""
    path = ORACLE / case
    generation = path.name.split("__", 1)[0]
    r = _simulated(_stage(path, "before_optimizations"), generation)
    want = _report_total(path)
    assert abs(r.xla_total_bytes - want) <= 0.15 * want and r.verdict == "E1000", (r.xla_total_bytes, want)


@pytest.mark.parametrize("case", ["sharded12/v5e__programs__sae_d4k_f128k_k32_dp2_tp2_n16k",
                                  "sharded10/v6e__programs__memorizing_d2k_l16_fsdp_full_b16_s2k_m32k"])
def test_a_sort_writes_into_its_only_readers_operands_after_optimization(case: str) -> None:
    """A top-k done by a sort of [rows, k] scores and s32 indices: the sort is each operand's only reader, so XLA
    writes the sorted arrays into the operands' buffers. Counted as new buffers, the scheduled dumps' figures were
    +22% and +30% over the compiler's."""
    path = ORACLE / case
    generation = path.name.split("__", 1)[0]
    r = _simulated(_stage(path, "after_optimizations"), generation)
    want = _report_total(path)
    assert abs(r.xla_total_bytes - want) <= 0.02 * want, (r.xla_total_bytes, want)


@pytest.mark.parametrize("case, generation, tolerance", [
    ("sharded18/v5e__programs__cfgar_llamagen_xxl_dp2_tp2_b96_n576", "v5e", 0.05),  # [.., 12, 64] padded 2.67x
    ("sharded13/v5p__programs__jamba_g8r7_dp2_tp2_b256_s32k", "v5p", 0.10),  # [.., 8192, 16] not padded 8x
])
def test_a_cache_relaid_for_its_loop_takes_the_printed_layouts_padding(case: str, generation: str, tolerance: float) -> None:
    """A donated cache whose entry layout orders its dims otherwise than the program prints them is copied into the
    loop's layout: the printed one, padding included (two 11.25G K/V buffers per device where the data is 4.22G),
    unless its minor dim is tiny (a Mamba state's 16, which layout assignment does not keep minor)."""
    path = ORACLE / case
    r = _simulated(_stage(path, "before_optimizations"), generation)
    want = _report_total(path)
    assert abs(r.xla_total_bytes - want) <= tolerance * want, (r.xla_total_bytes, want)
