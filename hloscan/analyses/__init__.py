"""The analyses behind XLA's errors: one package per error family, each docstring its error page.

    host_offload/   E1200 host-offload output mismatch (compile time)
    vmem/           E1001 scoped Vmem OOM, E2002 misaligned blocks, whole-VMEM capacity (compile time, TPU)
    layouts/        E0102 program input buffer size mismatch (run time): tiled sizes, explainer
    tpu.py          the one table of TPU generation facts
    xla_errors.py   XLA's error-code catalogue

Analyses read the HLO layer (hloscan.hlo) only: they know nothing of findings, rules or output. The rules
that turn their results into findings live in hloscan.checks.
"""
