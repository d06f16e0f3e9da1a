"""Mesh replica groups as XLA:TPU prints them after SPMD partitioning, device order included.

`replica_groups=mesh['axis_0'=2,'axis_1'=1,'axis_2'=2], device_ids=([2,2]T(1,0)) {'axis_0'}` is in every
tensor-parallel decode step of fixtures/oracle_new (sharded1/2); the whole after-optimization dump used to
fail to parse (HLO001) on it.
"""

from __future__ import annotations

import pytest

from hloscan.hlo.errors import HloSyntaxError
from hloscan.hlo.parser import parse_text
from hloscan.hlo.shapes import parse_fragment

MODULE = """HloModule m, num_partitions=4

%add (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] add(%a, %b)
}

ENTRY %main (p: f32[8]) -> f32[8] {
  %p = f32[8]{0} parameter(0)
  ROOT %r = f32[8]{0} all-reduce(%p), channel_id=1, replica_groups=GROUPS, use_global_device_ids=true, to_apply=%add
}
"""


@pytest.mark.parametrize("groups", [
    "mesh['axis_0'=2,'axis_1'=1,'axis_2'=2], device_ids=([2,2]T(1,0)) {'axis_0'}",
    "mesh['x'=2,'y'=2], device_ids=(0,2,1,3) {'x','y'}",
    "mesh['x'=4] {'x'}",
])
@pytest.mark.parametrize("strict", [False, True])
def test_mesh_replica_groups_with_and_without_device_ids_parse(groups: str, strict: bool) -> None:
    (module,) = parse_text(MODULE.replace("GROUPS", groups), "m.txt", strict)
    assert module.entry.root.attr("replica_groups") == groups
    parse_fragment(groups, "replica_groups")


def test_an_axis_the_mesh_does_not_have_is_still_rejected_when_device_ids_are_given() -> None:
    text = MODULE.replace("GROUPS", "mesh['x'=2,'y'=2], device_ids=(0,2,1,3) {'z'}")
    with pytest.raises(HloSyntaxError, match="'z' is not a valid axis name"):
        parse_text(text, "m.txt", strict=True)


def test_device_ids_without_their_parentheses_are_a_syntax_error() -> None:
    with pytest.raises(HloSyntaxError):
        parse_fragment("mesh['x'=2], device_ids=0,1 {'x'}", "replica_groups")
