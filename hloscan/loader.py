"""Finds and reads HLO inputs: files (plain, .gz, .xz), `--xla_dump_to` folders, lit-test files with several modules."""

from __future__ import annotations

import gzip
import lzma
import re
from dataclasses import dataclass, field
from pathlib import Path

from .ir import Module
from .parser import HloSyntaxError, parse_text

# Files an --xla_dump_to folder holds beside the HLO modules; recognised and skipped for now.
_NON_MODULE_MARKERS = ("buffer-assignment", "buffer_assignment", "memory-usage-report", "memory_usage_report")
_NON_MODULE_SUFFIXES = (
    "-ir-no-opt.ll",
    "-ir-with-opt.ll",
    ".ptx",
    ".pb",
    ".pbtxt",
    ".json",
)
_HLO_SUFFIXES = (".txt", ".hlo", ".hlo.txt")
_HLO_MARKER = re.compile(rb"^\s*(?:HloModule\b|ENTRY\b)", re.M)
_SNIFF_BYTES = 64 * 1024


@dataclass
class LoadedFile:
    """One input file: its modules, or the error that stopped it."""

    path: str
    modules: list[Module] = field(default_factory=list)
    error: HloSyntaxError | None = None

    @property
    def ok(self) -> bool:
        return self.error is None


def discover(paths: list[str | Path]) -> list[tuple[str, str | None]]:
    """Expand folders into their HLO module files. Returns (path, reason skipped or None)."""
    out: list[tuple[str, str | None]] = []
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            for child in sorted(p for p in path.rglob("*") if p.is_file()):
                reason = _skip_reason(child)
                if reason != "not HLO":
                    out.append((str(child), reason))
        else:
            out.append((str(raw), None))
    return out


def _skip_reason(path: Path) -> str | None:
    name = path.name
    if name.endswith(_NON_MODULE_SUFFIXES) or any(marker in name for marker in _NON_MODULE_MARKERS):
        return "not an HLO module (dump side file)"
    base = name[:-3] if name.endswith(".gz") else name[:-3] if name.endswith(".xz") else name
    if not base.endswith(_HLO_SUFFIXES):
        return "not HLO"
    try:
        head = _open(path).read(_SNIFF_BYTES)
    except (OSError, EOFError, lzma.LZMAError):
        return None  # let read_text report it
    return None if _HLO_MARKER.search(head) else "not HLO"


def _open(path: Path):
    if path.name.endswith(".gz"):
        return gzip.open(path, "rb")
    if path.name.endswith(".xz"):
        return lzma.open(path, "rb")
    return open(path, "rb")


def read_text(path: str) -> str:
    """Read and decode one input; raises HloSyntaxError (HLO001) for unreadable, binary or non-UTF-8 data."""
    try:
        with _open(Path(path)) as handle:
            data = handle.read()
    except (OSError, EOFError, lzma.LZMAError) as exc:
        raise HloSyntaxError(f"cannot read input: {exc}", 1, 1, "", path) from None
    return decode(data, path)


def decode(data: bytes, path: str | None) -> str:
    nul = data.find(b"\0")
    if nul >= 0:
        line, col = _position(data, nul)
        raise HloSyntaxError("binary data (NUL byte): not an HLO text dump", line, col, "", path)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line, col = _position(data, exc.start)
        raise HloSyntaxError(f"invalid UTF-8 byte 0x{data[exc.start]:02x}", line, col, "", path) from None


def _position(data: bytes, offset: int) -> tuple[int, int]:
    line = data.count(b"\n", 0, offset) + 1
    col = offset - (data.rfind(b"\n", 0, offset) + 1) + 1
    return line, col


def load_file(path: str, strict: bool | None = None) -> LoadedFile:
    try:
        return LoadedFile(path, parse_text(read_text(path), path, strict))
    except HloSyntaxError as exc:
        exc.path = path
        return LoadedFile(path, error=exc)


def load(path: str | Path, strict: bool | None = None) -> list[Module]:
    """Parse every module in a file or dump folder. Raises HloSyntaxError for the first bad file."""
    modules: list[Module] = []
    for file, skipped in discover([path]):
        if skipped:
            continue
        loaded = load_file(file, strict)
        if loaded.error is not None:
            raise loaded.error
        modules.extend(loaded.modules)
    return modules


def load_text(text: str, path: str = "<text>", strict: bool | None = None) -> list[Module]:
    return parse_text(text, path, strict)
