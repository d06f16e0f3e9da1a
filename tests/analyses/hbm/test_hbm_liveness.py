"""The HBM liveness simulation: XLA's buffer semantics on small hand-written modules (sizes by hand)."""

from __future__ import annotations

from pathlib import Path

from corpus import FIXTURES as FIXTURES_ROOT
from hloscan.analyses.hbm import analyze_modules
from hloscan.analyses.hbm.liveness import simulate
from hloscan.hlo.loader import load_file, load_text

FIXTURES = FIXTURES_ROOT / "hbm"
TILE = 256 * 128 * 4  # f32[256,128]{1,0:T(8,128)}: no padding, 128 KiB


def _one(name: str):
    path = str(FIXTURES / name)
    return load_file(path).modules[0], path


def test_loop_carried_stack_is_updated_in_place_and_host_copy_is_not_hbm():
    module, path = _one("loop.after_optimizations.txt")
    sim = simulate(module, predict=False)
    roles = {b.value.inst.name: b.role for b in sim.buffers if b.bytes}
    # The stacked buffer is the loop state, written by the in-place dynamic-update-slice and returned.
    assert roles["big"] == "output" and "upd" not in roles
    assert roles["cs"] == "host"                        # copy-start/copy-done into S(5)
    assert roles["a"] == "parameter" and "s2" not in roles  # s2 is written into parameter 0 (input_output_alias)
    # Only one 128 KiB temporary is live at a time: %t in the body, %tmp after the loop.
    assert sim.peak_bytes == TILE


def test_loop_figures_and_live_at_peak_name_the_python_line():
    module, path = _one("loop.after_optimizations.txt")
    [r] = analyze_modules([module], path, "v5e")
    assert (r.kind, r.stage) == ("simulated", "after_optimizations")
    assert r.arguments_bytes == 2 * TILE
    assert r.aliased_bytes == TILE
    assert r.outputs_bytes == TILE + 4 * TILE + 512     # two leaves + v5e's 512-byte tuple table
    assert r.temporaries_bytes == TILE
    # The peak (one 128 KiB temporary) is reached in the body (%t) and after the loop (%tmp).
    assert r.live_at_peak[0].bytes == TILE and r.live_at_peak[0].source in ("model.py:12", "model.py:20")
    assert r.verdict == "ok"


def test_prediction_fuses_elementwise_ops_and_drops_host_annotated_values():
    module, path = _one("predict.before_optimizations.txt")
    sim = simulate(module, predict=True)
    names = {b.value.inst.name: b.role for b in sim.buffers if b.bytes}
    assert "e" not in names and "n" not in names        # fused into the dot
    assert names["h"] == "host"
    assert names["o"] == "output"
    assert sim.peak_bytes == 2 * TILE                   # %d and %d2 live together
    [r] = analyze_modules([module], path, "v6e")
    assert r.kind == "predicted" and r.arguments_bytes == TILE + 128 * 128 * 4


def test_untiled_prediction_gets_default_tpu_tiles():
    text = """HloModule pad
%lt (a: f32[], b: f32[]) -> pred[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %c = pred[] compare(%a, %b), direction=LT
}
ENTRY %main (x: f32[8,3]) -> f32[8,3] {
  %x = f32[8,3]{1,0} parameter(0)
  %s = f32[8,3]{1,0} sort(%x), dimensions={1}, to_apply=%lt
  ROOT %d = f32[8,3]{1,0} dot(%s, %s), lhs_contracting_dims={1}, rhs_contracting_dims={1}
}
"""
    [module] = load_text(text)
    sim = simulate(module, predict=True)
    sort = next(b for b in sim.buffers if b.value.inst.name == "s")
    # Unpadded 96 bytes; the cheapest TPU layout puts the 8 minor (128 lanes) and 3 rows in a (4,128) tile.
    assert sort.bytes == 4 * 128 * 4


def test_dus_fusion_writes_into_its_operand():
    text = """HloModule f, is_scheduled=true, entry_computation_layout={(f32[4,256,128]{2,1,0:T(8,128)}, f32[1,256,128]{2,1,0:T(8,128)})->f32[]{:T(128)}}
%fc (p0: f32[4,256,128], p1: f32[1,256,128]) -> f32[4,256,128] {
  %p0 = f32[4,256,128]{2,1,0:T(8,128)} parameter(0)
  %p1 = f32[1,256,128]{2,1,0:T(8,128)} parameter(1)
  %z = s32[] constant(0)
  ROOT %u = f32[4,256,128]{2,1,0:T(8,128)} dynamic-update-slice(%p0, %p1, %z, %z, %z)
}
%add (l: f32[], r: f32[]) -> f32[] {
  %l = f32[] parameter(0)
  %r = f32[] parameter(1)
  ROOT %s = f32[] add(%l, %r)
}
ENTRY %main (a: f32[4,256,128], b: f32[1,256,128]) -> f32[] {
  %a = f32[4,256,128]{2,1,0:T(8,128)} parameter(0)
  %b = f32[1,256,128]{2,1,0:T(8,128)} parameter(1)
  %c = f32[4,256,128]{2,1,0:T(8,128)} copy(%a)
  %f = f32[4,256,128]{2,1,0:T(8,128)} fusion(%c, %b), kind=kLoop, calls=%fc
  %z = f32[]{:T(128)} constant(0)
  ROOT %r = f32[]{:T(128)} reduce(%f, %z), dimensions={0,1,2}, to_apply=%add
}
"""
    [module] = load_text(text)
    sim = simulate(module, predict=False)
    # %c and %f share one buffer: the peak is one 512 KiB array, not two.
    assert sim.peak_bytes == 4 * TILE



def test_a_kernel_writes_its_aliased_output_into_the_operand():
    """A custom call's `output_to_operand_aliasing` (a Pallas kernel's input_output_aliases) names the operand
    whose buffer its output takes: the output is no second buffer, whole or in a tuple."""
    template = """HloModule k, is_scheduled=true, entry_computation_layout={(f32[4,256,128]{2,1,0:T(8,128)}, f32[4,256,128]{2,1,0:T(8,128)})->f32[]{:T(128)}}
%add (l: f32[], r: f32[]) -> f32[] {
  %l = f32[] parameter(0)
  %r = f32[] parameter(1)
  ROOT %s = f32[] add(%l, %r)
}
ENTRY %main (a: f32[4,256,128], b: f32[4,256,128]) -> f32[] {
  %a = f32[4,256,128]{2,1,0:T(8,128)} parameter(0)
  %b = f32[4,256,128]{2,1,0:T(8,128)} parameter(1)
  %c = f32[4,256,128]{2,1,0:T(8,128)} copy(%b)
  SHAPE custom-call(%a, %c), custom_call_target="tpu_custom_call", output_to_operand_aliasing={ALIAS}
  %z = f32[]{:T(128)} constant(0)
  ROOT %r = f32[]{:T(128)} reduce(%f, %z), dimensions={0,1,2}, to_apply=%add
}
"""
    whole = template.replace("SHAPE", "%f = f32[4,256,128]{2,1,0:T(8,128)}").replace("ALIAS", "{}: (1, {})")
    in_tuple = template.replace("SHAPE", "%t = (f32[4,256,128]{2,1,0:T(8,128)}, f32[]{:T(128)})").replace(
        "ALIAS", "{0}: (1, {})").replace("%z = ", "%f = f32[4,256,128]{2,1,0:T(8,128)} get-tuple-element(%t), index=0\n  %z = ")
    for text in (whole, in_tuple):
        [module] = load_text(text)
        sim = simulate(module, predict=False)
        # %c and the kernel's output share one buffer: one 512 KiB temporary at the peak, not two
        assert sim.peak_bytes <= 4 * TILE + 512, text
        assert not any(b.value.inst.name in ("f", "t") and b.bytes >= 4 * TILE for b in sim.buffers)


OFFLOADED_UPDATE = """HloModule offloaded_update, is_scheduled=true, entry_computation_layout={(f32[256,128]{1,0:T(8,128)}, f32[256,128]{1,0:T(8,128)S(5)})->(f32[256,128]{1,0:T(8,128)S(5)}, f32[256,128]{1,0:T(8,128)})}

ENTRY %main (p: f32[256,128], m: f32[256,128]) -> (f32[256,128], f32[256,128]) {
  %p = f32[256,128]{1,0:T(8,128)} parameter(0)
  %m = f32[256,128]{1,0:T(8,128)S(5)} parameter(1)
  %in-start = (f32[256,128]{1,0:T(8,128)}, f32[256,128]{1,0:T(8,128)S(5)}, u32[]{:S(2)}) copy-start(%m)
  %in-done = f32[256,128]{1,0:T(8,128)} copy-done(%in-start)
  %new = f32[256,128]{1,0:T(8,128)} add(%in-done, %p)
  %out-start = (f32[256,128]{1,0:T(8,128)S(5)}, f32[256,128]{1,0:T(8,128)}, u32[]{:S(2)}) copy-start(%new)
  %other = f32[256,128]{1,0:T(8,128)} multiply(%p, %p)
  %out-done = f32[256,128]{1,0:T(8,128)S(5)} copy-done(%out-start)
  ROOT %r = (f32[256,128]{1,0:T(8,128)S(5)}, f32[256,128]{1,0:T(8,128)}) tuple(%out-done, %other)
}
"""


def test_a_device_buffer_copied_to_host_is_a_temporary_read_until_the_copy_is_done():
    module = load_text(OFFLOADED_UPDATE, "offload.txt")[0]
    sim = simulate(module, predict=False)
    lives = {b.value.inst.name: b for b in sim.buffers if b.bytes}
    done = next(k for k, (_, inst) in enumerate(sim.positions) if inst.name == "out-done") + 1
    # The copy's value is its S(5) destination; its device source is no output of the program.
    assert lives["new"].role == "temp" and lives["out-start"].role == "host"
    assert lives["new"].end >= done
    # %in-done and %new are both in HBM at the add; %in-done dies before the output %other is written, so
    # XLA's buffer assignment puts it in %other's buffer and only %new is in the temporaries heap.
    assert lives["in-start"].role == "in-argument-or-output"
    assert sim.peak_bytes == TILE


DONATED = """HloModule donated, is_scheduled=true, input_output_alias={ {0}: (0, {}, may-alias) }, entry_computation_layout={(f32[256,128]{1,0:T(8,128)}, f32[256,128]{1,0:T(8,128)})->(f32[256,128]{1,0:T(8,128)})}

ENTRY %main (p: f32[256,128], q: f32[256,128]) -> (f32[256,128]) {
  %p = f32[256,128]{1,0:T(8,128)} parameter(0)
  %q = f32[256,128]{1,0:T(8,128)} parameter(1)
  %a = f32[256,128]{1,0:T(8,128)} multiply(%p, %p)
  %c = f32[256,128]{1,0:T(8,128)} copy(%q)
  %t = f32[256,128]{1,0:T(8,128)} add(%a, %c)
  %u = f32[256,128]{1,0:T(8,128)} copy(%t)
  %new = f32[256,128]{1,0:T(8,128)} add(%u, %q)
  ROOT %r = (f32[256,128]{1,0:T(8,128)}) tuple(%new)
}
"""


def test_a_donated_argument_holds_temporaries_between_its_last_read_and_its_update():
    """%p is last read by %a and its buffer is written again by %new (the aliased output). %c lives wholly in
    between and takes the buffer (XLA's buffer assignment shares an allocation among values whose lives do
    not meet); %a starts at %p's last read, %t meets %c, and %u is read where %new is written."""
    sim = simulate(load_text(DONATED, "donated.txt")[0], predict=False)
    roles = {b.value.inst.name: b.role for b in sim.buffers if b.bytes}
    assert roles["p"] == "parameter"
    assert [n for n, r in roles.items() if r == "in-argument-or-output"] == ["c"]
    assert sim.peak_bytes == 2 * TILE


EXPENSIVE_TWICE = """HloModule expensive

%add (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %c = f32[] add(%a, %b)
}

ENTRY %main (x: f32[1024,1024]) -> (f32[1024], f32[1024,1024]) {
  %x = f32[1024,1024]{1,0} parameter(0)
  %e = f32[1024,1024]{1,0} OP(%x)
  %zero = f32[] constant(0)
  %s = f32[1024]{0} reduce(%e, %zero), dimensions={1}, to_apply=%add
  %big = f32[1024,1024]{1,0} dot(%x, %x), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  %r = f32[1024,1024]{1,0} multiply(%e, %big)
  ROOT %t = (f32[1024], f32[1024,1024]) tuple(%s, %r)
}
"""


def test_an_expensive_value_with_two_readers_keeps_a_buffer_before_fusion():
    """XLA fuses a cheap op into each of its readers, but does not duplicate an expensive one (exp): read
    by a reduce and again after a dot, the exp keeps its own 4 MiB buffer across the dot."""
    def named(op: str) -> set[str]:
        sim = simulate(load_text(EXPENSIVE_TWICE.replace("OP", op), "e.txt")[0], predict=True)
        return {b.value.inst.name for b in sim.buffers if b.role == "temp" and b.bytes >= 4 * 1024 * 1024}
    assert "e" in named("exponential")
    assert "e" not in named("negate")


# A softmax over the scores of a bf16 dot: MASK is the scores as they come (unmasked) or a select by a broadcast
# causal mask; the probabilities feed a second dot.
SOFTMAX = """HloModule softmax

%add (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %c = f32[] add(%a, %b)
}

%max (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %c = f32[] maximum(%a, %b)
}

ENTRY %main (q: bf16[1024,128], k: bf16[1024,128], v: bf16[1024,128], causal: pred[1024,1024]) -> bf16[1024,128] {
  %q = bf16[1024,128]{1,0} parameter(0)
  %k = bf16[1024,128]{1,0} parameter(1)
  %v = bf16[1024,128]{1,0} parameter(2)
  %causal = pred[1024,1024]{1,0} parameter(3)
  %s = bf16[1024,1024]{1,0} dot(%q, %k), lhs_contracting_dims={1}, rhs_contracting_dims={1}
  %f = f32[1024,1024]{1,0} convert(%s)
  %mask = pred[1024,1024]{1,0} broadcast(%causal), dimensions={0,1}
  %low = f32[] constant(-1e+30)
  %lows = f32[1024,1024]{1,0} broadcast(%low), dimensions={}
  %masked = f32[1024,1024]{1,0} select(%mask, %f, %lows)
  %ninf = f32[] constant(-inf)
  %m = f32[1024]{0} reduce(MASKED, %ninf), dimensions={1}, to_apply=%max
  %mb = f32[1024,1024]{1,0} broadcast(%m), dimensions={0}
  %d = f32[1024,1024]{1,0} subtract(MASKED, %mb)
  %e = f32[1024,1024]{1,0} exponential(%d)
  %zero = f32[] constant(0)
  %z = f32[1024]{0} reduce(%e, %zero), dimensions={1}, to_apply=%add
  %zb = f32[1024,1024]{1,0} broadcast(%z), dimensions={0}
  %p = f32[1024,1024]{1,0} divide(%e, %zb)
  %pb = bf16[1024,1024]{1,0} convert(%p)
  ROOT %o = bf16[1024,128]{1,0} dot(%pb, %v), lhs_contracting_dims={1}, rhs_contracting_dims={0}
}
"""


def _temporaries(text: str) -> dict[str, int]:
    sim = simulate(load_text(text, "softmax.txt")[0], predict=True)
    return {b.value.inst.name: b.bytes for b in sim.buffers if b.role == "temp" and b.bytes >= 1024 * 1024}


def test_a_softmax_exp_that_widens_bf16_scores_is_recomputed_in_each_reader():
    """Unmasked bf16 scores: XLA recomputes the f32 exp in the sum's fusion and in the divide's (the v7x
    diffusion sampler of sharded7), so only the 2 MiB bf16 scores are a buffer, not a 4 MiB f32 exp."""
    assert _temporaries(SOFTMAX.replace("MASKED", "%f")) == {"s": 2 * 1024 * 1024}


def test_causally_masked_scores_are_written_in_f32_and_their_exp_kept():
    """Masked scores: the dot, convert and select are one output fusion writing f32 scores (4 MiB), and the exp
    computed from them widens nothing, so it keeps a buffer of its own for the divide (sharded1/7 train steps)."""
    assert _temporaries(SOFTMAX.replace("MASKED", "%masked")) == {"s": 4 * 1024 * 1024, "e": 4 * 1024 * 1024}



# jax's `_where` as a call returning the select itself: scores [B, S, T] of a bf16 dot masked by MASK (a prompt's
# padding, one row per example, or a causal mask shared by the batch), then a softmax's max and subtract.
WHERE_CALL = """HloModule where_call

%max (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %c = f32[] maximum(%a, %b)
}

%_where (m: pred[MASK], x: f32[B,1024,1024], y: f32[]) -> f32[B,1024,1024] {
  %m = pred[MASK]{2,1,0} parameter(0)
  %mb = pred[B,1024,1024]{2,1,0} broadcast(%m), dimensions={0,1,2}
  %x = f32[B,1024,1024]{2,1,0} parameter(1)
  %y = f32[] parameter(2)
  %yb = f32[B,1024,1024]{2,1,0} broadcast(%y), dimensions={}
  ROOT %s = f32[B,1024,1024]{2,1,0} select(%mb, %x, %yb)
}

ENTRY %main (q: bf16[B,1024,128], k: bf16[B,1024,128], mask: pred[MASK]) -> f32[B,1024,1024] {
  %q = bf16[B,1024,128]{2,1,0} parameter(0)
  %k = bf16[B,1024,128]{2,1,0} parameter(1)
  %mask = pred[MASK]{2,1,0} parameter(2)
  %s = bf16[B,1024,1024]{2,1,0} dot(%q, %k), lhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_batch_dims={0}, rhs_contracting_dims={2}
  %f = f32[B,1024,1024]{2,1,0} convert(%s)
  %low = f32[] constant(-1e+30)
  %w = f32[B,1024,1024]{2,1,0} call(%mask, %f, %low), to_apply=%_where
  %ninf = f32[] constant(-inf)
  %m = f32[B,1024]{1,0} reduce(%w, %ninf), dimensions={2}, to_apply=%max
  %mb = f32[B,1024,1024]{2,1,0} broadcast(%m), dimensions={0,1}
  ROOT %d = f32[B,1024,1024]{2,1,0} subtract(%w, %mb)
}
"""


def _where_scores(batch: int, mask: str) -> str:
    return WHERE_CALL.replace("MASK", mask).replace("B", str(batch))


def test_scores_masked_per_example_are_kept_in_f32_and_a_shared_mask_leaves_them_bf16():
    """A per-example mask: the compiled prefill steps kept the dot, convert and `_where` as one fusion writing f32
    scores (sharded19's prompt-lookup prefill); a causal mask shared by the batch left them the dot's bf16."""
    per_example = simulate(load_text(_where_scores(4, "4,1024,1024"), "w.txt")[0], predict=True)
    shared = simulate(load_text(_where_scores(4, "1,1024,1024"), "w.txt")[0], predict=True)
    def scores(sim):
        return next(b.bytes for b in sim.buffers if b.value.inst.name == "s")
    assert (per_example.kept_scores, scores(per_example)) == (1, 4 * 1024 * 1024 * 4)
    assert (shared.kept_scores, scores(shared)) == (0, 4 * 1024 * 1024 * 2)


def test_kept_scores_over_capacity_are_figured_rematerialised():
    """Over capacity with the f32 scores, XLA's rematerialisation recomputes them in their readers: the figure is
    the one without them, and a note says so. Under capacity the kept figure stands."""
    small, = load_text(_where_scores(4, "4,1024,1024"), "before_optimizations.txt")
    (r,) = analyze_modules([small], "before_optimizations.txt", "v5e", use_reports=False)
    assert not any("rematerialisation" in n for n in r.notes)
    big, = load_text(_where_scores(2048, "2048,1024,1024"), "before_optimizations.txt")  # 8G f32 scores
    kept = simulate(big, predict=True, generation="v5e")
    fused = simulate(big, predict=True, generation="v5e", keep_masked_scores=False)
    (r,) = analyze_modules([big], "before_optimizations.txt", "v5e", use_reports=False)
    assert kept.peak_bytes > fused.peak_bytes and r.temporaries_bytes == fused.peak_bytes
    assert any("rematerialisation" in n for n in r.notes)

# Optimizer state offloaded to host, moved to the device for the update after a big backward temporary.
HOST_STATE_UPDATE = """HloModule host_state, entry_computation_layout={(f32[8192,8192]{1,0}, f32[8192,8192]{1,0:S(5)})->(f32[8192,8192]{1,0}, f32[8192,8192]{1,0:S(5)})}

ENTRY %main (p: f32[8192,8192], m: f32[8192,8192]) -> (f32[8192,8192], f32[8192,8192]) {
  %p = f32[8192,8192]{1,0} parameter(0)
  %m = f32[8192,8192]{1,0} parameter(1)
  %big = f32[32768,8192]{1,0} custom-call(%p), custom_call_target="backward"
  %g = f32[8192,8192]{1,0} custom-call(%big), custom_call_target="reduce_rows"
  %md = f32[8192,8192]{1,0} custom-call(%m), custom_call_target="annotate_device_placement", frontend_attributes={_xla_buffer_placement="device"}
  %mn = f32[8192,8192]{1,0} add(%md, %g)
  %pn = f32[8192,8192]{1,0} subtract(%p, %mn)
  %mh = f32[8192,8192]{1,0} custom-call(%mn), custom_call_target="annotate_device_placement", frontend_attributes={_xla_buffer_placement="pinned_host"}
  ROOT %out = (f32[8192,8192]{1,0}, f32[8192,8192]{1,0}) tuple(%pn, %mh)
}
"""


def test_device_copies_of_host_arguments_are_predicted_between_their_use_and_the_start():
    """XLA's scheduler starts the copy of offloaded state anywhere from the program's start to its use: the
    prediction is the middle of the two peaks and says so."""
    (module,) = load_text(HOST_STATE_UPDATE)
    late = simulate(module, predict=True)
    early = simulate(module, predict=True, hoist_host_copies=True)
    assert late.host_copies == early.host_copies == 1
    mib = 2**20
    # At use the backward's 1G temporary and the 256M gradient are the peak; from the start, the state's 256M
    # device copy is live beside them.
    assert (late.peak_bytes, early.peak_bytes) == (1280 * mib, 1536 * mib)
    (r,) = analyze_modules([module], "before_optimizations.txt", "v6e", use_reports=False)
    bounds = [simulate(module, predict=True, generation="v6e", hoist_host_copies=h).peak_bytes for h in (False, True)]
    assert bounds[0] < bounds[1] and r.temporaries_bytes == sum(bounds) // 2
    assert any("host-memory argument(s) copied to the device" in n for n in r.notes)


# A decode step's layer scan: it reads each layer of the donated cache and stacks the updated layers into a new
# cache (zeros to start), the output aliased to the donated argument.
SCAN_OVER_DONATED = """HloModule scan_donated, input_output_alias={ {}: (0, {}, may-alias) }

%cond (s: (s32[], f32[4,1024,256], f32[4,1024,256])) -> pred[] {
  %s = (s32[], f32[4,1024,256]{2,1,0}, f32[4,1024,256]{2,1,0}) parameter(0)
  %i = s32[] get-tuple-element(%s), index=0
  %n = s32[] constant(4)
  ROOT %c = pred[] compare(%i, %n), direction=LT
}

%body (s: (s32[], f32[4,1024,256], f32[4,1024,256])) -> (s32[], f32[4,1024,256], f32[4,1024,256]) {
  %s = (s32[], f32[4,1024,256]{2,1,0}, f32[4,1024,256]{2,1,0}) parameter(0)
  %i = s32[] get-tuple-element(%s), index=0
  %old = f32[4,1024,256]{2,1,0} get-tuple-element(%s), index=1
  %new = f32[4,1024,256]{2,1,0} get-tuple-element(%s), index=2
  %z = s32[] constant(0)
  %layer = f32[1,1024,256]{2,1,0} dynamic-slice(%old, %i, %z, %z), dynamic_slice_sizes={1,1024,256}
  %upd = f32[1,1024,256]{2,1,0} custom-call(%layer), custom_call_target="attend"
  %put = f32[4,1024,256]{2,1,0} dynamic-update-slice(%new, %upd, %i, %z, %z)
  %one = s32[] constant(1)
  %j = s32[] add(%i, %one)
  ROOT %t = (s32[], f32[4,1024,256]{2,1,0}, f32[4,1024,256]{2,1,0}) tuple(%j, %old, %put)
}

ENTRY %main (cache: f32[4,1024,256]) -> f32[4,1024,256] {
  %cache = f32[4,1024,256]{2,1,0} parameter(0)
  %zero = f32[] constant(0)
  %stack = f32[4,1024,256]{2,1,0} broadcast(%zero), dimensions={}
  %i0 = s32[] constant(0)
  %t = (s32[], f32[4,1024,256]{2,1,0}, f32[4,1024,256]{2,1,0}) tuple(%i0, %cache, %stack)
  %w = (s32[], f32[4,1024,256]{2,1,0}, f32[4,1024,256]{2,1,0}) while(%t), condition=%cond, body=%body
  ROOT %out = f32[4,1024,256]{2,1,0} get-tuple-element(%w), index=2
}
"""


def test_an_output_stacked_while_the_donated_argument_is_read_gets_its_own_buffer():
    """The scan writes the new cache while it still reads the old one, so XLA cannot write it into the
    donated buffer: a cache-sized buffer (4 MiB) of its own, copied into the argument at the end."""
    (module,) = load_text(SCAN_OVER_DONATED)
    sim = simulate(module, predict=True)
    own = [b.value.inst.name for b in sim.buffers if b.role != "parameter" and b.bytes == 4 * 2**20]
    assert own == ["stack"]


def test_an_output_computed_after_the_last_read_of_its_donated_argument_takes_its_buffer():
    """Updated in place instead (the loop writes each layer back into the cache it reads), the output is the
    donated buffer itself: no cache-sized temporary."""
    in_place = SCAN_OVER_DONATED.replace("tuple(%j, %old, %put)", "tuple(%j, %put, %new)").replace(
        "dynamic-update-slice(%new,", "dynamic-update-slice(%old,").replace(
        "get-tuple-element(%w), index=2", "get-tuple-element(%w), index=1")
    (module,) = load_text(in_place)
    sim = simulate(module, predict=True)
    assert not [b for b in sim.buffers if b.role != "parameter" and b.bytes == 4 * 2**20]


# An optimizer update returned through Shardy's result annotation, the output aliased to the donated weights.
ANNOTATED_UPDATE = """HloModule annotated_update, input_output_alias={ {}: (0, {}, may-alias) }

ENTRY %main (p: f32[1024,1024], x: f32[1024,1024]) -> f32[1024,1024] {
  %p = f32[1024,1024]{1,0} parameter(0)
  %x = f32[1024,1024]{1,0} parameter(1)
  %g = f32[1024,1024]{1,0} dot(%x, %p), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  %pn = f32[1024,1024]{1,0} subtract(%p, %g)
  ROOT %r = f32[1024,1024]{1,0} custom-call(%pn), custom_call_target="xla.sdy.FuncResultSharding"
}
"""


def test_a_result_annotation_is_no_buffer_and_the_update_goes_into_the_donated_weights():
    sim = simulate(load_text(ANNOTATED_UPDATE)[0], predict=True)
    # The gradient is the one 4 MiB temporary; the updated weights are written into the argument.
    assert [b.value.inst.name for b in sim.buffers if b.role != "parameter"] == ["g"]


def test_entry_parameters_are_sized_with_the_layout_the_entry_computation_layout_gives_them():
    """jax's before-optimisation dumps print untiled parameters; the compiled layout is in the module header.
    A [768, 1000] f32 weight laid out {0,1} has the 768 minor and pads nothing; guessed row-major, its minor 1000
    was padded to 1024 (3 MiB for 2.93)."""
    text = """HloModule m, entry_computation_layout={(f32[768,1000]{0,1:T(8,128)})->f32[768,1000]{0,1:T(8,128)}}

ENTRY %main (w: f32[768,1000]) -> f32[768,1000] {
  %w = f32[768,1000]{1,0} parameter(0)
  ROOT %n = f32[768,1000]{1,0} negate(%w)
}
"""
    sim = simulate(load_text(text)[0], predict=True)
    (param,) = [b for b in sim.buffers if b.role == "parameter"]
    assert param.bytes == 768 * 1000 * 4


def _dot(shape: str, batch: str) -> "Instruction":
    from hloscan.hlo.parser import parse_module
    module = parse_module(f"""HloModule m

ENTRY %main (a: bf16[{shape}]) -> bf16[{shape}] {{
  %a = bf16[{shape}]{{3,2,1,0}} parameter(0)
  ROOT %d = bf16[{shape}]{{3,2,1,0}} dot(%a, %a), lhs_batch_dims={batch}, rhs_batch_dims={batch}
}}
""")
    return module.entry.root


def test_a_dots_two_largest_free_dims_are_laid_out_minor_when_they_fill_the_lanes():
    from hloscan.analyses.hbm.liveness import _dot_minor_dims, leaf_bytes
    scores = _dot("512,12,197,197", "{0,1}")
    assert _dot_minor_dims(scores, scores.shape) == (2, 3)
    # [.., 197, 197] bf16 in (8, 128)(2, 1) tiles: 200 x 256 per (b, h), where the cheapest order padded nothing.
    untiled = scores.shape.__class__(scores.shape.element_type, scores.shape.dims)
    assert leaf_bytes(untiled, True, (2, 3)) == 512 * 12 * 200 * 256 * 2
    assert leaf_bytes(untiled, True) < 512 * 12 * 200 * 256 * 2
    # A free dim under 128 lanes is not put minor: the choice stays leaf_bytes' cheapest order.
    projection = _dot("16,2048,3072,16", "{0,1}")
    assert _dot_minor_dims(projection, projection.shape) == ()


# An outer product (a dot that contracts nothing) read by a reduce: the [4096, 4096] f32 product is a
# broadcast-multiply fused into the reduce, never a buffer; CONTRACT makes it an ordinary dot over dim 1.
OUTER_PRODUCT = """HloModule outer

%add (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %c = f32[] add(%a, %b)
}

ENTRY %main (u: f32[4096,1], v: f32[1,4096]) -> f32[4096] {
  %u = f32[4096,1]{1,0} parameter(0)
  %v = f32[1,4096]{1,0} parameter(1)
  %p = f32[4096,4096]{1,0} dot(%u, %v)CONTRACT
  %t = f32[4096,4096]{1,0} tanh(%p)
  %zero = f32[] constant(0)
  ROOT %r = f32[4096]{0} reduce(%t, %zero), dimensions={1}, to_apply=%add
}
"""


def test_a_dot_that_contracts_nothing_is_fused_like_a_broadcast_multiply():
    def buffers(contract: str) -> set[str]:
        sim = simulate(load_text(OUTER_PRODUCT.replace("CONTRACT", contract), "o.txt")[0], predict=True)
        return {b.value.inst.name for b in sim.buffers if b.bytes >= 64 * 2**20}
    assert "p" not in buffers("")
    assert "p" not in buffers(", lhs_contracting_dims={}, rhs_contracting_dims={}")
    assert "p" in buffers(", lhs_contracting_dims={1}, rhs_contracting_dims={0}")
