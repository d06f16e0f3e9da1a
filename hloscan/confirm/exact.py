"""`hloscan vmem --exact`: each tpu_custom_call alone in a minimal module (parameters of the same operand
shapes and layouts, the call with the same backend_config), so the compiler's exact scoped-VMEM figure for
one kernel costs a few seconds instead of a whole-program compile.

What it cannot reproduce: in the whole program, memory-space assignment may keep an operand in VMEM
(the figure then differs); alone, every operand comes from HBM. The comparison says how often that matters.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from hloscan.analyses.vmem.kernels import tpu_custom_calls
from hloscan.hlo.ir import Computation, Instruction, Module, resolve_operand_shape

_MEMORY_SPACE = re.compile(r"S\(\d+\)")
_EMPTY_LAYOUT_TAIL = re.compile(r":\}")


@dataclass(frozen=True)
class KernelModule:
    instruction: str
    line: int
    text: str | None  # the minimal module's HLO text; None when it could not be built (`problem` says why)
    problem: str | None = None


def kernel_modules(module: Module) -> list[KernelModule]:
    return [kernel_module(module, comp, inst) for comp, inst in tpu_custom_calls(module)]


def kernel_module(module: Module, comp: Computation, inst: Instruction) -> KernelModule:
    producers = comp.by_name
    shapes = [resolve_operand_shape(o, producers) for o in inst.operands]
    missing = [i for i, s in enumerate(shapes) if s is None]
    if missing or inst.shape is None:
        return KernelModule(inst.name, inst.line, None, f"operand {missing[0] if missing else '?'} has no known shape")
    params = [_device(s.to_text()) for s in shapes]
    result = _device(inst.shape.to_text())
    lines = [f"HloModule exact_{_safe(inst.name)}, entry_computation_layout={{({', '.join(params)})->{result}}}",
             "", "ENTRY %main {"]
    lines += [f"  %p{i} = {p} parameter({i})" for i, p in enumerate(params)]
    operands = ", ".join(f"%p{i}" for i in range(len(params)))
    lines += [f"  ROOT %{inst.name} = {result} custom-call({operands}){without_metadata(inst.attrs_text)}", "}", ""]
    return KernelModule(inst.name, inst.line, "\n".join(lines))


def _device(shape_text: str) -> str:
    """Memory spaces dropped: an entry parameter cannot be declared in VMEM, and alone the kernel's operands
    come from HBM (the one difference from the whole program this module has)."""
    return _EMPTY_LAYOUT_TAIL.sub("}", _MEMORY_SPACE.sub("", shape_text))


def _safe(name: str) -> str:
    return re.sub(r"[^\w.\-]", "_", name)


def without_metadata(attrs_text: str) -> str:
    """The attribute tail without `metadata={...}`: its stack_frame_id points into the original module's
    stack-frame tables, which the minimal module does not have."""
    at = attrs_text.find("metadata={")
    while at > 0 and not attrs_text[:at].rstrip().endswith(","):
        at = attrs_text.find("metadata={", at + 1)
    if at < 0:
        return attrs_text
    end = _closing_brace(attrs_text, at + len("metadata="))
    start = attrs_text.rfind(",", 0, at)
    return attrs_text[:start] + attrs_text[end + 1:]


def _closing_brace(text: str, open_at: int) -> int:
    depth, quoted, escaped = 0, False, False
    for i in range(open_at, len(text)):
        ch = text[i]
        if quoted:
            escaped, quoted = (not escaped and ch == "\\"), quoted if (escaped or ch != '"') else False
            continue
        if ch == '"':
            quoted = True
        elif ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth == 0:
                return i
    return len(text) - 1


@dataclass(frozen=True)
class ExactFigure:
    """One kernel compiled alone: the compiler's scoped VMEM for it, or why there is none."""

    instruction: str
    line: int
    status: str  # the worker's: compiled, compile_error, convert_error, timeout, ...
    scoped_bytes: int | None
    error: str | None
    wall_s: float


def exact_figures(module: Module, topology: str, python: str, timeout: float) -> list[ExactFigure]:
    """Each tpu_custom_call of `module` compiled alone for `topology`, one process per kernel."""
    from hloscan.confirm.runner import run_worker, worker_request  # here: the analyses above need no process machinery

    out = []
    for km in kernel_modules(module):
        if km.text is None:
            out.append(ExactFigure(km.instruction, km.line, "convert_error", None, km.problem, 0.0))
            continue
        result = run_worker(worker_request(km.text, topology), python, timeout)
        # Alone, the kernel is the module's only tpu_custom_call: its figure is the module's.
        scoped = sum(k.scoped_bytes for k in result.kernels) if result.kernels else None
        out.append(ExactFigure(km.instruction, km.line, result.status, scoped, result.error, result.wall_s))
    return out
