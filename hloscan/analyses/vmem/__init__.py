"""E1001 CompileTimeScopedVmemOom and E2002 CompileTimeMosaicMisalignedBlockAndTiling: what a Pallas/Mosaic
`tpu_custom_call` kernel needs in TPU vector memory.

Each kernel gets a scoped VMEM region per instruction, bounded by its `vmem_limit_bytes`, else
`--xla_tpu_scoped_vmem_limit_kib`, else the generation's default (analyses/tpu.py). Its blocks are
double-buffered along the grid, scratch shapes come on top, and the compiler adds internal scratch. A kernel
over the limit fails with E1001; over the physical VMEM with "Ran out of memory in memory space vmem".

mosaic/ reads the kernel bodies (MLIR bytecode or text) without MLIR; estimate.py turns a kernel into blocks,
bytes and a verdict (the dump's measured figure when it carries one); allowance.py states how far the
compiler's internal scratch fell from each empirical allowance, which gives the estimate its range; kernels.py
lists every kernel of a module with its estimate; explain.py explains pasted E1001 messages.
Reference: shared/reference/tpu-memory.md; https://openxla.org/xla/errors/error_1001
"""
