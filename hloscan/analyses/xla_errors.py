"""What XLA's numbered errors (E1200, E1001, E0102, ...) mean and which hloscan rules predict them."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable

_CODE_RE = re.compile(r"^E(\d{4})$")

# XLA prints sizes in its messages with HumanReadableNumBytes ("17.00M", "340.0K", "19.13G"): binary units.
_SIZE_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}


def size_unit_bytes(unit: str | None) -> int:
    """Bytes in one unit of a size in an XLA message: "", "B", "K", "KB", "KiB", "M", ... (all binary)."""
    return _SIZE_UNITS.get((unit or "").upper().removesuffix("B").removesuffix("I"), 1)


@dataclass(frozen=True)
class XlaError:
    code: str
    name: str
    meaning: str
    fix: str = ""

    @property
    def url(self) -> str:
        return f"https://openxla.org/xla/errors/error_{self.code[1:]}"


# Short explanations in our own words; sources: shared/reference/tpu-memory.md (error catalogue) and
# host-offload.md. Only codes a user of a static HLO tool is likely to paste are listed.
XLA_ERRORS: dict[str, XlaError] = {e.code: e for e in (
    XlaError("E0100", "RuntimeBufferAllocationFailure",
             "At run time the device (HBM) allocator could not find room for a buffer: out of memory "
             "or too fragmented.",
             "Reduce batch or model size, shard the arrays over more devices, or free live buffers."),
    XlaError("E0101", "RuntimeProgramAllocationFailure",
             "The compiled program (code, constants, reserved space) does not fit in device memory when "
             "it is loaded.",
             "Look for very large constants folded into the program; pass them as arguments instead."),
    XlaError("E0102", "RuntimeProgramInputMismatch",
             "A buffer passed to the executable has a different byte size than the compiled parameter "
             "expects. On TPU the logical shape usually matches but the layout (dimension order or "
             "tiling) differs, so the padded physical sizes differ.",
             "Pass arrays with the layout the executable was compiled for (check entry_computation_layout "
             "of both sides); `hloscan explain` with the full message names the padded dimension."),
    XlaError("E0200", "RuntimeUnexpectedCoreHalt",
             "The TPU core halted during execution: a hardware or infrastructure fault, or a "
             "compiler-inserted on-device check (bounds check, Mosaic semaphore left non-zero) failed.",
             "Re-run to rule out hardware; for bounds checks inspect dynamic indices and DMA sizes."),
    XlaError("E1000", "CompileTimeHbmOom",
             "At compile time the peak HBM use (parameters, temporaries, program, reserved space) "
             "exceeds the chip's capacity.",
             "Shard more, rematerialise, offload activations to host, or shrink the batch."),
    XlaError("E1001", "CompileTimeScopedVmemOom",
             "One instruction, typically a Pallas/Mosaic `tpu_custom_call` kernel, needs more scoped "
             "Vmem (its double-buffered blocks plus scratch) than the per-instruction scoped Vmem limit "
             "(16 MiB on v5e/v5p, 32 MiB on v6e/v7x by default).",
             "Use smaller blocks, single-buffer inputs that do not change across the grid, or raise the "
             "limit with `vmem_limit_bytes` in the kernel's compiler params or "
             "--xla_tpu_scoped_vmem_limit_kib."),
    XlaError("E1002", "HbmAndVmemOom",
             "TensorCore plus SparseCore HBM use together exceed the available bytes at compile time.",
             "Reduce the embedding tables or activations placed on the device."),
    XlaError("E1200", "CompileTimeHostOffloadOutputLocationMismatch",
             "A tensor that was moved to host memory (MoveToHost annotation or an S(5) layout) flows to "
             "an output of the entry computation, but that output's layout in entry_computation_layout "
             "is device memory, not host memory S(5).",
             "Either declare the output in host memory (out_shardings with memory_kind='pinned_host') or "
             "move the value back to device before returning it."),
    XlaError("E2001", "CompileTimeMosaicUnsupportedRhsType",
             "A Mosaic (Pallas) matmul uses a right-hand-side dtype this TPU generation cannot multiply "
             "natively (e.g. int8 or fp8 on older chips).",
             "Cast the operands to a supported dtype (bf16/f32) for that generation."),
    XlaError("E2002", "CompileTimeMosaicMisalignedBlockAndTiling",
             "A Pallas block's last two dimensions are neither multiples of the operand's tiling "
             "(e.g. 8/16/32 x 128) nor equal to the full array dimensions.",
             "Choose block shapes that are tile multiples or span the whole dimension."),
    XlaError("E2003", "CompileTimeMosaicUnprovenMemoryAccessAlignment",
             "Mosaic could not prove that a dynamic load/store index is a multiple of the tile size.",
             "Make the index an explicit multiple (pl.multiple_of) or align the block."),
    XlaError("E3000", "CompileTimeSparseCoreAllocationFailure",
             "A SparseCore allocation exceeds the memory space it was placed in.", ""),
    XlaError("E3001", "CompileTimeSparseCoreInvalidReplicaCount",
             "No split of an embedding workload fits the SparseCore's tile memory.", ""),
)}


def normalize(code: str) -> str | None:
    """`e1200`, `E1200`, `1200` and `error_1200` all mean E1200; None if it is not an XLA error code."""
    text = code.strip().upper().removeprefix("ERROR_").removeprefix("ERROR")
    if text.isdigit() and len(text) == 4:
        text = "E" + text
    return text if _CODE_RE.match(text) else None


def explain_xla_code(code: str, predicting: Callable[[str], list],
                     related: Callable[[str], list] | None = None) -> str | None:
    """A short explanation of an XLA error code and the hloscan rules that predict it; None if unknown.

    `predicting(code)` gives those rules (objects with code, name, summary()): the lint registry's
    `predicting`, passed in by the command so that analyses never import the lint framework. `related(code)`
    gives the other rules of the families declared for the error (they flag its risk factors)."""
    norm = normalize(code)
    if norm is None:
        return None
    entry = XLA_ERRORS.get(norm)
    rules = predicting(norm)
    if entry is None and not rules:
        return None
    lines = [f"{norm}: {entry.name}" if entry else norm]
    if entry:
        lines += ["", entry.meaning]
        if entry.fix:
            lines += ["", f"Fix: {entry.fix}"]
    lines += ["", "Predicted by:" if rules else "Predicted by: no hloscan rule (hloscan cannot see this statically)."]
    lines += [f"  {c.code} {c.name}: {c.summary()}  (hloscan rule {c.code})" for c in rules]
    others = [c for c in (related(norm) if related else []) if c not in rules]
    if others:
        lines += ["", "Related rules (same family; they flag risks of this error, not the error itself):"]
        lines += [f"  {c.code} {c.name}: {c.summary()}  (hloscan rule {c.code})" for c in others]
    if entry:
        lines += ["", f"XLA docs: {entry.url}"]
    return "\n".join(lines)
