"""Output files and file names: reports are written atomically, and any file name can be shown or encoded.

On Linux a file name is bytes; Python keeps the bytes that are not UTF-8 as lone surrogates
(surrogateescape), which no UTF-8 stream or JSON consumer accepts. `printable` shows them as `\\xff`,
`uri_path` percent-encodes the original bytes."""

from __future__ import annotations

import contextlib
import os
import stat
import re
import tempfile
from pathlib import Path
from typing import Iterator, TextIO
from urllib.parse import quote

_SURROGATE = re.compile(r"[\ud800-\udfff]")


def _escape(match: re.Match) -> str:
    code = ord(match.group())
    # U+DC80..U+DCFF stand for the undecodable bytes 0x80..0xFF (PEP 383); others are plain bad text.
    return f"\\x{code - 0xDC00:02x}" if 0xDC80 <= code <= 0xDCFF else f"\\u{code:04x}"


def printable(text: str) -> str:
    """`text` with every lone surrogate escaped, so it can be written to any UTF-8 stream."""
    return _SURROGATE.sub(_escape, text)


# Strings from a dump (file names, op names) may hold characters a terminal obeys or a line reader splits on
# (str.splitlines: \x0b, \x1c-\x1e, \x85, U+2028, U+2029). Tab and newline are left to each reporter.
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029]")


def neutralised(text: str) -> str:
    """`printable(text)` with control and line-separator characters shown as escapes (`\\x1b`, `\\u2028`), so
    one finding stays one line in a line-oriented report."""
    escaped = _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}" if ord(m.group()) < 0x100
                           else f"\\u{ord(m.group()):04x}", text)
    return printable(escaped)


def uri_path(path: str) -> str:
    """A percent-encoded URI path for a file name, from its original bytes (an `\\xff` byte is `%FF`)."""
    return quote(os.fsencode(path) if _SURROGATE.search(path) else path.encode("utf-8", "surrogatepass"))


class OutputError(OSError):
    """An output file that cannot be written (missing folder, no permission)."""


def output_problem(path: str | os.PathLike) -> str | None:
    """Why a report cannot be written to `path`, checked before the work that produces it; None if it can."""
    target = Path(path)
    folder = target.parent if str(target.parent) else Path(".")
    if target.is_dir():
        return "is a folder"
    if not folder.exists():
        return f"folder {printable(str(folder))} does not exist"
    if not folder.is_dir():
        return f"{printable(str(folder))} is not a folder"
    if not os.access(folder, os.W_OK | os.X_OK):
        return f"folder {printable(str(folder))} is not writable"
    if target.exists() and not os.access(target, os.W_OK):
        return "file is not writable"
    return None


class OutputError(Exception):
    """A report or file could not be written (no space, an I/O error, a read-only place): the CLI says so
    and exits 2, as for any input it could not handle."""

    def __init__(self, path: str | os.PathLike, reason: str):
        super().__init__(f"cannot write {printable(str(path))}: {reason}")


def _special(target: Path) -> bool:
    """A device, FIFO or socket (`-o /dev/null`, `-o /dev/stdout`, a named pipe): written through, never
    replaced by a regular file."""
    try:
        mode = os.stat(target).st_mode
    except OSError:
        return False
    return not stat.S_ISREG(mode) and not stat.S_ISDIR(mode)


@contextlib.contextmanager
def atomic_write(path: str | os.PathLike, encoding: str = "utf-8") -> Iterator[TextIO]:
    """Write a text file through a temporary file in the same folder, renamed over `path` only when the
    writer finishes: an interrupted or failed run never leaves a truncated report (or baseline) behind.
    A special file (device, FIFO) is written directly instead. Write errors raise OutputError."""
    target = Path(path)
    if _special(target):
        try:
            with open(target, "w", encoding=encoding, newline="") as handle:
                yield handle
        except OSError as exc:
            raise OutputError(path, exc.strerror or str(exc)) from exc
        return
    try:
        fd, temp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp",
                                    dir=target.parent if str(target.parent) else ".")
    except OSError as exc:
        raise OutputError(path, exc.strerror or str(exc)) from exc
    try:
        with os.fdopen(fd, "w", encoding=encoding, newline="") as handle:
            yield handle
        mode = _mode_for(target)
        os.chmod(temp, mode)
        os.replace(temp, target)
    except OSError as exc:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise OutputError(path, exc.strerror or str(exc)) from exc
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise


def write_output(path: str | os.PathLike, text: str) -> None:
    """Write `text` to `path` whole (atomic_write), raising OutputError when it cannot."""
    with atomic_write(path) as handle:
        handle.write(text)


def _mode_for(target: Path) -> int:
    """Keep an existing file's permissions; a new one gets the usual 0o666 minus the umask (mkstemp uses 0o600)."""
    try:
        return target.stat().st_mode & 0o7777
    except OSError:
        umask = os.umask(0)
        os.umask(umask)
        return 0o666 & ~umask


def json_safe(value):
    """Every string of a JSON document without lone surrogates (file names that are not UTF-8, kept by Python
    as surrogate escapes): strict JSON parsers reject them, and one undecodable name must not cost the report."""
    if isinstance(value, str):
        return printable(value)
    if isinstance(value, dict):
        return {json_safe(k): json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(v) for v in value]
    return value


def json_text(value, **kwargs) -> str:
    """`json.dumps` of `json_safe(value)`: what every command prints as JSON."""
    import json
    return json.dumps(json_safe(value), **kwargs)
