"""A short seeded campaign in CI; set HLOSCAN_FUZZ_MINUTES for a long one."""

from __future__ import annotations

import os

from . import campaign


def test_short_seeded_campaign():
    minutes = float(os.environ.get("HLOSCAN_FUZZ_MINUTES", "0.15"))
    stats = campaign.run(minutes, seed=int(os.environ.get("HLOSCAN_FUZZ_SEED", "0")), cli=minutes > 1)
    assert stats.inputs > 0
    assert not stats.bugs, stats.report() + "\n\n" + "\n\n".join(f"{s}\n{d[0][-1500:]}" for s, d in stats.bugs.items())
