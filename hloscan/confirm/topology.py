"""Which TPU topology a module is compiled for: `--topology`, else the generation's smallest slice with as
many devices as the module has partitions (libtpu's compile-only client accepts these shapes)."""

from __future__ import annotations

import re

# Chips per slice shape; 2D tori (v5e, v6e) and 3D (v4, v5p, v7x). v7x is spelled tpu7x by libtpu.
_SHAPES_2D = ("2x2", "2x4", "4x4", "4x8", "8x8")
_SHAPES_3D = ("2x2x1", "2x2x2", "2x2x4", "2x4x4", "4x4x4")
_GENERATIONS_2D = ("v5e", "v6e")
_GENERATIONS_3D = ("v4", "v5p", "v7x")
_LIBTPU_GENERATION = {"v7x": "tpu7x"}
_TOPOLOGY = re.compile(r"^(v4|v5e|v5p|v6e|v7x|tpu7x):(\d+(?:x\d+){1,2})$")


def devices_in(shape: str) -> int:
    count = 1
    for part in shape.split("x"):
        count *= int(part)
    return count


def topology_for(generation: str, partitions: int = 1) -> str:
    """`v5e`, 1 -> `v5e:2x2`; `v5p`, 8 -> `v5p:2x2x2` (each chip counted as one device: a v7x chip has two
    cores, so its slices hold more devices than this asks for, never fewer)."""
    shapes = _SHAPES_2D if generation in _GENERATIONS_2D else _SHAPES_3D
    for shape in shapes:
        if devices_in(shape) >= partitions:
            return f"{generation}:{shape}"
    return f"{generation}:{shapes[-1]}"


def check_topology(text: str) -> str | None:
    """None when `text` is a topology this module knows how to spell, else what is wrong with it."""
    if text in _GENERATIONS_2D + _GENERATIONS_3D or _TOPOLOGY.match(text):
        return None
    return (f"unknown topology {text!r}: a generation ({', '.join(_GENERATIONS_2D + _GENERATIONS_3D)}) or "
            "generation:shape such as v5e:2x2, v5e:4x4, v5p:2x2x2")


def libtpu_name(topology: str) -> str:
    """The name libtpu's get_topology_desc accepts: a bare generation becomes its smallest slice (`v5e` ->
    `v5e:2x2`) and v7x is spelled by its external name (`v7x:2x2x1` -> `tpu7x:2x2x1`)."""
    gen, _, shape = topology.partition(":")
    if not shape:
        gen, _, shape = topology_for(gen).partition(":")
    return f"{_LIBTPU_GENERATION.get(gen, gen)}:{shape}"


def generation_of(topology: str) -> str:
    """`v5e:2x2` -> `v5e`, `tpu7x:2x2x1` -> `v7x`: the generation hloscan's estimates are made for."""
    gen = topology.partition(":")[0]
    return next((short for short, libtpu in _LIBTPU_GENERATION.items() if libtpu == gen), gen)
