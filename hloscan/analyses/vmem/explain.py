"""Recognise XLA's E1001 scoped-Vmem OOM messages and explain them: how much, which kernel, what to change."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field, replace
from typing import Any, Iterable

from hloscan.analyses.tpu import GENERATIONS, KIB, MIB
from hloscan.analyses.xla_errors import size_unit_bytes
from hloscan.analyses.vmem.estimate import parse_backend_config
from hloscan.hlo.attrs import parse_metadata
from hloscan.hlo.ir import Instruction, Module
from hloscan.hlo.source import source_location

# XLA prints sizes with HumanReadableNumBytes: "17.00M", "340.0K", "512B" (binary units).
_NUM = r"(\d+(?:\.\d+)?)\s*([KMGT]?)(?:i?B)?"
# Three forms XLA uses for one failure; the first is the E1001 text, the others older or related ones.
_SCOPED = re.compile(rf"Scoped allocation with size {_NUM} and limit {_NUM} exceeded scoped vmem limit by {_NUM}")
_USED = re.compile(rf"Ran out of memory in memory space vmem\.\s*Used {_NUM} of {_NUM} vmem")
_ALLOCATION = re.compile(r"Allocation \(size=(\d+)\) would exceed memory \(size=(\d+)\)(?P<rest>[^\n]*)")
_INSTRUCTION = re.compile(r"allocating on stack for %(?P<name>[\w.\-]+) = (?P<shape>.+?) (?P<opcode>custom-call|fusion|[a-z\-]+)\(")
_METADATA = re.compile(r"metadata=\{(?P<body>[^{}]*)\}")
_TARGET = re.compile(r'custom_call_target="(?P<target>[^"]*)"')
_TAG = re.compile(r"tag = '(?P<tag>[^']*)'")
_TRAILING_KERNEL = re.compile(r"(?:\]|spill slots in HLO)\s*::\s*(?P<kernel>[\w.\-]+)\s*$", re.M)
# "Largest program allocations in vmem" entries of the capacity form: size, then Tag or XLA label.
_LARGEST = re.compile(r"^\s*\d+\. Size: (?P<size>\S+)(?P<body>(?:\n(?!\s*\d+\. Size:).*)*)", re.M)
_LABEL = re.compile(r"^\s*(?:Tag|XLA label): (?P<label>.*)$", re.M)
# Physical Vmem sizes XLA reports as capacity: raising scoped limits cannot pass them.
_PHYSICAL = frozenset(g.physical for g in GENERATIONS.values())


@dataclass(frozen=True)
class E1001Explanation:
    """What an E1001 message says, plus what the dump (when given) adds, and the fixes."""

    message: str
    form: str  # "scoped" (E1001 text) | "capacity" (Used X of Y vmem) | "allocation" (Allocation (size=N))
    size_bytes: int
    limit_bytes: int
    tolerance_bytes: int  # the message rounds sizes; the real size may be this much larger
    instruction: str | None = None
    kernel: str | None = None
    shape: str | None = None
    op_name: str | None = None
    custom_call_target: str | None = None
    tag: str | None = None
    source: str | None = None  # Python line, from the dump's stack frames
    configured_limit_bytes: int | None = None  # vmem_limit_bytes found in the dump's backend_config
    notes: tuple[str, ...] = ()
    fixes: tuple[str, ...] = field(default=())
    code: str = "E1001"
    name: str = "CompileTimeScopedVmemOom"

    @property
    def over_bytes(self) -> int:
        return self.size_bytes - self.limit_bytes

    @property
    def suggested_limit_bytes(self) -> int:
        """The size rounded up to a whole MiB, past the message's rounding."""
        return math.ceil((self.size_bytes + self.tolerance_bytes + 1) / MIB) * MIB

    def to_json(self) -> dict[str, Any]:
        return {"code": self.code, "name": self.name, "form": self.form, "size_bytes": self.size_bytes,
                "limit_bytes": self.limit_bytes, "over_bytes": self.over_bytes,
                "size_tolerance_bytes": self.tolerance_bytes, "suggested_limit_bytes": self.suggested_limit_bytes,
                "instruction": self.instruction, "kernel": self.kernel, "shape": self.shape,
                "op_name": self.op_name, "custom_call_target": self.custom_call_target, "tag": self.tag,
                "source": self.source, "configured_limit_bytes": self.configured_limit_bytes,
                "notes": list(self.notes), "fixes": list(self.fixes), "message": self.message}


def parse_size(number: str, unit: str) -> tuple[int, int]:
    """('17.00', 'M') -> (17825792, tolerance): the bytes and half a unit of the last printed digit."""
    scale = size_unit_bytes(unit)
    decimals = len(number.split(".", 1)[1]) if "." in number else 0
    return round(float(number) * scale), (scale // 2) // (10 ** decimals)


# ---------------------------------------------------------------------------------------------------
# Recognition


@dataclass(frozen=True, slots=True)
class _Sizes:
    form: str
    size: int
    limit: int
    tolerance: int
    start: int
    end: int


def _sizes(text: str) -> _Sizes | None:
    m = _SCOPED.search(text)
    if m:
        (size, tol), (limit, _) = parse_size(m.group(1), m.group(2)), parse_size(m.group(3), m.group(4))
        return _Sizes("scoped", size, limit, tol, m.start(), m.end())
    m = _USED.search(text)
    if m:
        (size, tol), (limit, _) = parse_size(m.group(1), m.group(2)), parse_size(m.group(3), m.group(4))
        return _Sizes("capacity", size, limit, tol, m.start(), m.end())
    m = _ALLOCATION.search(text)
    if m:
        return _Sizes("allocation", int(m.group(1)), int(m.group(2)), 0, m.start(), m.end())
    return None


def is_e1001(text: str) -> bool:
    return _sizes(text) is not None


def _kernel_of(instruction: str | None, text: str) -> str | None:
    """A Pallas kernel's name becomes its custom call's instruction name (`%fn.1` for kernel `fn`); the
    older "Allocation (size=...)" form ends its line with `:: <instruction>` instead."""
    return re.sub(r"\.\d+$", "", instruction) if instruction else None


def _message_fields(text: str) -> dict[str, Any]:
    inst = _INSTRUCTION.search(text)
    meta = _METADATA.search(text[inst.start():] if inst else text)
    target = _TARGET.search(text)
    tag = _TAG.search(text)
    op_name = parse_metadata("{" + meta.group("body") + "}").get("op_name") if meta else None
    trailing = _TRAILING_KERNEL.search(text)
    name = inst.group("name") if inst else trailing.group("kernel") if trailing else None
    return {"instruction": name, "shape": inst.group("shape") if inst else None,
            "op_name": str(op_name) if op_name else None, "target": target.group("target") if target else None,
            "tag": tag.group("tag") if tag else None, "kernel": _kernel_of(name, text)}


# ---------------------------------------------------------------------------------------------------
# The dump: source line and the limit the kernel was given


def _find_instruction(modules: Iterable[Module], name: str | None) -> tuple[Module, Instruction] | None:
    if not name:
        return None
    for module in modules:
        for comp in module.computations:
            inst = comp.by_name.get(name)
            if inst is not None:
                return module, inst
    return None


def _configured_limit(inst: Instruction) -> int | None:
    """`vmem_limit_bytes` as serialised into backend_config's scoped_memory_configs (memory space 1)."""
    try:
        entries = parse_backend_config(inst.attr("backend_config")).get("scoped_memory_configs")
    except ValueError:  # a malformed backend_config only means "limit unknown"
        return None
    for entry in entries if isinstance(entries, list) else ():
        if isinstance(entry, dict) and str(entry.get("memory_space", "1")) == "1":
            size = str(entry.get("size", ""))
            return int(size) if size.isdigit() else None
    return None


def _from_dump(modules: list[Module] | None, name: str | None) -> tuple[str | None, int | None, list[str]]:
    if not modules or not name:
        return None, None, []
    hit = _find_instruction(modules, name)
    if hit is None:
        return None, None, [f"the dump has no instruction %{name}; is it the module that failed to compile?"]
    module, inst = hit
    loc = source_location(module, inst)
    where = f"{loc}" + (f" in {loc.function}" if loc is not None and loc.function else "") if loc else None
    return where, _configured_limit(inst), []


# ---------------------------------------------------------------------------------------------------
# Fixes


def _mib(n: int) -> str:
    return f"{n / MIB:.2f} MiB" if n % MIB else f"{n // MIB} MiB"


def _fits_on(size: int) -> list[str]:
    """TPU generations whose physical Vmem per core could hold `size` bytes of scoped allocations."""
    return [g.name for g in GENERATIONS.values() if size <= g.physical]


def _limit_fix(e: E1001Explanation) -> str:
    want = e.suggested_limit_bytes
    mib = want // MIB
    was = f" (it is {_mib(e.configured_limit_bytes)} now)" if e.configured_limit_bytes else ""
    where = f" of kernel `{e.kernel}`" if e.kernel else ""
    fits = _fits_on(want)
    cap = (f" {_mib(want)} fits the physical Vmem of {', '.join(fits)} only." if fits and len(fits) < 5 else
           "" if fits else f" No TPU has {_mib(want)} of Vmem per core: shrink the blocks instead.")
    return (f"Raise the scoped Vmem limit{where} to at least {_mib(want)}{was}: `pl.pallas_call(..., "
            f"compiler_params=pltpu.CompilerParams(vmem_limit_bytes={mib} * 1024 * 1024))`.{cap}")


_SHRINK = ("Or shrink the blocks: every blocked operand and result takes buffer_count x block bytes (2 by "
           "default, double-buffered), padded to (8,128) tiles; halving a block_shape along a grid axis "
           "halves its share. Operands whose block index never changes can use `pipeline_mode=pl.Buffered(1)`; "
           "VMEM scratch_shapes count once.")
_CAPACITY = ("The limit is the chip's physical Vmem, not a scoped limit: raising vmem_limit_bytes or "
             "--xla_tpu_scoped_vmem_limit_kib cannot help. Shrink the blocks or the scratch.")


def _fixes(e: E1001Explanation) -> tuple[str, ...]:
    if e.form == "capacity":
        # A capacity error is never fixed by a larger scoped limit, whatever capacity the message quotes.
        return (_CAPACITY, "S" + _SHRINK[len("Or s"):])
    kib = e.suggested_limit_bytes // KIB
    flag = (f"Or raise the default for every kernel: `LIBTPU_INIT_ARGS=--xla_tpu_scoped_vmem_limit_kib={kib}`. "
            "jax documents that vmem_limit_bytes should stay below this flag's value, so set both when the "
            "per-kernel value alone is not accepted.")
    return (_limit_fix(e), _SHRINK, flag)


def _notes(e: E1001Explanation) -> list[str]:
    out = []
    if e.tolerance_bytes:
        out.append(f"the message rounds sizes: the real size is {e.size_bytes} +- {e.tolerance_bytes} bytes")
    if e.configured_limit_bytes and e.configured_limit_bytes == e.limit_bytes:
        out.append("the limit is the kernel's own vmem_limit_bytes (the dump's scoped_memory_configs)")
    elif e.form == "scoped" and e.limit_bytes in {g.default_limit for g in GENERATIONS.values()}:
        out.append(f"{_mib(e.limit_bytes)} is the default scoped limit (16 MiB up to v5p, 32 MiB on v6e and later)")
    if e.form == "allocation" and e.tag:
        out.append(f"allocation: {e.tag}")
    if e.form == "capacity":
        out.append("XLA printed this Vmem OOM without an error code: the kernel's scoped VMEM exceeds the chip's "
                   "whole VMEM (the scoped check, E1001, is a separate limit); `hloscan rule HLO205` is the check "
                   "that predicts it")
    return out


def largest_allocations(text: str, limit: int = 5) -> list[str]:
    """`size: label` for the capacity form's "Largest program allocations in vmem" list."""
    out = []
    for m in _LARGEST.finditer(text):
        label = _LABEL.search(m.group("body"))
        out.append(f"{m.group('size')}: {label.group('label').strip() if label else 'unlabelled'}")
    return out[:limit]


# ---------------------------------------------------------------------------------------------------
# Entry points


def explain_e1001(text: str, modules: list[Module] | None = None) -> E1001Explanation | None:
    """Explain the first scoped-Vmem OOM in `text`; `modules` (the dump) add the source line and limit."""
    sizes = _sizes(text)
    if sizes is None:
        return None
    f = _message_fields(text)
    source, configured, dump_notes = _from_dump(modules, f["instruction"])
    e = E1001Explanation(text.strip(), sizes.form, sizes.size, sizes.limit, sizes.tolerance, f["instruction"],
                         f["kernel"], f["shape"], f["op_name"], f["target"], f["tag"], source, configured)
    largest = [f"largest allocation {a}" for a in largest_allocations(text)]
    if e.form == "capacity":
        # Not E1001: the kernel needs more than the chip's whole VMEM (XLA prints no code); HLO205 predicts it.
        e = replace(e, code="VMEM-capacity", name="VmemCapacityOom (no XLA error code; hloscan HLO205)")
    return replace(e, notes=tuple(_notes(e) + largest + dump_notes), fixes=_fixes(e))


def render_text(e: E1001Explanation) -> str:
    if e.form == "capacity":
        lines = [f"{e.name}: the kernel needs {_mib(e.size_bytes)} ({e.size_bytes} bytes) of the chip's "
                 f"{_mib(e.limit_bytes)} ({e.limit_bytes} bytes) of VMEM, over by {_mib(e.over_bytes)}"]
    else:
        what = {"scoped": "scoped Vmem", "allocation": "Vmem allocation"}[e.form]
        lines = [f"{e.code} {e.name}: {what} needs {_mib(e.size_bytes)} ({e.size_bytes} bytes), limit "
                 f"{_mib(e.limit_bytes)} ({e.limit_bytes} bytes), over by {_mib(e.over_bytes)}"]
    if e.instruction or e.kernel:
        lines.append(f"  kernel: {e.kernel or '?'}" + (f" (instruction %{e.instruction})" if e.instruction else ""))
    for label, value in (("result", e.shape), ("op_name", e.op_name), ("target", e.custom_call_target),
                         ("source", e.source)):
        if value:
            lines.append(f"  {label}: {value}")
    if e.notes:
        lines.append("  notes:")
        lines += [f"    - {n}" for n in e.notes]
    lines.append("  fixes:")
    lines += [f"    - {f}" for f in e.fixes]
    return "\n".join(lines)


__all__ = ["E1001Explanation", "explain_e1001", "is_e1001", "parse_size", "render_text"]
