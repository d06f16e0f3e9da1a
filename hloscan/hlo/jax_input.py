"""jax `Lowered` / `Compiled` objects as input: their HLO text and which entry outputs live in host memory.

jax is never imported by hloscan on its own: an object is recognised by duck typing (its type's module
is jax's and it has `as_text`), and jax's pytree helper is imported only once such an object is in hand,
i.e. when jax is already loaded by the caller.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

# The memory kind jax gives outputs declared in host memory (`out_shardings=...with_memory_kind("pinned_host")`).
HOST_MEMORY_KIND = "pinned_host"


@dataclass(frozen=True)
class JaxProgram:
    """What hloscan reads from a jax stage object."""

    text: str  # HLO text (not StableHLO)
    label: str  # stands in for a path in findings: `<jax Lowered jit_f>`
    host_outputs: tuple[int, ...] | None  # flat output indices in pinned_host; None when jax did not say


def is_jax_stage(obj: Any) -> bool:
    """A jax `Lowered` or `Compiled` (jax.stages), recognised without importing jax."""
    module = type(obj).__module__ or ""
    return (module == "jax" or module.startswith("jax.") or module.startswith("jax._src")) and callable(
        getattr(obj, "as_text", None))


def _is_compiled(obj: Any) -> bool:
    return hasattr(obj, "output_shardings") and not hasattr(obj, "compile")


def program_of(obj: Any) -> JaxProgram:
    """HLO text and host-memory outputs of a jax Lowered (unoptimised HLO) or Compiled (optimised HLO)."""
    if _is_compiled(obj):
        text = obj.as_text()
        kind = "Compiled"
        leaves = _flat(getattr(obj, "output_shardings", None))
    else:
        # Lowered.as_text() defaults to StableHLO MLIR; the HLO dialect is what hloscan reads.
        text = obj.as_text(dialect="hlo")
        kind = type(obj).__name__ or "Lowered"
        leaves = [getattr(info, "sharding", None) for info in _flat(getattr(obj, "out_info", None))]
    if not isinstance(text, str):
        raise TypeError(f"jax {kind}.as_text() returned {type(text).__name__}, not text")
    return JaxProgram(text, f"<jax {kind} {_module_name(text)}>", _host_outputs(leaves))


def _flat(tree: Any) -> list[Any]:
    """Pytree leaves in jax's output order (the order of the entry's output tuple); None stays a leaf."""
    if tree is None:
        return []
    import jax  # noqa: PLC0415 - the caller handed us a jax object, so jax is loaded already

    return jax.tree_util.tree_leaves(tree, is_leaf=lambda x: x is None)


def _host_outputs(shardings: list[Any]) -> tuple[int, ...] | None:
    kinds = [getattr(s, "memory_kind", None) for s in shardings]
    if not kinds or all(k is None for k in kinds):
        return None  # no memory kinds known: leave the analysis to what the HLO itself says
    return tuple(i for i, kind in enumerate(kinds) if kind == HOST_MEMORY_KIND)


def _module_name(text: str) -> str:
    first = text.lstrip().split("\n", 1)[0]
    if first.startswith("HloModule "):
        return first[len("HloModule "):].split(",", 1)[0].strip()
    return "module"
