"""The Context handed to checks: the module, its graph, options, a per-opcode index and source lookup."""

from __future__ import annotations

from functools import cached_property
from typing import TYPE_CHECKING, Any, Iterator

from .finding import Severity
from .ir import Computation, Instruction, Location, Module
from .source import source_location

if TYPE_CHECKING:
    from .registry import Check


class Context:
    def __init__(self, module: Module, path: str, options: dict[str, Any] | None = None,
                 severities: dict[str, Severity] | None = None, group_stages: tuple[str, ...] = ()):
        self.module = module
        self.path = path
        self.options = options or {}
        self.severities = severities or {}
        # The dump stages of this module found beside this file (hloscan.stages.STAGES names), else ().
        self.group_stages = group_stages

    @cached_property
    def graph(self):
        return self.module.graph

    @cached_property
    def _by_opcode(self) -> dict[str, list[tuple[Computation, Instruction]]]:
        index: dict[str, list[tuple[Computation, Instruction]]] = {}
        for comp, inst in self.module.instructions():
            index.setdefault(inst.opcode, []).append((comp, inst))
        return index

    def instructions(self, opcodes: frozenset[str] | None = None) -> Iterator[tuple[Computation, Instruction]]:
        if opcodes is None:
            yield from self.module.instructions()
            return
        for opcode in sorted(opcodes):
            yield from self._by_opcode.get(opcode, ())

    def option(self, check: "type[Check] | Check", key: str) -> Any:
        """A check's option: its own table first, then the run-wide values (--tpu, ...), then the default."""
        spec = check.options[key]
        own = self.options.get(check.name, {})
        if key in own:
            return own[key]
        return self.options.get("_global", {}).get(key, spec.default)

    def severity_for(self, check: "type[Check] | Check") -> Severity:
        return self.severities.get(check.code, check.severity)

    def source_of(self, inst: Instruction) -> Location | None:
        return source_location(self.module, inst)
