"""The modules the HLO4xx rule docs show (a big argument plus a temporary of the same size)."""

from __future__ import annotations

import textwrap


def hbm_module(rows: int, tpu: str) -> str:
    """A scheduled module with an f32[rows, 1M] argument and a temporary of the same size (rows x 4 MiB each)."""
    text = f"""```hlo tpu="{tpu}"
HloModule big, is_scheduled=true, entry_computation_layout={{(f32[{rows},1048576]{{1,0:T(8,128)}})->f32[]{{:T(128)}}}}

%add (l: f32[], r: f32[]) -> f32[] {{
  %l = f32[] parameter(0)
  %r = f32[] parameter(1)
  ROOT %s = f32[] add(%l, %r)
}}

ENTRY %main (p: f32[{rows},1048576]) -> f32[] {{
  %p = f32[{rows},1048576]{{1,0:T(8,128)}} parameter(0)
  %e = f32[{rows},1048576]{{1,0:T(8,128)}} exponential(%p)
  %z = f32[]{{:T(128)}} constant(0)
  ROOT %red = f32[]{{:T(128)}} reduce(%e, %z), dimensions={{0,1}}, to_apply=%add
}}
```"""
    # Indented so inspect.cleandoc strips the docstring's 4 spaces evenly.
    return textwrap.indent(text, "    ").lstrip()
