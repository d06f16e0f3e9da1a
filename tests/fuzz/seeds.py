"""Seed inputs for mutation: small real dumps from the shared corpus, plus a built-in module when it is absent."""

from __future__ import annotations

import functools
import os
from pathlib import Path

CORPUS = Path(os.environ.get("HLOSCAN_CORPUS", Path(__file__).resolve().parents[3] / "shared" / "corpus"))
# Globs relative to the corpus root; texts from XLA's parser tests, real dumps, and TPU oracle dumps.
_GLOBS = ("xla-parser/*.hlo", "xla-hlo-files/*.hlo", "xla-host-offload/*.hlo",
          "tpu-oracle/host/*/before_optimizations.txt", "tpu-oracle/realistic/*/before_optimizations.txt")
# Keep seeds small so one mutation round stays cheap; big inputs are made on purpose by the big mutators.
MAX_SEED_BYTES = 64 * 1024

# Used when the shared corpus is missing: touches metadata, frontend attributes, a custom call, a tuple,
# a called computation, a while loop and the stack-frame tables.
BUILTIN = b'''HloModule builtin, entry_computation_layout={(f32[4,8]{1,0}, s32[])->(f32[4,8]{1,0}, s32[])}

FileNames
1 "model.py"

FunctionNames
1 "f"

FileLocations
1 {file_name_id=1 function_name_id=1 line=3 end_line=3 column=1 end_column=9}

StackFrames
1 {file_location_id=1 parent_frame_id=0}

%add (x: f32[], y: f32[]) -> f32[] {
  %x = f32[] parameter(0)
  %y = f32[] parameter(1)
  ROOT %sum = f32[] add(f32[] %x, f32[] %y)
}

%cond (p: (s32[], f32[4,8])) -> pred[] {
  %p = (s32[], f32[4,8]{1,0}) parameter(0)
  %i = s32[] get-tuple-element((s32[], f32[4,8]{1,0}) %p), index=0
  %n = s32[] constant(10)
  ROOT %lt = pred[] compare(s32[] %i, s32[] %n), direction=LT
}

%body (p.1: (s32[], f32[4,8])) -> (s32[], f32[4,8]) {
  %p.1 = (s32[], f32[4,8]{1,0}) parameter(0)
  %i.1 = s32[] get-tuple-element((s32[], f32[4,8]{1,0}) %p.1), index=0
  %one = s32[] constant(1)
  %next = s32[] add(s32[] %i.1, s32[] %one)
  %v = f32[4,8]{1,0} get-tuple-element((s32[], f32[4,8]{1,0}) %p.1), index=1
  ROOT %t = (s32[], f32[4,8]{1,0}) tuple(s32[] %next, f32[4,8]{1,0} %v)
}

ENTRY %main (a: f32[4,8], b: s32[]) -> (f32[4,8], s32[]) {
  %a = f32[4,8]{1,0} parameter(0), metadata={op_name="jit(f)/a" source_file="model.py" source_line=3}
  %b = s32[] parameter(1)
  %cc = f32[4,8]{1,0} custom-call(f32[4,8]{1,0} %a), custom_call_target="MoveToHost", frontend_attributes={_xla_buffer_placement="arg"}, metadata={op_name="jit(f)/move" stack_frame_id=1}, backend_config={"k": [1, 2, {"x": "}"}]}
  %z = f32[] constant(0)
  %r = f32[4]{0} reduce(f32[4,8]{1,0} %cc, f32[] %z), dimensions={1}, to_apply=%add
  %t0 = (s32[], f32[4,8]{1,0}) tuple(s32[] %b, f32[4,8]{1,0} %cc)
  %w = (s32[], f32[4,8]{1,0}) while((s32[], f32[4,8]{1,0}) %t0), condition=%cond, body=%body
  %o = f32[4,8]{1,0} get-tuple-element((s32[], f32[4,8]{1,0}) %w), index=1
  %c = s32[] get-tuple-element((s32[], f32[4,8]{1,0}) %w), index=0
  ROOT %res = (f32[4,8]{1,0}, s32[]) tuple(f32[4,8]{1,0} %o, s32[] %c)
}
'''


@functools.cache
def seed_paths() -> tuple[Path, ...]:
    paths = []
    for pattern in _GLOBS:
        paths.extend(p for p in sorted(CORPUS.glob(pattern)) if p.stat().st_size <= MAX_SEED_BYTES)
    return tuple(paths)


@functools.cache
def seed(index: int) -> bytes:
    paths = seed_paths()
    if not paths:
        return BUILTIN
    return paths[index % len(paths)].read_bytes()


def seed_count() -> int:
    return max(1, len(seed_paths())) + 1


def seed_or_builtin(index: int) -> bytes:
    """Index 0 is always the built-in module (it exercises the most features); the rest are corpus files."""
    return BUILTIN if index % seed_count() == 0 else seed(index % seed_count() - 1)
