"""The `hloscan` command line. Each command lives in its own module of this package and registers itself
on the group in hloscan.cli.main; the list below is the whole command set (greppable)."""

from __future__ import annotations

import os
import signal
import sys

import hloscan.checks  # noqa: F401  (registers every check and rule family before flags are generated)
from hloscan.cli.main import main
from hloscan.lint.engine import exception_text
from hloscan.lint.files import OutputError
from hloscan.cli import check, confirm, explain, graph, hbm, layout, report, rules, vmem  # noqa: F401,E402  (each adds its commands)


EXIT_INTERNAL = 3  # hloscan itself failed: an exception that no command turned into a message


def run() -> None:
    """The console-script entry. The process ends without tearing down what it built: freeing a 48 MB
    dump's IR object by object took longer than writing the report. Output is flushed first and the exit
    code is the one click chose.

    A reader that leaves (`hloscan ... | head`) ends the process as it ends other Unix tools: SIGPIPE, quietly
    (the shell sees 141), not click's exit 1. A report that cannot be written is a message and exit 2; an
    exception no command turned into a message (a bug) is one line naming it, and exit 3."""
    if hasattr(signal, "SIGPIPE"):
        signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    try:
        main()
        code = 0
    except SystemExit as stop:
        code = _exit_status(stop.code)
    except OutputError as exc:
        print(f"hloscan: {exc}", file=sys.stderr)
        code = 2
    except Exception as exc:  # noqa: BLE001 - a traceback is never what a user should see
        print(f"hloscan: internal error: {exception_text(exc)}. This is a bug in hloscan, not in your input: "
              "please report it with the command and the input.", file=sys.stderr)
        code = EXIT_INTERNAL
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (BrokenPipeError, OSError, ValueError):  # `hloscan ... | head`: the reader left, nothing to say
            pass
    os._exit(code)


def _exit_status(code: object) -> int:
    """What sys.exit(code) would make the process status: None is 0, a message is printed and is 1."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF
    print(code, file=sys.stderr)
    return 1


__all__ = ["main", "run"]
