"""Tests for the pure-Python MLIR bytecode reader used on Mosaic kernel bodies."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from corpus import CORPUS, FIXTURES as FIXTURES_ROOT, require_path, tsv_rows
from hloscan.analyses.vmem.mosaic import read_kernel
from hloscan.analyses.vmem.mosaic.bytecode import (
    MAGIC,
    BytecodeError,
    ShapedType,
    decode_body,
    read_module,
    type_text,
)

FIXTURES = FIXTURES_ROOT / "mosaic"
VMEM = CORPUS / "tpu-oracle" / "vmem"
BODY = re.compile(r'"body": ?"([A-Za-z0-9+/=]+)"')
# In MLIR text the backend_config sits in an attribute string, so its quotes are written \22.
BODY_IN_MLIR = re.compile(r'\\22body\\22: \\22([A-Za-z0-9+/=]+)\\22')


def _load(name: str) -> dict:
    """A fixture with its body: kept inline only when generated here, else read from the corpus it names
    (fixtures reference corpus data instead of copying it) and checked against the recorded SHA-256."""
    record = json.loads((FIXTURES / name).read_text())
    if "body" not in record:
        text = require_path(CORPUS / record["source"]).read_text(encoding="utf-8")
        bodies = BODY.findall(text) + BODY_IN_MLIR.findall(text)
        matches = [b for b in bodies if hashlib.sha256(b.encode()).hexdigest() == record["body_sha256"]]
        assert matches, f"no body with the recorded SHA-256 in {record['source']}"
        record["body"] = matches[0]
    return record
_DTYPES = {"float32": "f32", "bfloat16": "bf16", "int8": "i8", "int32": "i32", "float8_e4m3fn": "f8E4M3FN"}


def _fixture_files() -> list[Path]:
    return sorted(FIXTURES.glob("*.json"))


def _decoded_view(body: str) -> dict:
    """The decoder's answer in the shape of the jax-generated fixtures."""
    k = read_kernel(body)
    return {
        "name": k.name,
        "functions": list(k.functions),
        "arg_types": [type_text(t) for t in k.arg_types],
        "grid": list(k.iteration_bounds) if k.iteration_bounds is not None else None,
        "dimension_semantics": [f"#tpu.dimension_semantics<{s}>" for s in k.dimension_semantics],
        "scalar_prefetch": k.scalar_prefetch,
        "scratch_operands": k.scratch_operands,
        "window_params": None if k.window_params is None else [
            {
                "window_bounds": list(w.window_bounds) if w.window_bounds is not None else None,
                "transform_indices": w.transform_indices,
                "pipeline_mode": f"#tpu.pipeline_mode<{w.pipeline_mode}>" if w.pipeline_mode else None,
            }
            for w in k.window_params
        ],
    }


@pytest.mark.parametrize("path", _fixture_files(), ids=lambda p: p.stem)
def test_matches_mlir_reader(path: Path):
    """Fixtures hold what jaxlib's MLIR parser reads from the same bodies (fixtures/mosaic/generate_with_jax.py)."""
    record = _load(path.name)
    assert _decoded_view(record["body"]) == record["expected"]


def test_fixtures_present():
    assert len(_fixture_files()) >= 10


def test_kernel_details_mmk():
    record = _load("mmk_bf16_acc.json")
    k = read_kernel(record["body"])
    assert k.grid == (2, 2, 4)
    assert k.dimension_semantics == ("parallel", "parallel", "arbitrary")
    assert [w.index_map for w in k.window_params] == [("g0", "g2"), ("g2", "g1"), ("g0", "g1")]
    assert [type_text(t) for t in k.scratch_types] == ["memref<1024x1024xf32, #tpu.memory_space<vmem>>"]
    assert all(isinstance(t, ShapedType) and t.space == "vmem" for t in k.operand_types)
    assert k.core_type == "tc" and k.mosaic_version == 15 and k.bytecode_version == 0
    assert "stable_mosaic.tpu.matmul" in k.op_names


def test_newest_bytecode_version_reads_the_same():
    old = _load("mmk_bf16_acc.json")["body"]
    new = _load("mmk_bf16_acc_newest_bytecode.json")["body"]
    assert read_kernel(new).bytecode_version > 0
    assert _decoded_view(new) == _decoded_view(old)


def test_prefetch_and_semaphore_spaces():
    k = read_kernel(_load("prefetch_int8.json")["body"])
    assert [t.space for t in k.scalar_prefetch_types] == ["smem"]
    assert k.window_params[0].index_map == (None, 0)  # the block row comes from the prefetched table
    dma = read_kernel(_load("public_semaphore_dma_2024.json")["body"])
    assert dma.iteration_bounds is None
    spaces = {t.space for t in dma.arg_types if isinstance(t, ShapedType)}
    assert "any" in spaces or "semaphore_mem" in spaces or "vmem" in spaces


# --- every corpus body against the oracle's own block list ------------------------------------------


def _corpus_cases() -> list[dict]:
    if not (VMEM / "MANIFEST.tsv").is_file():
        if os.environ.get("CI") == "true":
            pytest.fail(f"TPU oracle corpus missing at {VMEM} (required when CI=true)")
        pytest.skip(f"TPU oracle corpus not found at {VMEM}")
    rows = tsv_rows(VMEM / "MANIFEST.tsv")
    return [r for r in rows if r["blocks"] and (VMEM / r["case"] / "before_optimizations.txt").is_file()]


def _expected_blocks(text: str) -> tuple[list[tuple[str, tuple[int, ...]]], list[tuple[str, tuple[int, ...]]]]:
    windows, scratch = [], []
    for item in text.split(";"):
        m = re.fullmatch(r"(?:(\d+)x|scratch:)(\w+)\[([\d, ]+)\]", item.strip())
        assert m, item
        entry = (_DTYPES[m.group(2)], tuple(int(d) for d in m.group(3).split(",")))
        (windows if m.group(1) else scratch).append(entry)
    return windows, scratch


def test_corpus_block_shapes_grid_and_spaces():
    checked = 0
    for row in _corpus_cases():
        text = (VMEM / row["case"] / "before_optimizations.txt").read_text()
        (body,) = BODY.findall(text)
        k = read_kernel(body)
        windows, scratch = _expected_blocks(row["blocks"])
        assert [w.window_bounds for w in k.window_params] == [s for _, s in windows], row["case"]
        assert [type_text(t.element) for t in k.operand_types] == [d for d, _ in windows], row["case"]
        assert [t.space for t in k.operand_types] == ["vmem"] * len(windows), row["case"]
        assert [(type_text(t.element), t.shape) for t in k.scratch_types] == scratch, row["case"]
        assert k.grid and len(k.dimension_semantics) == len(k.grid), row["case"]
        assert all(t.space == "smem" for t in k.scalar_prefetch_types)
        checked += 1
    assert checked >= 200


def test_corpus_grid_matches_shapes():
    """The grid is the full array divided by the block, for the elementwise family named `..._RxC_blkBxD`."""
    for row in _corpus_cases():
        m = re.search(r"_(\d+)x(\d+)_blk(\d+)x(\d+)", row["case"])
        if not m or not row["case"].split("__")[1].startswith(("ew", "red", "prefetch", "buffered")):
            continue
        rows, cols, br, bc = map(int, m.groups())
        text = (VMEM / row["case"] / "before_optimizations.txt").read_text()
        k = read_kernel(BODY.findall(text)[0])
        assert k.grid[0] == rows // br, row["case"]
        if len(k.grid) > 1:
            assert k.grid[1] == cols // bc, row["case"]


# --- malformed input -----------------------------------------------------------------------------------


def _sample_raw() -> bytes:
    return decode_body(_load("mmk_bf16_acc.json")["body"])


def test_every_truncation_raises_bytecode_error():
    raw = _sample_raw()
    for cut in range(0, len(raw) - 1):
        with pytest.raises(BytecodeError):
            read_kernel(raw[:cut]) if raw[:cut].startswith(MAGIC) else read_module(raw[:cut])


@pytest.mark.parametrize(
    "data",
    [b"", b"ML", b"MLIR\x01", b"ML\xefR", b"ML\xefR\x7fjunk\x00", b"\x00" * 64, bytes(range(256))],
)
def test_garbage_raises_bytecode_error(data: bytes):
    with pytest.raises(BytecodeError):
        read_module(data)


def test_bad_base64_and_newer_version():
    with pytest.raises(BytecodeError, match="base64"):
        read_kernel("this is not base64!!")
    raw = bytearray(_sample_raw())
    raw[4] = 0x7F  # version varint 63
    with pytest.raises(BytecodeError, match="version"):
        read_kernel(base64.b64encode(bytes(raw)).decode())


@settings(max_examples=300, deadline=None)
@given(st.integers(min_value=5, max_value=10_000), st.integers(min_value=1, max_value=255))
def test_corrupted_bytes_raise_only_bytecode_error(position: int, xor: int):
    raw = bytearray(_sample_raw())
    raw[position % len(raw)] ^= xor
    try:
        read_kernel(bytes(raw))
    except BytecodeError:
        pass
