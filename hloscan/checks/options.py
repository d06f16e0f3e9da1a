"""Options that several rule families share, declared once (the registry insists that a key shared by two
families is the same declaration)."""

from __future__ import annotations

from hloscan.analyses.tpu import GENERATIONS, canonical_name
from hloscan.lint.registry import Option

TPU = Option(str, None, "TPU generation (default: v5e, and findings say it was assumed).", tuple(GENERATIONS),
             normalize=canonical_name, metavar="GEN")
