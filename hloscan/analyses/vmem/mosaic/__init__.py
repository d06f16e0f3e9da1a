"""Readers for Pallas/Mosaic TPU kernels embedded in `tpu_custom_call` backend configs: MLIR bytecode
(bytecode.py) and MLIR text (text.py), both read into the same MosaicKernel view."""

from __future__ import annotations

from functools import lru_cache

from hloscan.analyses.vmem.mosaic.body import read_body
from hloscan.analyses.vmem.mosaic.bytecode import MAGIC, BytecodeError, MosaicKernel, decode_body, read_kernel_bytecode
from hloscan.analyses.vmem.mosaic.text import looks_like_mlir_text, read_kernel_text


def read_kernel(body: str | bytes) -> MosaicKernel:
    """Decode a base64 `custom_call_config.body` (or raw bytecode bytes) into a MosaicKernel.

    A body read from a dump is decoded once: the residency prediction and the estimate both read every
    kernel, and MosaicKernel is immutable."""
    return _read_dump_body(body) if isinstance(body, str) else _read(body)


@lru_cache(maxsize=128)
def _read_dump_body(body: str) -> MosaicKernel:
    return _read(body)


def _read(body: str | bytes) -> MosaicKernel:
    data = body if isinstance(body, (bytes, bytearray)) and bytes(body[:4]) == MAGIC else decode_body(body)
    if bytes(data[:4]) != MAGIC and looks_like_mlir_text(bytes(data)):
        # Mosaic also takes kernels as MLIR text (real TPU dumps carry some).
        try:
            return read_kernel_text(bytes(data).decode("utf-8"))
        except UnicodeDecodeError as exc:
            raise BytecodeError(f"kernel body is neither MLIR bytecode nor UTF-8 text: {exc}") from exc
    return read_kernel_bytecode(data, read_body)
