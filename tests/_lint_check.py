"""A test-only check (HLO098) registered for the duration of a test, so lint tests do not depend on real checks."""

from __future__ import annotations

import contextlib
from typing import Iterator

from hloscan.hlo.attrs import parse_metadata
from hloscan.lint.finding import Severity
from hloscan.lint.registry import _CHECKS, Check, Family, Option, register, register_family

# Test-only rule families: HLO0xx (beside HLO001) for lint-machinery checks, HLO9xx (beside HLO900) for engine tests.
TEST_FAMILY = register_family(Family(prefix="HLO0", name="test-only", title="Test-only checks"))
ENGINE_TEST_FAMILY = register_family(Family(prefix="HLO9", name="engine-test", title="Test-only engine checks"))


class MarkedInstruction(Check):
    """An instruction whose op_name metadata contains the marker.

    ## What it flags
    Instructions whose `metadata={op_name=...}` contains `marker` (option, default "FLAG").

    ## Why it matters
    It exists to test the lint machinery: the message repeats text taken from the dump.

    ## Example
    ```hlo
    HloModule m

    ENTRY main {
      p = f32[8]{0} parameter(0)
      ROOT n = f32[8]{0} negate(p), metadata={op_name="FLAG" source_file="/src/model.py" source_line=7}
    }
    ```

    ## Fix
    ```hlo
    HloModule m

    ENTRY main {
      p = f32[8]{0} parameter(0)
      ROOT n = f32[8]{0} negate(p), metadata={op_name="fine"}
    }
    ```
    """

    code = "HLO098"
    name = "marked-instruction"
    severity = Severity.WARNING
    family = TEST_FAMILY
    options = {"marker": Option(str, "FLAG", "Text to look for in op_name.")}
    stage = "before_optimizations"

    def run(self, ctx) -> Iterator:
        marker = ctx.option(self, "marker")
        for comp, inst in ctx.instructions():
            op_name = parse_metadata(inst.attr("metadata")).get("op_name")
            if isinstance(op_name, str) and marker in op_name:
                yield self.finding(ctx, comp, inst, f"op {op_name}", hint="rename it")


@contextlib.contextmanager
def registered() -> Iterator[type[Check]]:
    register(MarkedInstruction)
    try:
        yield MarkedInstruction
    finally:
        _CHECKS.pop(MarkedInstruction.code, None)


def module_text(op_name: str = "FLAG", name: str = "m", inst: str = "n", source: str = "/src/model.py") -> str:
    escaped = op_name.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return (f"HloModule {name}\n\nENTRY main {{\n  p = f32[8]{{0}} parameter(0)\n"
            f'  ROOT {inst} = f32[8]{{0}} negate(p), metadata={{op_name="{escaped}" source_file="{source}" '
            f"source_line=7}}\n}}\n")
