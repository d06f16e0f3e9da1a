"""Fix hints for an HBM OOM or a tight fit, chosen from what dominates the peak."""

from __future__ import annotations

from hloscan.analyses.hbm.capacity import human
from hloscan.analyses.hbm.model import HbmResult


def fix_hints(r: HbmResult) -> list[str]:
    """Most relevant first: donation, remat/offload of saved activations, optimizer state, batch, sharding."""
    hints = []
    unaliased_out = max(r.outputs_bytes - r.aliased_bytes, 0)
    if unaliased_out > 0.05 * r.capacity_bytes:
        hints.append(f"{human(unaliased_out)} of outputs have their own buffers: donate the inputs they replace "
                     "(jax.jit(..., donate_argnums=...)) so XLA writes the outputs in place")
    saved = [b for b in r.live_at_peak if _is_saved_activation(b.op_name)]
    if saved:
        names = ", ".join(f"%{b.instruction}" for b in saved[:3])
        hints.append(f"activations saved for the backward pass are live at the peak ({names}): use jax.checkpoint "
                     "with a stricter policy (e.g. jax.checkpoint_policies.nothing_saveable or "
                     "dots_with_no_batch_dims_saveable), or offload named ones to host with "
                     "save_and_offload_only_these_names(..., offload_src='device', offload_dst='pinned_host')")
    if r.arguments_bytes > 0.5 * r.capacity_bytes:
        hints.append(f"arguments alone take {human(r.arguments_bytes)}: shard parameters and optimizer state over "
                     "more devices (jax.sharding), or keep optimizer state in pinned_host memory")
    hints.append("reduce the batch or sequence size (temporaries scale with it)")
    return hints


def _is_saved_activation(op_name: str | None) -> bool:
    """Buffers written in the forward pass (jvp) or stacked across scan steps for the backward pass."""
    if not op_name:
        return False
    return "jvp(" in op_name and "transpose(" not in op_name or "checkpoint" in op_name or "remat" in op_name
