"""E1000 CompileTimeHbmOom: the program needs more HBM than the TPU has.

XLA fails the compile with

    RESOURCE_EXHAUSTED: Ran out of memory on HBM, the total memory required for HLO temporaries (19.13G)
    exceeds available HBM (15.75G).

(or, in its long form, "Ran out of memory in memory space hbm. Used X of Y hbm" with the largest
allocations). The figure it quotes is the default-memory-space total of its memory-usage report: arguments,
outputs and temporaries at the peak of the schedule. This package gives that figure three ways:
reports.py reads XLA's own buffer-assignment / memory-usage reports (exact); liveness.py simulates buffer
lifetimes over a scheduled dump (after_optimizations); model.py/analyze.py predict it before compiling
(an estimate). capacity.py holds the available HBM per generation (from analyses/tpu.py); hints.py the
fixes that fit what is live at the peak; explain.py explains a pasted message against a dump.
Reference: docs/hbm.md; https://openxla.org/xla/errors/error_1000
"""

from hloscan.analyses.hbm.analyze import analyze_module, analyze_modules, compiled_for_another_backend
from hloscan.analyses.hbm.capacity import CAPACITY_BYTES, DEFAULT_GENERATION, capacity_bytes, human, verdict
from hloscan.analyses.hbm.model import HbmResult, LiveBuffer

__all__ = ["CAPACITY_BYTES", "DEFAULT_GENERATION", "HbmResult", "LiveBuffer", "analyze_module", "analyze_modules", "compiled_for_another_backend",
           "capacity_bytes", "human", "verdict"]
