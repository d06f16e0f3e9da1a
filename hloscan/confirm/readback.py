"""The compiler's figures read back from the dump folder a worker compiled into, with hloscan's own readers
(the worker only compiles: it runs in the tpu extra's python, where hloscan may not be installed).

- per kernel: `used_scoped_memory_configs` of each tpu_custom_call in after_codegen, read as `hloscan vmem`
  reads a measured figure (analyses.vmem.estimate), with its op_name and Mosaic body to find the same kernel
  in the module that was compiled (optimisation renames kernels);
- per module: each memory space's "Total bytes" of the memory-usage report (analyses.hbm.reports).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from hloscan.analyses.hbm.reports import memory_usage_totals
from hloscan.analyses.vmem.estimate import kernel_body, parse_backend_config, used_scoped_bytes
from hloscan.analyses.vmem.kernels import tpu_custom_calls
from hloscan.hlo.attrs import parse_metadata
from hloscan.hlo.errors import HloSyntaxError
from hloscan.hlo.ir import Computation, Instruction, Shape
from hloscan.hlo.loader import load_text, read_text

KERNEL_TARGET = "tpu_custom_call"


@dataclass(frozen=True)
class CompiledKernel:
    """One tpu_custom_call as the compiler left it after codegen."""

    name: str
    op_name: str | None
    body: str | None  # the serialized Mosaic kernel: the same before and after optimisation, unlike the name
    scoped_bytes: int
    operands: tuple[Shape | None, ...] = ()  # with the layouts and memory spaces the compiler gave them
    result: Shape | None = None


def compiled_kernels(dump: Path) -> tuple[list[CompiledKernel], list[str]]:
    """Every kernel of the after_codegen files in `dump` with a VMEM figure, and what could not be read."""
    kernels: list[CompiledKernel] = []
    problems: list[str] = []
    for path in sorted(dump.glob("*after_codegen*.txt")):
        try:
            text = read_text(str(path))
            if KERNEL_TARGET not in text:  # most programs have no kernel: no parse
                continue
            modules = load_text(text, str(path))
        except HloSyntaxError as exc:
            problems.append(f"{path.name}: {exc.message}")
            continue
        for module in modules:
            kernels.extend(k for comp, inst in tpu_custom_calls(module) if (k := _kernel(comp, inst)) is not None)
    return kernels, problems


def _kernel(comp: Computation, inst: Instruction) -> CompiledKernel | None:
    try:
        config = parse_backend_config(inst.attr("backend_config"))
    except ValueError:
        return None
    scoped = used_scoped_bytes(config)
    if scoped is None:
        return None
    op_name = parse_metadata(inst.attr("metadata")).get("op_name")
    operands = tuple(comp.operand_shape(inst, pos) for pos in range(len(inst.operands)))
    return CompiledKernel(inst.name, op_name if isinstance(op_name, str) else None, kernel_body(config), scoped,
                          operands, inst.shape)


def mosaic_body(inst: Instruction) -> str | None:
    """A kernel's serialized Mosaic body: what identifies it before and after optimisation, which renames it."""
    try:
        return kernel_body(parse_backend_config(inst.attr("backend_config")))
    except ValueError:  # an undecodable backend_config (HLO204 says so): no body to match by
        return None


def report_totals(dump: Path) -> dict[str, int]:
    """Each memory space's total of the memory-usage report(s) in `dump` (one per compiled module)."""
    out: dict[str, int] = {}
    for path in sorted(dump.glob("*memory-usage-report*.txt")):
        try:
            out.update(memory_usage_totals(read_text(str(path))))
        except HloSyntaxError:
            continue  # an unreadable report: its figure is absent, not invented
    return out
