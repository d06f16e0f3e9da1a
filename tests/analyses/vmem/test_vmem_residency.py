"""Predicted VMEM residency (S(1)) of kernel operands in pre-optimisation dumps (analyses/vmem/residency.py)."""

from __future__ import annotations

from hloscan.analyses.tpu import generation
from hloscan.analyses.vmem.kernels import tpu_custom_calls
from hloscan.analyses.vmem.residency import in_vmem, predict_resident_operands
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


def test_in_vmem_sets_memory_space_one():
    module = parse_module(_HLO)
    shape = next(inst.shape for _, inst in module.instructions() if inst.name == "q")
    assert shape.memory_space == 0
    assert in_vmem(shape).memory_space == 1
    assert in_vmem(shape).dims == shape.dims
