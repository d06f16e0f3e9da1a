"""Recognises XLA's E1200 host-offload output message and explains it, with the offload trace from a dump."""

from __future__ import annotations

import re

from hloscan.analyses.host_offload.walk import OutputHit, analyze
from hloscan.hlo.ir import Module
from hloscan.hlo.source import source_location

# Stable since 2024-05; both the `INVALID_ARGUMENT:` and the `E1200: CompileTimeHostOffloadOutputLocationMismatch:`
# forms carry it. The 2024-05 "not acceptable" variant quotes the name, hence the optional quotes.
_MESSAGE = re.compile(
    r"Tensor which is moved to host \(starting from \"?(?P<start>[^\s\")]+)\"?\) is returned from the entry "
    r"computation but the layout for this output is not set to host memory")


def starting_from(text: str) -> str | None:
    """The instruction an E1200 message names, or None when the text is not an E1200 message."""
    m = _MESSAGE.search(text)
    return m.group("start") if m else None


def _base(name: str) -> str:
    # XLA passes regenerate numeric suffixes when they clone or rebuild instructions (tuple.1 -> tuple.12).
    return re.sub(r"\.\d+$", "", name)


def explain_e1200(text: str, modules: list[Module] | None) -> str | None:
    """An explanation of an E1200 message (None for other texts); with modules, the matching offload trace."""
    start = starting_from(text)
    if start is None:
        return None
    lines = [
        f"E1200 CompileTimeHostOffloadOutputLocationMismatch: a tensor moved to host memory (XLA's walk starts at "
        f"`{start}`) reaches an output of the entry computation whose layout is not host memory (S(5)).",
        "",
        "XLA's HostOffloader follows every value moved to host (MoveToHost / device_put(..., pinned_host), "
        "S(5) parameters, host kernel outputs) through tuples, calls, loops and compute until a MoveToDevice; "
        "if it reaches the entry ROOT, that output must be declared in host memory.",
        "",
        "Fix one of:",
        "  * declare that output in host memory: jax.jit(..., out_shardings=s.with_memory_kind(\"pinned_host\")) "
        "(S(5) in the entry result layout);",
        "  * move the value back to device before returning it: jax.device_put(x, jax.memory.Space.Device).",
    ]
    if modules:
        lines += [""] + _trace(modules, start)
    else:
        lines += ["", "Pass the dump (before_optimizations.txt) to see the path; `hloscan check` flags it as HLO101, "
                  "and `hloscan graph --finding N` draws it."]
    return "\n".join(lines)


def _trace(modules: list[Module], start: str) -> list[str]:
    candidates: list[tuple[int, Module, OutputHit]] = []
    for module in modules:
        for hit in analyze(module).mismatches:
            got = hit.offload.start.instruction
            rank = 0 if got == start else 1 if _base(got) == _base(start) else 2
            candidates.append((rank, module, hit))
    if not candidates:
        return ["The dump shows no host-memory value reaching an entry output (is it the dump XLA compiled, "
                "before optimizations? Were output memory kinds changed after dumping?)."]
    rank, module, hit = min(candidates, key=lambda c: (c[0], c[2].offload.order))
    note = {0: "matches", 1: "matches (XLA renumbered the name)", 2: "is the closest match to"}[rank]
    out = [f"In module {module.name}, this offload {note} the message: output "
           f"{{{','.join(map(str, hit.output_index))}}} is declared {hit.declared.layout} "
           f"({hit.declared.source}). Path (instruction{{shape index}}):"]
    comps = module.computations_by_name
    for step in hit.path:
        inst = comps[step.computation].by_name[step.instruction]
        loc = source_location(module, inst)
        where = f"  [{loc}]" if loc is not None else ""
        out.append(f"  {step.computation}: {step} = {step.opcode}  (line {step.line}){where}")
    return out
