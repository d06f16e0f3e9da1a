"""The `hloscan` command line. Each command lives in its own module of this package and registers itself
on the group in hloscan.cli.main; the list below is the whole command set (greppable)."""

from __future__ import annotations

import hloscan.checks  # noqa: F401  (registers every check and rule family before flags are generated)
from hloscan.cli.main import main
from hloscan.hlo import gcpause
from hloscan.cli import check, explain, graph, hbm, layout, rules, vmem  # noqa: F401,E402  (each adds its commands)


def run() -> None:
    """The console-script entry: a one-shot process, so built IR may be frozen (gcpause.FREEZE_AFTER_BUILD)."""
    gcpause.FREEZE_AFTER_BUILD = True
    main()


__all__ = ["main", "run"]
