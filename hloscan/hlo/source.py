"""Resolves an instruction's metadata to the user's Python source line (stack frames or source_file/line)."""

from __future__ import annotations

from hloscan.hlo.attrs import parse_metadata, unquote
from hloscan.hlo.ir import Instruction, Location, Module, StackFrameTables


def source_location(module: Module, inst: Instruction) -> Location | None:
    """The innermost frame of the instruction's stack (the user's call site), else source_file:source_line."""
    raw = inst.attr("metadata")
    if not raw:
        return None
    meta = parse_metadata(raw)
    frame_id = meta.get("stack_frame_id")
    if isinstance(frame_id, int) and module.stack_frames is not None:
        location = _frame_location(_tables(module.stack_frames), frame_id)
        if location is not None:
            return location
    file, line = meta.get("source_file"), meta.get("source_line")
    if isinstance(file, str) and isinstance(line, int):
        return Location(file, line)
    return None


def stack(module: Module, inst: Instruction, limit: int = 16) -> list[Location]:
    """The whole Python stack for an instruction, innermost first (bounded: tables may hold cycles)."""
    meta = parse_metadata(inst.attr("metadata"))
    frame_id = meta.get("stack_frame_id")
    if not isinstance(frame_id, int) or module.stack_frames is None:
        return []
    tables = _tables(module.stack_frames)
    out: list[Location] = []
    seen: set[int] = set()
    while frame_id and frame_id not in seen and len(out) < limit:
        seen.add(frame_id)
        location = _frame_location(tables, frame_id)
        if location is not None:
            out.append(location)
        frame_id = dict(tables.frames.get(frame_id, ())).get("parent_frame_id", 0)
    return out


class _Tables:
    def __init__(self, frames: StackFrameTables):
        self.files = {i: unquote(s) or "" for i, s in frames.file_names}
        self.functions = {i: unquote(s) or "" for i, s in frames.function_names}
        self.locations = {i: dict(f) for i, f in frames.file_locations}
        self.frames = {i: f for i, f in frames.stack_frames}


_TABLES: dict[int, tuple[StackFrameTables, _Tables]] = {}


def _tables(frames: StackFrameTables) -> _Tables:
    # Keyed by identity: hashing the tables of a big dump on every lookup would cost more than the lookup.
    hit = _TABLES.get(id(frames))
    if hit is None or hit[0] is not frames:
        if len(_TABLES) > 16:
            _TABLES.clear()
        hit = _TABLES[id(frames)] = (frames, _Tables(frames))
    return hit[1]


def _frame_location(tables: _Tables, frame_id: int) -> Location | None:
    frame = dict(tables.frames.get(frame_id, ()))
    loc = tables.locations.get(frame.get("file_location_id", -1))
    if loc is None:
        return None
    file = tables.files.get(loc.get("file_name_id", -1))
    if file is None:
        return None
    function = tables.functions.get(loc.get("function_name_id", -1))
    return Location(file, loc.get("line", 0), function, loc.get("column"))
