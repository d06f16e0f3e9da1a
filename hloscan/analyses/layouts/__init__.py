"""E0102 RuntimeProgramInputMismatch: a buffer passed to a compiled program has a different byte size than the
parameter it was compiled for, usually the same shape with another tiled layout
(`bf16[16,1280,40]{2,1,0:T(8,128)(2,1)}` is 5242880 bytes, `{1,2,0:...}` 1638400).

The exact tiled sizes themselves are HLO facts (hloscan.hlo.layout); this package explains pasted E0102
messages (explain.py: which dimension is padded, which tilings give the reported sizes) and reports bytes by
memory space and padding waste (memory_report.py). Reference: shared/reference/tpu-memory.md;
https://openxla.org/xla/errors/error_0102
"""
