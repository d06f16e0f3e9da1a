"""HBM use per module and TPU generation: XLA's reports, a liveness simulation, a prediction; E1000 explained.

Imports only the HLO layer (ir, parser, attrs, layout_engine, signature, source, loader).
"""

from .analyze import analyze_module, analyze_modules
from .capacity import CAPACITY_BYTES, DEFAULT_GENERATION, GENERATIONS, capacity_bytes, human, verdict
from .model import HbmResult, LiveBuffer

__all__ = ["CAPACITY_BYTES", "DEFAULT_GENERATION", "GENERATIONS", "HbmResult", "LiveBuffer", "analyze_module",
           "analyze_modules", "capacity_bytes", "human", "verdict"]
