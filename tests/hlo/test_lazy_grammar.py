"""The fast path reads a printer-formatted dump without loading lark or the grammar (importing them costs about
as much as checking a small dump), and the strict path still loads them when it runs."""

from __future__ import annotations

import subprocess
import sys
import textwrap

from corpus import CORPUS, require_path

# A 0.6 MB real train step whose shapes are all plain (rich layouts like `{1,0:T(8,128)}` do need the grammar).
DUMP = CORPUS / "xla-hlo-files" / "xla__tools__benchmarks__hlo__nv_maxtext_1n1g_jit_train_step_before_optimization.hlo"

_CHILD = textwrap.dedent("""
    import sys
    import hloscan.cli
    from hloscan.hlo.parser import parse_text
    modules = parse_text(open(sys.argv[1]).read(), sys.argv[1], strict=sys.argv[2] == "strict")
    print(sum(m.instruction_count for m in modules), "lark" in sys.modules)
""")


def _run(mode: str) -> tuple[int, bool]:
    out = subprocess.run([sys.executable, "-c", _CHILD, str(require_path(DUMP)), mode], capture_output=True,
                         text=True, check=True).stdout.split()
    return int(out[0]), out[1] == "True"


def test_fast_path_never_imports_lark():
    instructions, lark_loaded = _run("fast")
    assert instructions > 1_000 and not lark_loaded


def test_strict_path_loads_the_grammar():
    instructions, lark_loaded = _run("strict")
    assert instructions > 1_000 and lark_loaded
