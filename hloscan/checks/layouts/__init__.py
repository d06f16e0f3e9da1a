"""HLO3xx: tiled layouts and buffer sizes (XLA error E0102), one rule per file. The analysis is
hloscan.analyses.layouts."""

from __future__ import annotations

from hloscan.lint.registry import Family, register_family

LAYOUTS = register_family(Family(prefix="HLO3", name="layout", title="Tiled layouts", xla_errors=("E0102",)))
