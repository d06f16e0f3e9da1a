"""Predicted VMEM residency (S(1)) of kernel operands in pre-optimisation dumps (analyses/vmem/residency.py)."""

from __future__ import annotations

import pytest

from hloscan.analyses.tpu import generation
from hloscan.analyses.vmem.kernels import estimate_module, tpu_custom_calls
from hloscan.analyses.vmem.residency import _relaid_out, in_vmem, predict_resident_operands, predict_resident_results
from hloscan.hlo.ir import Shape
from hloscan.hlo.parser import parse_module

# Two kernels read q and k (the dq/dkv kernels of an attention backward pass); only the second reads v
# (through a bitcast). The body is never decoded by the residency rule.
_HLO = """HloModule m

ENTRY %main (q: f32[1,8,2048,128], k: f32[1,8,2048,128], v: f32[1,8,2048,128]) -> (f32[1,8,2048,128], f32[1,8,2048,128]) {
  %q = f32[1,8,2048,128]{3,2,1,0} parameter(0)
  %k = f32[1,8,2048,128]{3,2,1,0} parameter(1)
  %v = f32[1,8,2048,128]{3,2,1,0} parameter(2)
  %vb = f32[1,8,2048,128]{3,2,1,0} bitcast(%v)
  %a = f32[1,8,2048,128]{3,2,1,0} custom-call(%q, %k), custom_call_target="tpu_custom_call", backend_config="{}"
  %b = f32[1,8,2048,128]{3,2,1,0} custom-call(%q, %k, %vb), custom_call_target="tpu_custom_call", backend_config="{}"
  ROOT %t = (f32[1,8,2048,128]{3,2,1,0}, f32[1,8,2048,128]{3,2,1,0}) tuple(%a, %b)
}
"""


def _predict(tpu: str, text: str = _HLO) -> dict[str, frozenset[int]]:
    module = parse_module(text)
    calls = list(tpu_custom_calls(module))
    comp = calls[0][0]
    return predict_resident_operands(comp, [inst for _, inst in calls], generation(tpu))


def test_operands_shared_by_kernels_are_resident_within_the_budget():
    # v5e/v6e: room for both shared 8 MiB arrays; v5e moves no single-use array over 2 MiB.
    assert _predict("v5e") == {"a": frozenset({0, 1}), "b": frozenset({0, 1})}
    assert _predict("v6e") == {"a": frozenset({0, 1}), "b": frozenset({0, 1})}


def test_v7x_budget_holds_two_8mib_arrays_and_no_single_use_third():
    # 16 MiB: q and k (shared) fill it, v (single use) keeps its window.
    assert _predict("v7x") == {"a": frozenset({0, 1}), "b": frozenset({0, 1})}


def test_v4_keeps_every_window():
    assert _predict("v4") == {}


def test_post_optimisation_layouts_are_not_second_guessed():
    text = _HLO.replace("%q = f32[1,8,2048,128]{3,2,1,0}", "%q = f32[1,8,2048,128]{3,2,1,0:S(1)}")
    assert _predict("v5e", text) == {}



# An optimizer step on v7x: it updates the 8 MiB state in place (input_output_aliases) and reads a 4 MiB gradient.
_IN_PLACE = """HloModule m

ENTRY %main (s: f32[2048,1024], g: bf16[2048,1024]) -> f32[2048,1024] {
  %s = f32[2048,1024]{1,0} parameter(0)
  %g = bf16[2048,1024]{1,0} parameter(1)
  ROOT %o = f32[2048,1024]{1,0} custom-call(%s, %g), custom_call_target="tpu_custom_call", output_to_operand_aliasing={{}: (0, {})}, backend_config="{}"
}
"""


def test_an_operand_a_kernel_writes_in_place_keeps_its_window_and_leaves_the_budget_to_others():
    # The result's buffer is the state's, in HBM: MSA prefetched the gradient instead (Sophia, schedule-free AdamW).
    assert _predict("v7x", _IN_PLACE) == {"o": frozenset({1})}
    assert _predict("v7x", _IN_PLACE.replace(", output_to_operand_aliasing={{}: (0, {})}", "")) == {"o": frozenset({0, 1})}
    # A column of per-row statistics updated in place (16 KiB of data) is still moved whole (Adam-mini, CAME).
    column = _IN_PLACE.replace("f32[2048,1024]", "f32[4096,1]")
    assert _predict("v7x", column) == {"o": frozenset({0, 1})}

def test_in_vmem_sets_memory_space_one():
    module = parse_module(_HLO)
    shape = next(inst.shape for _, inst in module.instructions() if inst.name == "q")
    assert shape.memory_space == 0
    assert in_vmem(shape).memory_space == 1
    assert in_vmem(shape).dims == shape.dims


# A forward kernel in a called computation (as jax emits `jit(fwd)`): leaf 0 flows back to the entry and is
# read by the backward kernel `b` (through a negate), leaf 1 is returned by the program, leaf 2 is never
# read; `b`'s result is returned as it is.
_FWD_BWD = """HloModule m

%fwd (p: f32[1,8,2048,128]) -> (f32[1,8,2048,128], f32[1,8,2048,128]) {
  %p = f32[1,8,2048,128]{3,2,1,0} parameter(0)
  %f = (f32[1,8,2048,128]{3,2,1,0}, f32[1,8,2048,128]{3,2,1,0}, f32[1,8,2048,128]{3,2,1,0}) custom-call(%p), custom_call_target="tpu_custom_call", backend_config="{}"
  %o = f32[1,8,2048,128]{3,2,1,0} get-tuple-element(%f), index=0
  %l = f32[1,8,2048,128]{3,2,1,0} get-tuple-element(%f), index=1
  %unused = f32[1,8,2048,128]{3,2,1,0} get-tuple-element(%f), index=2
  ROOT %r = (f32[1,8,2048,128]{3,2,1,0}, f32[1,8,2048,128]{3,2,1,0}) tuple(%o, %l)
}

ENTRY %main (q: f32[1,8,2048,128]) -> (f32[1,8,2048,128], f32[1,8,2048,128]) {
  %q = f32[1,8,2048,128]{3,2,1,0} parameter(0)
  %c = (f32[1,8,2048,128]{3,2,1,0}, f32[1,8,2048,128]{3,2,1,0}) call(%q), to_apply=%fwd
  %o2 = f32[1,8,2048,128]{3,2,1,0} get-tuple-element(%c), index=0
  %l2 = f32[1,8,2048,128]{3,2,1,0} get-tuple-element(%c), index=1
  %ob = f32[1,8,2048,128]{3,2,1,0} negate(%o2)
  %b = f32[1,8,2048,128]{3,2,1,0} custom-call(%ob), custom_call_target="tpu_custom_call", backend_config="{}"
  ROOT %t = (f32[1,8,2048,128]{3,2,1,0}, f32[1,8,2048,128]{3,2,1,0}) tuple(%b, %l2)
}
"""


def _predict_results(tpu: str, used: int = 0) -> dict[tuple[str, str], frozenset[int]]:
    module = parse_module(_FWD_BWD)
    return predict_resident_results(module, list(tpu_custom_calls(module)), generation(tpu), used)


def test_result_read_again_and_not_returned_is_resident():
    # Only leaf 0 of %f (position 1 + 0, after its one operand): leaf 1 is returned, leaf 2 unread, and
    # %b's own result is returned.
    assert _predict_results("v5e") == {("fwd", "f"): frozenset({1})}


def test_result_an_xla_op_reads_is_resident():
    # %b's result added to itself before it is returned: the add reads it on the device, so the kernel writes
    # it to VMEM (fused splash backward's dq output, read by a reduction, and paged attention's output, read
    # by an elementwise op, were S(1) on v5e/v6e/v7x in the compiler's allocation lists).
    text = _FWD_BWD.replace("tuple(%b, %l2)", "tuple(%bb, %l2)").replace(
        "  ROOT %t =", "  %bb = f32[1,8,2048,128]{3,2,1,0} add(%b, %b)\n  ROOT %t =")
    module = parse_module(text)
    found = predict_resident_results(module, list(tpu_custom_calls(module)), generation("v5e"), 0)
    assert found == {("fwd", "f"): frozenset({1}), ("main", "b"): frozenset({1})}


def test_results_share_the_budget_left_by_resident_inputs():
    # v5e's 96 MiB: 88 MiB already taken leaves room for the 8 MiB result, 90 MiB does not.
    assert _predict_results("v5e", used=88 * 1024 * 1024) == {("fwd", "f"): frozenset({1})}
    assert _predict_results("v5e", used=90 * 1024 * 1024) == {}


def test_generations_writing_results_to_hbm_keep_the_windows():
    assert _predict_results("v5p") == {}
    assert _predict_results("v4") == {}


def test_v7x_writes_results_to_vmem_within_its_smaller_budget():
    # 16 MiB: room for the 8 MiB result after 8 MiB of inputs, none after 12 MiB.
    assert _predict_results("v7x", used=8 * 1024 * 1024) == {("fwd", "f"): frozenset({1})}
    assert _predict_results("v7x", used=12 * 1024 * 1024) == {}


def test_forward_result_read_by_backward_kernel_has_no_output_window():
    module = parse_module(_FWD_BWD)
    kernels = {k.inst.name: k for k in estimate_module(module, "v5e", None)}
    notes = " ".join(kernels["f"].estimate.notes)
    assert "results 0 (read by other kernels" in notes
    assert "results" not in " ".join(kernels["b"].estimate.notes)


# A kernel reading a value the program computes (a broadcast, as jax emits for the softmax statistics of a
# backward kernel), read by no other kernel.
_PRODUCED = """HloModule m

ENTRY %main (l: f32[1,8,2048]) -> f32[1,8,2048,128] {
  %l = f32[1,8,2048]{2,1,0} parameter(0)
  %b = f32[1,8,2048,128]{3,2,1,0} broadcast(%l), dimensions={0,1,2}
  ROOT %k = f32[1,8,2048,128]{3,2,1,0} custom-call(%b), custom_call_target="tpu_custom_call", backend_config="{}"
}
"""


def test_value_computed_on_device_is_resident_where_results_go_to_vmem():
    # v5e/v6e define such values in VMEM (every flash/splash backward broadcast was S(1) there); v5p and v4
    # write them to HBM (single-use, no budget).
    assert _predict("v5e", _PRODUCED) == {"k": frozenset({0})}
    assert _predict("v6e", _PRODUCED) == {"k": frozenset({0})}
    assert _predict("v5p", _PRODUCED) == {}
    assert _predict("v4", _PRODUCED) == {}


# A library that wraps its kernel in a jit (tokamax's attention): the caller transposes q, the kernel reads
# it as a parameter of the called computation.
_CALLED = """HloModule m

%lib (p: f32[1,8,2048,128]) -> f32[1,8,2048,128] {
  %p = f32[1,8,2048,128]{3,2,1,0} parameter(0)
  ROOT %k = f32[1,8,2048,128]{3,2,1,0} custom-call(%p), custom_call_target="tpu_custom_call", backend_config="{}"
}

ENTRY %main (q: f32[1,2048,8,128]) -> f32[1,8,2048,128] {
  %q = f32[1,2048,8,128]{3,2,1,0} parameter(0)
  %t = f32[1,8,2048,128]{3,2,1,0} transpose(%q), dimensions={0,2,1,3}
  ROOT %c = f32[1,8,2048,128]{3,2,1,0} call(%t), to_apply=%lib
}
"""


def _predict_in_module(tpu: str, text: str) -> dict[str, frozenset[int]]:
    module = parse_module(text)
    calls = list(tpu_custom_calls(module))
    comp = calls[0][0]
    return predict_resident_operands(comp, [inst for _, inst in calls], generation(tpu), module)


def test_value_computed_in_the_caller_is_produced_on_device():
    # The transposes were S(1) operands of tokamax's kernels on v5e/v6e; a program parameter passed
    # straight through the call is not computed on the device and keeps its window.
    assert _predict_in_module("v5e", _CALLED) == {"k": frozenset({0})}
    assert _predict_in_module("v6e", _CALLED) == {"k": frozenset({0})}
    assert _predict_in_module("v5p", _CALLED) == {}
    untransposed = _CALLED.replace("%t = f32[1,8,2048,128]{3,2,1,0} transpose(%q), dimensions={0,2,1,3}\n", "").replace(
        "call(%t)", "call(%q)").replace("%q = f32[1,2048,8,128]", "%q = f32[1,8,2048,128]").replace(
        "(q: f32[1,2048,8,128])", "(q: f32[1,8,2048,128])")
    assert _predict_in_module("v5e", untransposed) == {}


def test_parameter_read_once_is_not_produced():
    text = _PRODUCED.replace("custom-call(%b)", "custom-call(%l)").replace(
        "%b = f32[1,8,2048,128]{3,2,1,0} broadcast(%l), dimensions={0,1,2}\n", "")
    assert _predict("v5e", text) == {}


def test_result_returned_and_read_by_a_kernel_is_resident():
    # jax.vjp programs return the forward output o and feed it to the dq/dkv kernels: S(1) on v5e/v6e.
    text = _FWD_BWD.replace("tuple(%b, %l2)", "tuple(%b, %o2)")
    module = parse_module(text)
    found = predict_resident_results(module, list(tpu_custom_calls(module)), generation("v6e"), 0)
    assert found == {("fwd", "f"): frozenset({1})}


def test_parameter_with_a_narrow_minor_dim_is_relaid_out_and_resident_on_v5e():
    narrow = _PRODUCED.replace("f32[1,8,2048,128]", "f32[1,8,2048,64]").replace(
        "custom-call(%b)", "custom-call(%p)").replace(
        "%b = f32[1,8,2048,64]{3,2,1,0} broadcast(%l), dimensions={0,1,2}\n",
        "%p = f32[1,8,2048,64]{3,2,1,0} parameter(1)\n").replace(
        "(l: f32[1,8,2048])", "(l: f32[1,8,2048], p: f32[1,8,2048,64])")
    assert _predict("v5e", narrow) == {"k": frozenset({0})}
    assert _predict("v5p", narrow) == {}


def test_returned_head_dim_64_result_is_relaid_out_and_resident():
    # Leaf 1 of %f is returned as it is, with a 64-wide minor dim: XLA copies it to the program's layout (the
    # long axis in the lanes), so the kernel writes it to VMEM on v5e/v6e/v7x, not on v5p; so is %b's result.
    # Leaf 2 is never read: it keeps its window.
    text = _FWD_BWD.replace("f32[1,8,2048,128]", "f32[1,8,2048,64]")
    module = parse_module(text)
    calls = list(tpu_custom_calls(module))
    assert predict_resident_results(module, calls, generation("v6e"), 0) == {
        ("fwd", "f"): frozenset({1, 2}), ("main", "b"): frozenset({1})}
    assert predict_resident_results(module, calls, generation("v5p"), 0) == {}
    # 128 wide: only the leaf another kernel reads.
    assert _predict_results("v6e") == {("fwd", "f"): frozenset({1})}


def test_estimating_a_module_does_not_keep_it_alive():
    # The residency caches (users, call sites, kernel order) are per IR object; a run over many files
    # must be able to free each module once it is done with it.
    import gc
    import weakref

    module = parse_module(_FWD_BWD)
    estimate_module(module, "v5e", None)
    ref = weakref.ref(module)
    del module
    gc.collect()
    assert ref() is None


@pytest.mark.parametrize("dtype, dims, relaid", [
    ("f32", (1, 4, 1024, 64), True), ("bf16", (4, 4096, 320), True), ("f32", (1000, 40), True),
    ("f32", (1600, 300), True), ("s8", (100, 200), True),
    ("bf16", (2, 8, 2048, 128), False), ("f32", (24, 1000), False), ("bf16", (3, 5000), False),
    ("f32", (7, 129), False),
])
def test_layout_assignment_puts_the_least_padded_dimension_in_the_lanes(dtype, dims, relaid):
    # Entry parameter layouts in the oracle's post-optimisation dumps.
    assert _relaid_out(Shape(dtype, dims)) is relaid


_RESHAPED = """HloModule m

ENTRY %main (x: bf16[8,128,128,128]) -> bf16[512,64,128] {
  %x = bf16[8,128,128,128]{3,2,1,0} parameter(0)
  %r = bf16[512,2,64,256]{3,2,1,0} reshape(%x)
  ROOT %k = bf16[512,64,128]{2,1,0} custom-call(%r), custom_call_target="tpu_custom_call", backend_config="{}"
}
"""


def test_a_reshape_that_moves_data_between_tiles_is_computed_on_the_device():
    # 2x2 pooling's reshape puts column pairs side by side in the lanes: a relayout, S(1) on v5e.
    assert _predict("v5e", _RESHAPED) == {"k": frozenset({0})}
    relabel = _RESHAPED.replace("bf16[512,2,64,256]{3,2,1,0} reshape", "bf16[1024,128,128]{2,1,0} reshape").replace(
        "[512,2,64,256]", "[1024,128,128]")
    assert _predict("v5e", relabel) == {}
