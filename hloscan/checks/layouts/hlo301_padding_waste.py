"""HLO301: an entry parameter or output whose tiled layout is mostly padding."""

from __future__ import annotations

from itertools import permutations
from typing import Iterator

from hloscan.lint.finding import Finding, Severity
from hloscan.hlo.ir import Layout, Shape
from hloscan.hlo.layout import default_tiling, minor_to_major, padding, physical_bytes, with_layout
from hloscan.analyses.layouts.memory_report import human_bytes
from hloscan.analyses.tpu import MIB
from hloscan.checks.layouts import LAYOUTS
from hloscan.lint.registry import Check, Option, register
from hloscan.hlo.signature import SignatureEntry, module_signature



@register
class TiledPaddingWaste(Check):
    """An entry parameter or output's tiled layout wastes most of its bytes on padding.

    ## What it flags
    Entry parameters and outputs (post-optimisation dumps, where layouts carry tiles) whose padding, the
    physical size minus the logical size, is at least `threshold` of the physical size and at least
    `min_bytes`. A `bf16[16,1280,40]` with the 40 minor-most is padded to 128 lanes: 5 MiB for 1.56 MiB of
    data, 69% waste. Outputs that alias a parameter share its buffer and are counted once, as the parameter.

    ## Why it matters
    The padding is real HBM: it counts towards E1000 (HBM OOM), slows every copy and transfer of the array,
    and a layout that differs between producer and consumer changes the byte size, which the runtime
    rejects with E0102.

    ## Example
    ```hlo
    HloModule m, entry_computation_layout={(bf16[16,1280,40]{2,1,0:T(8,128)(2,1)})->bf16[16,1280,40]{2,1,0:T(8,128)(2,1)}}

    ENTRY %main (e: bf16[16,1280,40]) -> bf16[16,1280,40] {
      %e = bf16[16,1280,40]{2,1,0:T(8,128)(2,1)} parameter(0)
      ROOT %n = bf16[16,1280,40]{2,1,0:T(8,128)(2,1)} negate(%e)
    }
    ```

    ## Fix
    ```hlo
    HloModule m, entry_computation_layout={(bf16[16,1280,40]{1,2,0:T(8,128)(2,1)})->bf16[16,1280,40]{1,2,0:T(8,128)(2,1)}}

    ENTRY %main (e: bf16[16,1280,40]) -> bf16[16,1280,40] {
      %e = bf16[16,1280,40]{1,2,0:T(8,128)(2,1)} parameter(0)
      ROOT %n = bf16[16,1280,40]{1,2,0:T(8,128)(2,1)} negate(%e)
    }
    ```
    Make the minor-most dimension a multiple of 128 (pad or merge the 40 with another dim in the model),
    or transpose so a larger dimension is minor-most: in jax, pin the parameter's layout with
    `jax.jit(..., in_shardings=Format(Layout(major_to_minor=(0, 2, 1)), sharding))`.

    ## Options
    `threshold` (default 0.5): the share of the physical size that must be padding.
    `min_bytes` (default 1 MiB): the fewest padding bytes worth a finding (scalars always waste ~508 of
    their 512 bytes, which is not worth reporting).

    ## References
    XLA tiled layout: https://openxla.org/xla/tiled_layout; `hloscan size SHAPE` and `hloscan memory PATH`.
    """

    code = "HLO301"
    name = "tiled-padding-waste"
    severity = Severity.NOTE
    family = LAYOUTS
    options = {
        "threshold": Option(float, 0.5, "Share of the physical size that must be padding."),
        "min_bytes": Option(int, MIB, "Fewest padding bytes worth a finding."),
    }
    stage = "after_optimizations"

    def run(self, ctx) -> Iterator[Finding]:
        threshold, min_bytes = ctx.option(self, "threshold"), ctx.option(self, "min_bytes")
        sig = module_signature(ctx.module)
        # An aliased output reuses its parameter's buffer: that memory is reported once, as the parameter.
        entries = list(sig.parameters) + [o for o in sig.outputs if not o.aliases]
        for entry in entries:
            waste = entry.bytes - entry.unpadded_bytes
            if entry.bytes and waste >= min_bytes and waste / entry.bytes >= threshold:
                yield self._finding(ctx, entry, waste)

    def _finding(self, ctx, entry: SignatureEntry, waste: int) -> Finding:
        comp = ctx.module.entry
        inst = comp.by_name.get(entry.name) if entry.name else None
        pads = "; ".join(p.describe() for p in padding(entry.shape))
        message = (f"{entry.label} {entry.shape_text} takes {entry.bytes} bytes ({human_bytes(entry.bytes)}) for "
                   f"{entry.unpadded_bytes} bytes of data: {pads} wastes {waste} bytes ({waste / entry.bytes:.0%})")
        data = {"bytes": entry.bytes, "unpadded_bytes": entry.unpadded_bytes, "waste_bytes": waste,
                "waste_fraction": round(waste / entry.bytes, 4), "shape": entry.shape_text,
                "padding": [p.to_json() for p in padding(entry.shape)]}
        better = best_order(entry.shape)
        if better is not None:
            data["smaller_layout"] = {"shape": better[0].to_text(), "bytes": better[1]}
        return self.finding(ctx, comp, inst or comp.root, message, hint=hint_text(entry.shape, better), data=data)


def best_order(shape: Shape) -> tuple[Shape, int] | None:
    """The dimension order (with XLA's default tiling for it) that takes the fewest bytes, if any is smaller."""
    if not shape.is_array or len(shape.dims) < 2 or len(shape.dims) > 5:
        return None
    layout = shape.layout or Layout((), memory_space=shape.memory_space)
    current = minor_to_major(shape)
    options = []
    for order in permutations(range(len(shape.dims))):
        physical = tuple(shape.dims[d] for d in reversed(order))
        tiles, e_bits = default_tiling(shape.element_type, physical)
        candidate = with_layout(shape, Layout(tuple(order), tiles=tiles, element_size_bits=e_bits,
                                              memory_space=layout.memory_space))
        # Among equally small orders, the one that moves the fewest dims is the easiest change to make.
        moved = sum(a != b for a, b in zip(order, current))
        options.append((physical_bytes(candidate), moved, candidate))
    size, _, best = min(options, key=lambda o: o[:2])
    best_bytes = size if size < physical_bytes(shape) else None
    return None if best_bytes is None else (best, best_bytes)


def hint_text(shape: Shape, better: tuple[Shape, int] | None) -> str:
    minor = minor_to_major(shape)[0] if shape.dims else None
    size = f" (now {shape.dims[minor]})" if minor is not None else ""
    text = f"choose a minor-most dimension that is a multiple of 128{size}"
    if better is None:
        return text + ", e.g. by padding or merging it with a neighbouring dimension in the model"
    order = ",".join(map(str, better[0].layout.minor_to_major))
    return (text + f", or transpose so a larger dimension is minor-most: layout {{{order}}} "
            f"({better[0].to_text()}) takes {better[1]} bytes")
