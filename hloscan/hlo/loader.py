"""Finds and reads HLO inputs: files (plain, .gz, .xz), `--xla_dump_to` folders, lit-test files with several modules."""

from __future__ import annotations

import gzip
import lzma
import os
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

from hloscan.hlo.ir import Module
from hloscan.hlo.parser import HloSyntaxError, parse_text
from hloscan.hlo.entry_only import entry_only_text

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
_HLO_NAMED_SUFFIXES = (".hlo", ".hlo.txt")
_HLO_MARKER = re.compile(rb"^\s*(?:HloModule\b|ENTRY\b)", re.M)
# An instruction line (`%x = f32[2] ...`, `ROOT t = (s32[], ...) tuple(...)`): a bare computation, as XLA's
# test inputs hold, without a header. HloProto text (`name: "x"`) and pass lists have none.
_INSTRUCTION_LINE = re.compile(rb"^\s*(?:ROOT\s+)?%?[\w.\-]+\s*=\s*(?:\(|[a-z][a-z0-9]*\[)", re.M)
_SNIFF_BYTES = 64 * 1024


@dataclass
class LoadedFile:
    """One input file: its modules, or the error that stopped it."""

    path: str
    modules: list[Module] = field(default_factory=list)
    error: HloSyntaxError | None = None
    notes: list[str] = field(default_factory=list)  # what was read leniently (bad bytes in metadata strings)

    @property
    def ok(self) -> bool:
        return self.error is None


# Why a file was not scanned; every skip is counted and reported (nothing is dropped silently).
SKIP_SIDE_FILE = "not an HLO module (dump side file)"
SKIP_NOT_HLO_NAME = "not an HLO file name (.hlo, .txt, .hlo.txt, optionally .gz/.xz)"
SKIP_NO_HEADER = "a .txt file without an HloModule header or ENTRY computation"
SKIP_NO_HLO_TEXT = "no HloModule header and no HLO instruction line (not HLO text)"
SKIP_DANGLING = "dangling symlink"
SKIP_UNREADABLE_DIR = "unreadable folder"
SKIP_DIR_LINK = "symlink to a folder (not followed)"
SKIP_DUPLICATE = "the same file as an earlier input"

STDIN = "-"  # the path that means "read standard input" (check and parse)
# How the error of an input that could not be read begins (the result cache does not keep those: a read
# that failed may succeed next time, while a syntax error is a fact of the bytes).
READ_FAILURE = "cannot read input"


def discover(paths: list[str | Path]) -> list[tuple[str, str | None]]:
    """Expand folders into their HLO module files. Returns (path, reason skipped or None) for every file
    seen, in order; a file reached twice (named twice, or through a symlink) is scanned once."""
    out: list[tuple[str, str | None]] = []
    seen: set[str] = set()
    for raw in paths:
        if str(raw) == STDIN:
            out.append((STDIN, SKIP_DUPLICATE if STDIN in seen else None))
            seen.add(STDIN)
            continue
        path = Path(raw)
        entries = _walk(path) if path.is_dir() else [(str(raw), None)]
        for file, reason in entries:
            if reason is None:
                real = os.path.realpath(file)
                if real in seen:
                    reason = SKIP_DUPLICATE
                seen.add(real)
            out.append((file, reason))
    return out


def _walk(folder: Path) -> list[tuple[str, str | None]]:
    """Every file below a folder with its skip reason (None: scan it); unreadable sub-folders are reported."""
    out: list[tuple[str, str | None]] = []

    def unreadable(exc: OSError) -> None:
        out.append((exc.filename or str(folder), f"{SKIP_UNREADABLE_DIR}: {exc.strerror or exc}"))

    for root, dirs, files in os.walk(folder, onerror=unreadable):
        dirs.sort()
        for name in dirs:
            if os.path.islink(os.path.join(root, name)):
                out.append((os.path.join(root, name), SKIP_DIR_LINK))
        for name in sorted(files):
            child = Path(root, name)
            out.append((str(child), SKIP_DANGLING if not child.exists() else _skip_reason(child)))
    return sorted(out, key=lambda entry: Path(entry[0]).parts)


def _skip_reason(path: Path) -> str | None:
    name = path.name
    if name.endswith(_NON_MODULE_SUFFIXES) or any(marker in name for marker in _NON_MODULE_MARKERS):
        return SKIP_SIDE_FILE
    base = name[:-3] if name.endswith((".gz", ".xz")) else name
    if not base.endswith(_HLO_SUFFIXES):
        return SKIP_NOT_HLO_NAME
    try:
        with _open(path) as handle:
            head = handle.read(_SNIFF_BYTES)
    except (OSError, EOFError, lzma.LZMAError):
        return None  # let read_text report it
    if _HLO_MARKER.search(head):
        return None
    if base.endswith(_HLO_NAMED_SUFFIXES):
        # `.hlo` files are HLO by name: XLA's test inputs often hold a bare computation with no HloModule
        # header, which parses as when the file is named on the command line.
        return None if _has_instruction_line(path, head) else SKIP_NO_HLO_TEXT
    return SKIP_NO_HEADER


def _has_instruction_line(path: Path, head: bytes) -> bool:
    """Whether a header-less `.hlo` file holds an instruction line anywhere (lit tests may open with pages
    of CHECK comments)."""
    if _INSTRUCTION_LINE.search(head):
        return True
    if len(head) < _SNIFF_BYTES:
        return False
    try:
        with _open(path) as handle:
            return _INSTRUCTION_LINE.search(handle.read()) is not None
    except (OSError, EOFError, lzma.LZMAError):
        return True  # let read_text report it


def _open(path: Path):
    if path.name.endswith(".gz"):
        return gzip.open(path, "rb")
    if path.name.endswith(".xz"):
        return lzma.open(path, "rb")
    return open(path, "rb")


def read_text(path: str) -> str:
    """Read and decode one input (`-` is standard input); raises HloSyntaxError (HLO001) for unreadable,
    binary or non-UTF-8 data."""
    return read_input(path)[0]


_GZIP_MAGIC, _XZ_MAGIC = b"\x1f\x8b", b"\xfd7zXZ\x00"


def read_input(path: str) -> tuple[str, list[str]]:
    """The decoded text of one input and notes on what was read leniently. Standard input may be gzip or
    xz data (`zcat` not needed), recognised by its magic bytes as files are by their suffix."""
    if path == STDIN:
        data = sys.stdin.buffer.read()
        try:
            if data.startswith(_GZIP_MAGIC):
                data = gzip.decompress(data)
            elif data.startswith(_XZ_MAGIC):
                data = lzma.decompress(data)
        except (OSError, EOFError, lzma.LZMAError) as exc:
            raise HloSyntaxError(f"cannot decompress standard input: {exc}", 1, 1, "", path) from None
        return decode_lenient(data, path)
    try:
        with _open(Path(path)) as handle:
            data = handle.read()
    except (OSError, EOFError, lzma.LZMAError) as exc:
        raise HloSyntaxError(f"{READ_FAILURE}: {exc}", 1, 1, "", path) from None
    return decode_lenient(data, path)


_METADATA_STRING = re.compile(rb'metadata=\{[^\n]*')


def decode_lenient(data: bytes, path: str | None) -> tuple[str, list[str]]:
    """`decode`, except that bytes that are not UTF-8 inside metadata strings (an op_name or source path
    written by another tool) are replaced, with a note, instead of failing the whole file."""
    try:
        return decode(data, path), []
    except HloSyntaxError:
        if b"\0" in data:
            raise
        bad = _invalid_offsets(data)
        spans = [(m.start(), m.end()) for m in _METADATA_STRING.finditer(data)]
        if not bad or not all(any(a <= off < b for a, b in spans) for off in bad):
            raise
        line, col = _position(data, bad[0])
        note = (f"{len(bad)} byte(s) that are not UTF-8 inside metadata strings (first at {line}:{col}) were "
                "read as U+FFFD")
        return data.decode("utf-8", errors="replace"), [note]


def _invalid_offsets(data: bytes, limit: int = 1000) -> list[int]:
    out, pos = [], 0
    while len(out) < limit:
        try:
            data[pos:].decode("utf-8")
            return out
        except UnicodeDecodeError as exc:
            out.append(pos + exc.start)
            pos += exc.end
    return out


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


def load_file(path: str, strict: bool | None = None, entry_only: bool = False,
              entry_only_without: str | None = None) -> LoadedFile:
    """One file's modules. `entry_only`: a big dump's computations other than the ENTRY are not parsed (see
    entry_only.py); for what reads only the entry signature. `entry_only_without`: the same for a text in
    which this string does not occur (`vmem` needs nothing of a dump without a `tpu_custom_call`)."""
    try:
        text, notes = read_input(path)
        if entry_only_without is not None and entry_only_without not in text:
            entry_only = True
        cut = entry_only_text(text) if entry_only and strict is not True else None
        if cut is not None:  # the parse mode of the whole text, which was too big for the grammar
            text, strict = cut, False
        return LoadedFile(path, parse_text(text, path, strict), notes=notes)
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
