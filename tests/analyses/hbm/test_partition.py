"""One device's share of a multi-device module before partitioning (hloscan.analyses.hbm.partition)."""

from __future__ import annotations

from corpus import FIXTURES
from hloscan.analyses.hbm import analyze_modules
from hloscan.analyses.hbm.partition import Split, _gathered, _reshaped, _sliced, shard_factors
from hloscan.hlo.ir import Shape
from hloscan.hlo.sharding import num_partitions
from hloscan.hlo.parser import parse_module

DP = FIXTURES / "hbm" / "sharded_dp.hlo.txt"


def _module(text: str):
    return parse_module(text)


def test_annotations_and_propagation_split_each_value() -> None:
    module = parse_module(DP.read_text())
    assert num_partitions(module) == 4
    splits = shard_factors(module)
    entry = module.entry.name
    assert splits[(entry, "x")] == Split(4, (4, 1))
    assert splits[(entry, "w")].pieces == 1
    assert splits[(entry, "h")] == Split(4, (4, 1))  # the dot keeps the lhs rows' split
    assert splits[(entry, "t")] == Split(4, (4, 1))  # elementwise keeps it
    assert splits[(entry, "loss")].pieces == 1  # a reduction over the split dim is replicated


def test_arguments_and_outputs_are_one_devices() -> None:
    (r,) = analyze_modules([parse_module(DP.read_text())], str(DP), "v5e")
    assert r.devices == 4 and r.kind == "predicted"
    assert r.arguments_bytes == 16 * 2**20 + 64 * 2**20  # x's shard, and w whole
    assert r.outputs_bytes == 16 * 2**20 + 4  # y's shard and the scalar
    assert "per device" in " ".join(r.notes)


LOOP = """HloModule loop, num_partitions=4

%cond (p: (s32[], f32[4,1024,256], f32[1024,256])) -> pred[] {
  %p = (s32[], f32[4,1024,256]{2,1,0}, f32[1024,256]{1,0}) parameter(0)
  %i = s32[] get-tuple-element(%p), index=0
  %n = s32[] constant(4)
  ROOT %c = pred[] compare(%i, %n), direction=LT
}

%body (p: (s32[], f32[4,1024,256], f32[1024,256])) -> (s32[], f32[4,1024,256], f32[1024,256]) {
  %p = (s32[], f32[4,1024,256]{2,1,0}, f32[1024,256]{1,0}) parameter(0)
  %i = s32[] get-tuple-element(%p), index=0
  %stack = f32[4,1024,256]{2,1,0} get-tuple-element(%p), index=1
  %x = f32[1024,256]{1,0} get-tuple-element(%p), index=2
  %y = f32[1024,256]{1,0} tanh(%x)
  %r = f32[1,1024,256]{2,1,0} reshape(%y)
  %z = s32[] constant(0)
  %upd = f32[4,1024,256]{2,1,0} dynamic-update-slice(%stack, %r, %i, %z, %z)
  %one = s32[] constant(1)
  %j = s32[] add(%i, %one)
  ROOT %t = (s32[], f32[4,1024,256]{2,1,0}, f32[1024,256]{1,0}) tuple(%j, %upd, %y)
}

ENTRY %main (x: f32[1024,256]) -> f32[4,1024,256] {
  %x = f32[1024,256]{1,0} parameter(0), sharding={devices=[4,1]<=[4]}
  %zero = f32[] constant(0)
  %init = f32[4,1024,256]{2,1,0} broadcast(%zero), dimensions={}
  %i0 = s32[] constant(0)
  %t = (s32[], f32[4,1024,256]{2,1,0}, f32[1024,256]{1,0}) tuple(%i0, %init, %x)
  %w = (s32[], f32[4,1024,256]{2,1,0}, f32[1024,256]{1,0}) while(%t), condition=%cond, body=%body
  ROOT %out = f32[4,1024,256]{2,1,0} get-tuple-element(%w), index=1
}
"""


def test_a_scans_stacked_buffer_takes_the_split_of_what_the_body_writes() -> None:
    module = parse_module(LOOP)
    splits = shard_factors(module)
    # The zeros the loop starts from are split like the slices updated into them (backward propagation).
    assert splits[(module.entry.name, "init")].pieces == 4
    assert splits[("body", "upd")].pieces == 4


# The same scan inside a gradient-accumulation loop: the accumulator the outer loop starts from (zeros) takes
# the split of what its body adds, so the outer body is propagated a second time and reaches the inner loop again.
ACCUMULATED_LOOP = LOOP.split("ENTRY")[0] + """%outer_cond (q: (s32[], f32[1024,256], f32[1024,256])) -> pred[] {
  %q = (s32[], f32[1024,256]{1,0}, f32[1024,256]{1,0}) parameter(0)
  %k = s32[] get-tuple-element(%q), index=0
  %m = s32[] constant(8)
  ROOT %c = pred[] compare(%k, %m), direction=LT
}

%outer_body (q: (s32[], f32[1024,256], f32[1024,256])) -> (s32[], f32[1024,256], f32[1024,256]) {
  %q = (s32[], f32[1024,256]{1,0}, f32[1024,256]{1,0}) parameter(0)
  %k = s32[] get-tuple-element(%q), index=0
  %x = f32[1024,256]{1,0} get-tuple-element(%q), index=1
  %acc = f32[1024,256]{1,0} get-tuple-element(%q), index=2
  %zero = f32[] constant(0)
  %init = f32[4,1024,256]{2,1,0} broadcast(%zero), dimensions={}
  %i0 = s32[] constant(0)
  %t = (s32[], f32[4,1024,256]{2,1,0}, f32[1024,256]{1,0}) tuple(%i0, %init, %x)
  %w = (s32[], f32[4,1024,256]{2,1,0}, f32[1024,256]{1,0}) while(%t), condition=%cond, body=%body
  %stack = f32[4,1024,256]{2,1,0} get-tuple-element(%w), index=1
  %sum = f32[1024,256]{1,0} reduce(%stack, %zero), dimensions={0}, to_apply=%add
  %acc2 = f32[1024,256]{1,0} add(%acc, %sum)
  %one = s32[] constant(1)
  %k2 = s32[] add(%k, %one)
  ROOT %r = (s32[], f32[1024,256]{1,0}, f32[1024,256]{1,0}) tuple(%k2, %x, %acc2)
}

%add (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] add(%a, %b)
}

ENTRY %main (x: f32[1024,256]) -> f32[1024,256] {
  %x = f32[1024,256]{1,0} parameter(0), sharding={devices=[4,1]<=[4]}
  %zero = f32[] constant(0)
  %acc = f32[1024,256]{1,0} broadcast(%zero), dimensions={}
  %k0 = s32[] constant(0)
  %t = (s32[], f32[1024,256]{1,0}, f32[1024,256]{1,0}) tuple(%k0, %x, %acc)
  %w = (s32[], f32[1024,256]{1,0}, f32[1024,256]{1,0}) while(%t), condition=%outer_cond, body=%outer_body
  ROOT %out = f32[1024,256]{1,0} get-tuple-element(%w), index=2
}
"""


def test_a_scan_inside_an_accumulation_loop_keeps_its_stacked_buffers_split() -> None:
    module = parse_module(ACCUMULATED_LOOP)
    splits = shard_factors(module)
    # Propagated a second time round the outer loop, the inner loop keeps what its body wrote the first time
    # (its zeros counted whole were a BERT accumulation step's residual stacks: +253%).
    assert splits[("outer_body", "init")].pieces == 4
    assert splits[("outer_body", "w")][1].pieces == 4


# A shard_map exported by Shardy: its region computes on one device's part, its exit makes it global again.
SHARD_MAP = """HloModule shmap, num_partitions=4

%local (a: f32[256,256]) -> f32[256,256] {
  %a = f32[256,256]{1,0} parameter(0)
  ROOT %t = f32[256,256]{1,0} tanh(%a)
}

ENTRY %main (x: f32[1024,256]) -> f32[1024,256] {
  %x = f32[1024,256]{1,0} parameter(0), sharding={devices=[4,1]<=[4]}
  %in = f32[256,256]{1,0} custom-call(%x), custom_call_target="xla.sdy.GlobalToLocalShape"
  %body = f32[256,256]{1,0} call(%in), to_apply=%local
  %out = f32[1024,256]{1,0} custom-call(%body), custom_call_target="xla.sdy.LocalToGlobalShape"
  ROOT %y = f32[1024,256]{1,0} exponential(%out)
}
"""


def test_a_shard_maps_exit_is_split_as_its_local_values_are() -> None:
    module = parse_module(SHARD_MAP)
    splits = shard_factors(module)
    entry = module.entry.name
    assert splits[(entry, "in")] == Split(1)  # already one device's: not divided again
    assert splits[(entry, "out")] == Split(4, (4, 1))  # global dims over the region's local dims
    assert splits[(entry, "y")] == Split(4, (4, 1))


def test_a_shard_maps_entry_and_exit_are_views_of_one_buffer() -> None:
    from hloscan.analyses.hbm.liveness import simulate
    sim = simulate(parse_module(SHARD_MAP), predict=True, generation="v5e")
    made = {b.value.inst.name for b in sim.buffers}
    assert "in" not in made and "out" not in made
    assert made == {"x", "y"}  # the argument and the output; the tanh fuses into the exponential


def test_a_one_device_module_has_no_splits() -> None:
    assert shard_factors(parse_module(LOOP.replace(", num_partitions=4", ""))) is None


def test_buffers_live_at_the_peak_are_named_once_and_sized_per_device() -> None:
    """Issue 23 item 8: one instruction's buffers were listed several times alike; the shapes were global
    while the bytes were one device's."""
    case = FIXTURES / "oracle_new" / "sharded1" / "v7x__programs__fsdp_L32" / "before_optimizations.txt"
    (r,) = analyze_modules([parse_module(case.read_text())], str(case), "v7x", use_reports=False)
    names = [b.instruction for b in r.live_at_peak]
    assert len(names) == len(set(names))
    assert any("(copy 2)" in n for n in names)
    assert all("devices" in b.shape or "shard of" in b.shape for b in r.live_at_peak if b.bytes > 2**28)


# ------------------------------------------------------------------ splits through reshapes, slices, gathers
def test_a_reshape_hands_a_split_to_the_major_dim_of_its_group():
    # q heads split 2 ways, (8, 2048, 32, 128) -> (8, 2048, 8, 4, 128): the kv-head dim takes the split.
    got = _reshaped(Split(4, (2, 1, 2, 1)), Shape("bf16", (8, 2048, 32, 128)), Shape("bf16", (8, 2048, 8, 4, 128)))
    assert got == Split(4, (2, 1, 2, 1, 1))
    # A split minor dim merged into a major one cannot be told apart: no tiles.
    assert _reshaped(Split(2, (1, 2)), Shape("f32", (4, 8)), Shape("f32", (32,))) is None


def test_a_slice_keeps_the_splits_of_the_dims_it_keeps_whole():
    got = _sliced(Split(2, (1, 1, 2)), Shape("f32", (24, 4096, 1024)), Shape("f32", (1, 4096, 1024)))
    assert got == Split(2, (1, 1, 2))
    assert _sliced(Split(2, (2, 1)), Shape("f32", (8, 4)), Shape("f32", (4, 4))) == Split(1, (1, 1))


def test_an_embedding_gather_takes_the_tokens_split():
    module = parse_module("""HloModule m

ENTRY %main (t: f32[32000,4096], i: s32[8,2048]) -> f32[8,2048,4096] {
  %t = f32[32000,4096]{1,0} parameter(0)
  %i = s32[8,2048]{1,0} parameter(1)
  %idx = s32[8,2048,1]{2,1,0} reshape(%i)
  ROOT %g = f32[8,2048,4096]{2,1,0} gather(%t, %idx), offset_dims={2}, collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=2, slice_sizes={1,4096}
}
""")
    comp = module.entry
    got = _gathered(Split(1), Split(2, (2, 1, 1)), comp, comp.by_name["g"])
    assert got == Split(2, (2, 1, 1))


def test_a_squeezed_unit_dim_keeps_the_splits_of_a_reshape():
    # One layer's weights out of a stacked (L, d, f) array split (1, 2, 4): squeezing the layer dim keeps both.
    got = _reshaped(Split(8, (1, 2, 4)), Shape("f32", (1, 3072, 8192)), Shape("f32", (3072, 8192)))
    assert got == Split(8, (2, 4))


GATHER_ON_ONE_AXIS = """HloModule m, num_partitions=8

ENTRY %main (t: f32[32000,3072], i: s32[32,4096]) -> f32[32,4096,3072] {
  %t = f32[32000,3072]{1,0} parameter(0), sharding={devices=[4,2]<=[2,4]T(1,0)}
  %i = s32[32,4096]{1,0} parameter(1), sharding={devices=[TILES]<=ORDER last_tile_dim_replicate}
  %idx = s32[32,4096,1]{2,1,0} reshape(%i)
  ROOT %g = f32[32,4096,3072]{2,1,0} gather(%t, %idx), offset_dims={2}, collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=2, slice_sizes={1,3072}
}
"""


def test_an_embedding_gather_keeps_the_tables_split_when_the_tokens_use_the_same_mesh_axis():
    # fsdp_tp over (data 2, model 4): embed P(model, data), tokens P(data). The tokens' batch and the table's
    # d are both split over `data`: the partitioner keeps d split and the batch whole.
    same = parse_module(GATHER_ON_ONE_AXIS.replace("TILES", "2,1,4").replace("ORDER", "[8]"))
    assert shard_factors(same)[(same.entry.name, "g")] == Split(2, (1, 1, 2))
    # Tokens split over the other axis (device index mod 4, `model`): both splits are kept.
    other = parse_module(GATHER_ON_ONE_AXIS.replace("TILES", "4,1,2").replace("ORDER", "[2,4]T(1,0)"))
    assert shard_factors(other)[(other.entry.name, "g")] == Split(8, (4, 1, 2))


WEIGHT_GRADIENT = """HloModule m, input_output_alias={ {}: (0, {}, may-alias) }, num_partitions=4

ENTRY %main (w: f32[1024,4096], x: bf16[64,512,1024], dy: bf16[64,512,4096], t: s32[64]) -> f32[1024,4096] {
  %w = f32[1024,4096]{1,0} parameter(0), sharding={W}
  %x = bf16[64,512,1024]{2,1,0} parameter(1), sharding={devices=[4,1,1]<=[4]}
  %dy = bf16[64,512,4096]{2,1,0} parameter(2), sharding={devices=[4,1,1]<=[4]}
  %t = s32[64]{0} parameter(3), sharding={devices=[4]<=[4]}
  %g = f32[1024,4096]{1,0} dot(%x, %dy), lhs_contracting_dims={0,1}, rhs_contracting_dims={0,1}
  ROOT %u = f32[1024,4096]{1,0} subtract(%w, %g)
}
"""


def test_a_weight_gradient_is_whole_when_the_weights_are_and_split_when_they_are_split():
    # x^T dy sums over the examples, split over the devices. With replicated weights (data parallelism) the
    # partitioner all-reduces it into a whole gradient; with FSDP weights it stays split (reduce-scattered).
    # The weight is told from the examples by its alias with the output (the examples here are larger).
    dp = parse_module(WEIGHT_GRADIENT.replace("{W}", "{replicated}"))
    assert shard_factors(dp)[(dp.entry.name, "g")].pieces == 1
    fsdp = parse_module(WEIGHT_GRADIENT.replace("{W}", "{devices=[4,1]<=[4]}"))
    assert shard_factors(fsdp)[(fsdp.entry.name, "g")].pieces == 4


ZEROS_THEN_CONSTRAINT = """HloModule m, num_partitions=4

ENTRY %main (x: f32[64,1024]) -> f32[64,1024] {
  %x = f32[64,1024]{1,0} parameter(0), sharding={devices=[4,1]<=[4]}
  %zero = f32[] constant(0)
  %z = f32[64,1024]{1,0} broadcast(%zero), dimensions={}
  %c = f32[64,1024]{1,0} custom-call(%z), custom_call_target="Sharding", sharding={devices=[4,1]<=[4]}
  ROOT %y = f32[64,1024]{1,0} add(%x, %c)
}
"""


def test_zeros_a_sharding_annotation_reads_are_created_split():
    # XLA propagates the annotation backward to the broadcast: no device ever holds the whole zeros.
    module = parse_module(ZEROS_THEN_CONSTRAINT)
    splits = shard_factors(module)
    assert splits[(module.entry.name, "z")] == Split(4, (4, 1))
    # A broadcast of data (not of a scalar) keeps its own propagation.
    other = parse_module(ZEROS_THEN_CONSTRAINT.replace("%zero = f32[] constant(0)", "%zero = f32[1024]{0} constant({...})")
                         .replace("broadcast(%zero), dimensions={}", "broadcast(%zero), dimensions={1}"))
    assert shard_factors(other)[(other.entry.name, "z")].pieces == 1


CONV_BATCH_SPLIT = """HloModule m, num_partitions=4

ENTRY %main (x: f32[64,32,32,16], k: f32[3,3,16,32]) -> f32[64,32,32,32] {
  %x = f32[64,32,32,16]{3,2,1,0} parameter(0), sharding={devices=[4,1,1,1]<=[4]}
  %k = f32[3,3,16,32]{3,2,1,0} parameter(1), sharding={replicated}
  %c = f32[64,32,32,32]{3,2,1,0} convolution(%x, %k), window={size=3x3 pad=1_1x1_1}, dim_labels=b01f_01io->b01f
  %zero = f32[] constant(0)
  %z = f32[64,32,32,32]{3,2,1,0} broadcast(%zero), dimensions={}
  ROOT %m = f32[64,32,32,32]{3,2,1,0} maximum(%c, %z)
}
"""


def test_a_convolution_keeps_its_batch_split_with_its_dims():
    # The batch split is known on the output's batch dim, so the zeros the ReLU compares with are created split.
    module = parse_module(CONV_BATCH_SPLIT)
    splits = shard_factors(module)
    entry = module.entry.name
    assert splits[(entry, "c")] == Split(4, (4, 1, 1, 1))
    assert splits[(entry, "z")] == Split(4, (4, 1, 1, 1))
    # Batch labelled elsewhere on the output (an NCHW-like layout): the split follows the label.
    moved = parse_module(CONV_BATCH_SPLIT.replace("f32[64,32,32,32]{3,2,1,0} convolution", "f32[32,32,64,32]{3,2,1,0} convolution")
                         .replace("dim_labels=b01f_01io->b01f", "dim_labels=b01f_01io->01bf"))
    assert shard_factors(moved)[(moved.entry.name, "c")] == Split(4, (1, 1, 4, 1))
    # A convolution whose input is split only off its batch (a weight gradient contracts the batch): pieces only.
    grad = parse_module(CONV_BATCH_SPLIT.replace("devices=[4,1,1,1]<=[4]", "devices=[1,1,1,4]<=[4]"))
    assert shard_factors(grad)[(grad.entry.name, "c")] == Split(4)


def test_an_elementwise_op_with_a_whole_operand_of_known_dims_takes_the_other_operands_pieces():
    module = parse_module("""HloModule m, num_partitions=4

ENTRY %main (t: f32[32000,1024], i: s32[8192], b: f32[8192,1024]) -> f32[8192,1024] {
  %t = f32[32000,1024]{1,0} parameter(0), sharding={devices=[4,1]<=[4]}
  %i = s32[8192]{0} parameter(1), sharding={devices=[4]<=[4]}
  %b = f32[8192,1024]{1,0} parameter(2), sharding={replicated}
  %g = f32[8192,1024]{1,0} custom-call(%t, %i), custom_call_target="my_lookup"
  ROOT %a = f32[8192,1024]{1,0} add(%g, %b)
}
""")
    splits = shard_factors(module)
    entry = module.entry.name
    assert splits[(entry, "g")] == Split(4)  # the custom call's result: 4 pieces, dims unknown
    assert splits[(entry, "a")] == Split(4)  # not the replicated operand's whole split


VOCAB_PROJECTION = """HloModule m, num_partitions=8

ENTRY %main (h: bf16[32,512,256], w: bf16[256,OUT]) -> bf16[32,512,OUT] {
  %h = bf16[32,512,256]{2,1,0} parameter(0), sharding={devices=[1,1,4,2]<=[8] last_tile_dim_replicate}
  %w = bf16[256,OUT]{1,0} parameter(1), sharding={devices=[4,2]<=[8]}
  ROOT %logits = bf16[32,512,OUT]{2,1,0} dot(%h, %w), lhs_contracting_dims={2}, rhs_contracting_dims={0}
}
"""


def test_partial_sums_of_a_projection_larger_than_its_operands_are_scattered_onto_the_examples():
    # Both split 4 ways on d, the head also 2 ways on the vocabulary: a result that would be a partial sum is
    # reduce-scattered onto the lhs's first free dim when it is larger than either operand (logits, as the compiled
    # v7x Gemma step held them), and all-reduced (left split on the vocabulary only) when it is not.
    wide = parse_module(VOCAB_PROJECTION.replace("OUT", "32768"))
    assert shard_factors(wide)[(wide.entry.name, "logits")] == Split(8, (4, 1, 2))
    narrow = parse_module(VOCAB_PROJECTION.replace("OUT", "128"))
    assert shard_factors(narrow)[(narrow.entry.name, "logits")] == Split(2, (1, 1, 2))
