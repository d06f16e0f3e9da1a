"""The TPU compiler's verdict on one module, from its error text: which failure, which hloscan rule
predicts it, which instruction it names and the sizes it quotes. Pure text work, no jax."""

from __future__ import annotations

import re
from dataclasses import dataclass

from hloscan.analyses.xla_errors import size_unit_bytes

# Failure kinds, named as the tpu-oracle corpus's `error_kind` column names them.
OK = "ok"
SCOPED_VMEM = "scoped_vmem_oom"  # E1001
HOST_OFFLOAD = "host_offload_output_location"  # E1200
MISALIGNED = "mosaic_misaligned_block"  # E2002
HBM = "hbm_temporaries_oom"  # E1000 (this libtpu prints no code for it)
VMEM_CAPACITY = "vmem_capacity_oom"  # whole-VMEM capacity: no XLA code
OTHER = "other"

# Kind -> (hloscan rule that predicts it, XLA error code or None).
RULES: dict[str, tuple[str, str | None]] = {
    SCOPED_VMEM: ("HLO201", "E1001"),
    HOST_OFFLOAD: ("HLO101", "E1200"),
    MISALIGNED: ("HLO203", "E2002"),
    HBM: ("HLO401", "E1000"),
    VMEM_CAPACITY: ("HLO205", None),
    OTHER: ("HLO910", None),
}
RULE_KIND = {rule: kind for kind, (rule, _) in RULES.items()}

_CODE = re.compile(r"\bE(\d{4})\b")
_CODE_KIND = {"E1001": SCOPED_VMEM, "E1200": HOST_OFFLOAD, "E2002": MISALIGNED, "E1000": HBM}
_HBM = re.compile(r"Ran out of memory on HBM|memory space hbm", re.I)
_VMEM_CAPACITY = re.compile(r"Ran out of memory in memory space vmem\.\s*Used|Exceeded vmem capacity", re.I)
_STACK_FOR = re.compile(r"allocating on stack for %?([\w.\-]+)\s*=")
_STARTING = re.compile(r"starting from %?([\w.\-]+)\)")
_OP_NAME = re.compile(r'op_name="([^"]*)"')
_SIZE = r"([\d.]+)\s*([KMGT]i?B?|B)?"
_SCOPED_SIZES = re.compile(r"size " + _SIZE + r" and limit " + _SIZE)
_HBM_SIZES = re.compile(r"temporaries \(" + _SIZE + r"\) exceeds available HBM \(" + _SIZE + r"\)")
_CAPACITY_SIZES = re.compile(r"Used " + _SIZE + r" of " + _SIZE + " vmem")


@dataclass(frozen=True)
class Verdict:
    kind: str  # OK or one of the failure kinds
    error: str | None = None  # the compiler's text
    instruction: str | None = None  # the instruction the message names, when it names one
    op_name: str | None = None  # that instruction's op_name (names differ before and after optimisation)
    size_bytes: int | None = None  # the need the message quotes (rounded as XLA prints it)
    limit_bytes: int | None = None  # the limit or capacity it was compared to

    @property
    def ok(self) -> bool:
        return self.kind == OK

    @property
    def rule(self) -> str | None:
        return None if self.ok else RULES[self.kind][0]

    @property
    def xla_error(self) -> str | None:
        return None if self.ok else RULES[self.kind][1]

    @property
    def label(self) -> str:
        if self.ok:
            return "ok"
        code = self.xla_error
        return f"{code} ({self.kind})" if code else self.kind


def classify(error: str | None) -> Verdict:
    """The verdict of a compile that raised `error` (None: it compiled)."""
    if not error:
        return Verdict(OK)
    kind = _kind(error)
    size, limit = _sizes(kind, error)
    op_name = _OP_NAME.search(error)
    return Verdict(kind, error, _instruction(kind, error), op_name.group(1) if op_name else None, size, limit)


def _kind(error: str) -> str:
    for code in _CODE.findall(error):
        kind = _CODE_KIND.get(f"E{code}")
        if kind:
            return kind
    if _HBM.search(error):
        return HBM
    if _VMEM_CAPACITY.search(error):
        return VMEM_CAPACITY
    return OTHER


def _instruction(kind: str, error: str) -> str | None:
    pattern = _STARTING if kind == HOST_OFFLOAD else _STACK_FOR
    found = pattern.search(error)
    return found.group(1) if found else None


def _sizes(kind: str, error: str) -> tuple[int | None, int | None]:
    pattern = {SCOPED_VMEM: _SCOPED_SIZES, HBM: _HBM_SIZES, VMEM_CAPACITY: _CAPACITY_SIZES}.get(kind)
    found = pattern.search(error) if pattern else None
    if not found:
        return None, None
    return to_bytes(found.group(1), found.group(2)), to_bytes(found.group(3), found.group(4))


def to_bytes(number: str, unit: str | None) -> int:
    return round(float(number) * size_unit_bytes(unit))


def recorded_kind(verdict: str, error_kind: str) -> str:
    """The kind of a tpu-oracle MANIFEST row (`verdict`, `error_kind`), to compare with classify()."""
    if verdict == "ok":
        return OK
    code = verdict.split(":", 1)[0]
    return _CODE_KIND.get(code) or error_kind or OTHER
