"""The result cache of `hloscan check`: the findings of a file that has not changed since the last run are
read back instead of computed again (ruff's cache, for a pre-submit lint run again and again on the same
dumps).

One entry per input file, named by a key that covers everything the file's findings depend on:

- the sha256 of the file's bytes (as stored: a `.xz` file is hashed compressed), its path as given (the
  path is in every finding), and the side files its checks may read besides it (XLA's memory reports
  beside a dump, `Family.side_files`: their sha256, or that they are absent);
- what runs on it: the checks planned for it (selection, per-path ignores, the dump stages of its module
  group in the folder) and every setting (run-wide options such as `--tpu`, check options, severity
  overrides, `--strict`/`--fast`);
- hloscan itself: its version, the size and mtime of every source file of the package (an edited
  checkout is another hloscan), the Python version and this cache's FORMAT.

So a warm run costs reading and hashing the inputs, and never gives another answer than a cold run.
Location: $HLOSCAN_CACHE_DIR, else $XDG_CACHE_HOME/hloscan/results (~/.cache/hloscan/results): outside the
project, so read-only dump folders and checkouts are never written to. Entries are JSON (never pickle:
nothing read back is executed), written to a temporary file in the same folder and renamed into place, so
concurrent runs never see half an entry; an entry that cannot be read or decoded is ignored and rewritten.
The folder is kept under $HLOSCAN_CACHE_MAX_MB (default 256 MB) by deleting the least recently used entries.

What is not cached, and so is computed on every run: standard input, a file that could not be read, a
file whose checks crashed (HLO900), and a result holding a value with no exact JSON form.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import json
import logging
import os
import re
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hloscan.hlo.loader import READ_FAILURE, STDIN, LoadedFile
from hloscan.lint.engine import ModuleSummary
from hloscan.lint.finding import Finding, Severity
from hloscan.lint.registry import lookup
from hloscan.lint.serialize import (Unencodable, decode_error, decode_finding, encode_error, encode_finding)
from hloscan.version import __version__

log = logging.getLogger(__name__)

FORMAT = 1  # bump when the entry layout or what the key covers changes
DIR_ENV, MAX_MB_ENV = "HLOSCAN_CACHE_DIR", "HLOSCAN_CACHE_MAX_MB"
DEFAULT_MAX_MB = 256
# After pruning the folder holds at most this share of the bound, so a run that adds a few entries to a full
# cache does not list and prune the whole folder again.
PRUNE_TO = 0.8
STALE_TEMP_SECONDS = 3600  # a temporary file this old was left by a killed run
_ENTRY = re.compile(r"^[0-9a-f]{64}\.json$")
_TEMP_PREFIX = ".tmp-"


def default_directory() -> Path:
    """$HLOSCAN_CACHE_DIR, else the user cache directory's hloscan/results."""
    chosen = os.environ.get(DIR_ENV)
    if chosen:
        return Path(chosen)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base, "hloscan", "results")


def default_max_bytes() -> int:
    try:
        megabytes = float(os.environ.get(MAX_MB_ENV, DEFAULT_MAX_MB))
    except ValueError:
        megabytes = DEFAULT_MAX_MB
    return int(max(megabytes, 0) * 1e6)


@dataclass(frozen=True)
class ResultCache:
    """Where entries live and how much they may take; `session` binds it to one run's settings."""

    directory: Path
    max_bytes: int

    @classmethod
    def default(cls) -> "ResultCache":
        return cls(default_directory(), default_max_bytes())

    def session(self, options: dict[str, Any], severities: dict[str, Severity], strict: bool | None) -> "Session":
        return Session(self, _digest([FORMAT, hloscan_fingerprint(), _canonical(options),
                                      sorted((code, int(level)) for code, level in severities.items()), strict]))


@dataclass
class Probe:
    """One task's look-up: its key and the file's identity when hashed (None: not cacheable), and the
    cached result when there was one."""

    key: str | None
    identity: tuple | None
    hit: tuple[LoadedFile, list[Finding]] | None = None


class Session:
    """The cache as seen by one scan (one set of settings)."""

    def __init__(self, cache: ResultCache, run_key: str):
        self.cache, self.run_key = cache, run_key
        self.written = 0

    def lookup(self, path: str, codes: tuple[str, ...], stages: tuple[str, ...]) -> Probe:
        """The entry of one input file, scanned with these checks, in a module group of these stages."""
        if path == STDIN:
            return Probe(None, None)
        try:
            digest, identity = _file_digest(path)
            sides = _side_fingerprints(path, codes)
        except OSError:
            return Probe(None, None)  # the scan reports why the file cannot be read
        key = _digest([self.run_key, path, digest, list(codes), list(stages), sides])
        return Probe(key, identity, self._read(key, path))

    def store(self, probe: Probe, loaded: LoadedFile, findings: list[Finding]) -> None:
        """Keep what the scan of a file that missed found, unless it is not a fact of the file."""
        if probe.key is None or probe.hit is not None or not _cacheable(loaded, findings):
            return
        if _identity(loaded.path) != probe.identity:
            return  # the file changed while it was scanned: these findings may be of neither version
        try:
            text = json.dumps(_entry(probe.key, loaded, findings), separators=(",", ":"))
        except Unencodable as exc:
            log.debug("not caching %s: %s", loaded.path, exc)
            return
        if len(text) > self.cache.max_bytes * (1 - PRUNE_TO):
            return  # bigger than the room pruning leaves: it would push out many others, or itself
        if self._write(probe.key, text):
            self.written += 1

    def finish(self) -> None:
        """Keep the folder within its bound, once per run that added entries."""
        if self.written:
            prune(self.cache.directory, self.cache.max_bytes)

    # ------------------------------------------------------------------ entries on disk

    def _path(self, key: str) -> Path:
        return self.cache.directory / f"{key}.json"

    def _read(self, key: str, path: str) -> tuple[LoadedFile, list[Finding]] | None:
        entry = self._path(key)
        try:
            with open(entry, "rb") as handle:
                doc = json.loads(handle.read())
            hit = _decoded(doc, key, path)
        except FileNotFoundError:
            return None
        except (OSError, ValueError, KeyError, TypeError, IndexError, AttributeError, RecursionError) as exc:
            log.debug("ignoring unreadable cache entry %s: %s", entry, exc)  # rewritten after the scan
            return None
        _touch(entry)
        return hit

    def _write(self, key: str, text: str) -> bool:
        folder = self.cache.directory
        temp = None
        try:
            folder.mkdir(parents=True, exist_ok=True)
            fd, temp = tempfile.mkstemp(prefix=_TEMP_PREFIX, suffix=".json", dir=folder)
            with os.fdopen(fd, "w", encoding="ascii") as handle:
                handle.write(text)
            os.replace(temp, self._path(key))  # atomic: a reader sees the old entry, none, or this one
            return True
        except OSError as exc:
            log.debug("cannot write cache entry in %s: %s", folder, exc)  # a read-only cache: no caching
            if temp is not None:
                _unlink(temp)
            return False


def _entry(key: str, loaded: LoadedFile, findings: list[Finding]) -> dict[str, Any]:
    return {
        "format": FORMAT,
        "key": key,  # the file name, repeated: a copied or renamed entry is not another file's result
        "modules": [[m.name, m.line, m.instruction_count] for m in loaded.modules],
        "error": encode_error(loaded.error),
        "notes": list(loaded.notes),
        "findings": [encode_finding(f) for f in findings],
    }


def _decoded(doc: dict[str, Any], key: str, path: str) -> tuple[LoadedFile, list[Finding]]:
    if doc["format"] != FORMAT or doc["key"] != key:
        raise ValueError("entry of another format or key")
    modules = [ModuleSummary(str(name), int(line), int(count)) for name, line, count in doc["modules"]]
    notes = [str(n) for n in doc["notes"]]
    loaded = LoadedFile(path, modules, decode_error(doc["error"]), notes)  # type: ignore[arg-type]
    return loaded, [decode_finding(f) for f in doc["findings"]]


def _cacheable(loaded: LoadedFile, findings: list[Finding]) -> bool:
    """A syntax error is a fact of the bytes and is cached; a failed read (it may succeed next time) and a
    crashed check (perhaps out of memory) are not."""
    if loaded.error is not None and loaded.error.message.startswith(READ_FAILURE):
        return False
    return not any(f.code == "HLO900" for f in findings)


# ---------------------------------------------------------------------- what the key covers


def _file_digest(path: str) -> tuple[str, tuple]:
    with open(path, "rb") as handle:
        identity = _stat_identity(os.fstat(handle.fileno()))
        digest = hashlib.file_digest(handle, "sha256").hexdigest()
    return digest, identity


def _identity(path: str) -> tuple | None:
    try:
        return _stat_identity(os.stat(path))
    except OSError:
        return None


def _stat_identity(st: os.stat_result) -> tuple:
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)


def _side_fingerprints(path: str, codes: tuple[str, ...]) -> list[list[str]]:
    """[path, sha256 or "absent"] of every side file these checks may read for the dump at `path` (a report
    that appears later changes the findings as much as one that changes)."""
    wanted: list[str] = []
    for code in codes:
        check = lookup(code)
        reader = check.family.side_files if check is not None else None
        if reader is not None:
            wanted.extend(p for p in reader(path) if p not in wanted)
    out = []
    for side in wanted:
        try:
            out.append([side, _file_digest(side)[0]])
        except FileNotFoundError:
            out.append([side, "absent"])
    return out


@functools.cache
def hloscan_fingerprint() -> str:
    """This hloscan: version, Python, and the size and mtime of every source file (an editable checkout
    edited since the last run is another hloscan), of the grammar (a checkout keeps it beside the package)
    and of lark, whose parser words the syntax errors of --strict (found without importing it)."""
    package = Path(__file__).resolve().parents[1]
    parts: list[Any] = [__version__, sys.version_info[:2]]
    sources = [package.parent / "grammars" / "hlo.lark"]
    lark = importlib.util.find_spec("lark")
    lark_folders = [Path(p) for p in lark.submodule_search_locations or ()] if lark is not None else []
    for folder in (package, *lark_folders):
        for root, dirs, files in os.walk(folder):
            dirs[:] = sorted(d for d in dirs if d != "__pycache__")
            sources.extend(Path(root, f) for f in sorted(files) if f.endswith((".py", ".lark")))
    for source in sources:
        identity = _identity(str(source))
        if identity is not None:
            parts.append([str(source), identity[2], identity[3]])
    return _digest(parts)


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, default=repr)


def _digest(parts: Any) -> str:
    return hashlib.sha256(_canonical(parts).encode("utf-8", "surrogatepass")).hexdigest()


# ---------------------------------------------------------------------- the size bound


def _touch(entry: Path) -> None:
    """Mark an entry used (its mtime), so pruning removes the least recently used ones first."""
    try:
        os.utime(entry)
    except OSError:
        pass


def prune(folder: Path, max_bytes: int) -> None:
    """Delete the least recently used entries until the folder is under PRUNE_TO of the bound, and the
    temporary files of runs that were killed mid-write."""
    entries, total, now = [], 0, time.time()
    try:
        listing = list(os.scandir(folder))
    except OSError:
        return
    for item in listing:
        try:
            st = item.stat(follow_symlinks=False)
        except OSError:
            continue
        if item.name.startswith(_TEMP_PREFIX) and now - st.st_mtime > STALE_TEMP_SECONDS:
            _unlink(item.path)
        elif _ENTRY.match(item.name):
            entries.append((st.st_mtime_ns, st.st_size, item.path))
            total += st.st_size
    if total <= max_bytes:
        return
    for _mtime, size, path in sorted(entries):
        if total <= max_bytes * PRUNE_TO:
            break
        _unlink(path)  # another run may be reading it: it then sees no entry and scans the file
        total -= size


def _unlink(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass
