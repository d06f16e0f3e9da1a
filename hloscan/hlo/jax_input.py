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
    host_inputs = _host_outputs(_input_shardings(obj))
    if host_inputs:
        # jax's HLO text drops memory kinds; XLA's own dump of the same program says S(5) for these
        # parameters, and the checks read it there: restore it, so the API and the CLI agree.
        text = with_host_parameters(text, host_inputs)
    return JaxProgram(text, f"<jax {kind} {_module_name(text)}>", _host_outputs(leaves))


def _input_shardings(obj: Any) -> list[Any]:
    """The flat input shardings of a Compiled (public) or a Lowered (its lowering's compile arguments, the
    only place this jax version keeps them); [] when neither says."""
    try:
        if _is_compiled(obj):
            shardings = getattr(obj, "input_shardings", None)
            if isinstance(shardings, tuple) and len(shardings) == 2 and isinstance(shardings[1], dict):
                shardings = shardings[0]  # (args, kwargs)
            return _flat(shardings)
        lowering = getattr(obj, "_lowering", None)
        args = getattr(lowering, "compile_args", None) or {}
        return _flat(args.get("in_shardings")) if isinstance(args, dict) else []
    except Exception:  # noqa: BLE001 - an unknown jax version only loses the memory kinds, never the check
        return []


def with_host_parameters(text: str, host: tuple[int, ...]) -> str:
    """`text` with memory space S(5) added to the listed entry parameters' layouts in
    `entry_computation_layout` (parameters printed without a layout are left as they are)."""
    key = "entry_computation_layout={("
    start = text.find(key)
    if start < 0:
        return text
    params_start = start + len(key)
    depth, pos = 0, params_start
    while pos < len(text):
        ch = text[pos]
        if ch in "({[":
            depth += 1
        elif ch in ")}]":
            if depth == 0:
                break
            depth -= 1
        pos += 1
    params = _split_top_level(text[params_start:pos])
    wanted = set(host)
    params = [_host_layout(p) if i in wanted else p for i, p in enumerate(params)]
    return text[:params_start] + ", ".join(params) + text[pos:]


def _split_top_level(text: str) -> list[str]:
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        if ch in "({[":
            depth += 1
        elif ch in ")}]":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append(text[start:i].strip())
            start = i + 1
    parts.append(text[start:].strip())
    return [p for p in parts if p]


def _host_layout(param: str) -> str:
    if not param.endswith("}") or "S(" in param[param.rfind("{"):]:
        return param
    layout_start = param.rfind("{")
    layout = param[layout_start + 1:-1]
    layout += "S(5)" if ":" in layout else ":S(5)"
    return param[:layout_start] + "{" + layout + "}"


def _flat(tree: Any) -> list[Any]:
    """Pytree leaves in jax's output order (the order of the entry's output tuple); None stays a leaf."""
    if tree is None:
        return []
    try:
        import jax  # noqa: PLC0415 - the caller handed us a jax object, so jax is loaded already
    except ImportError:  # a stand-in object (tests): tuples, lists and dicts in order
        if isinstance(tree, dict):
            return [leaf for key in sorted(tree) for leaf in _flat(tree[key])]
        if isinstance(tree, (tuple, list)):
            return [leaf for item in tree for leaf in _flat(item)]
        return [tree]
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
