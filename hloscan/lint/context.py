"""The Context handed to checks: the module, its graph, options, one memo cache and source lookup."""

from __future__ import annotations

from functools import cached_property
from typing import Any, Callable, Hashable, Iterator, Protocol, TypeVar

from hloscan.lint.finding import Severity
from hloscan.hlo.ir import Computation, Instruction, Location, Module
from hloscan.hlo.source import source_location

T = TypeVar("T")


class Rule(Protocol):
    """What the Context reads of a check (class or instance) to resolve its settings. A protocol, because
    the registry's Check hands itself a Context: context must not import the registry."""

    code: str
    name: str
    severity: Severity
    options: dict[str, Any]
    family: Any  # hloscan.lint.registry.Family: its `options` are the run-wide ones


class Context:
    def __init__(self, module: Module, path: str, options: dict[str, Any] | None = None,
                 severities: dict[str, Severity] | None = None, group_stages: tuple[str, ...] = ()):
        self.module = module
        self.path = path
        self.options = options or {}
        self.severities = severities or {}
        # The dump stages of this module found beside this file (hloscan.lint.stages.STAGES names), else ().
        self.group_stages = group_stages
        self._memo: dict[Hashable, Any] = {}

    def memo(self, key: Hashable, compute: Callable[[], T]) -> T:
        """The one per-module cache: checks of a family share an analysis by asking for the same key
        (e.g. `("vmem", tpu, limit, margin)`); it is computed on first use and lives as long as the module's
        Context."""
        if key not in self._memo:
            self._memo[key] = compute()
        return self._memo[key]

    @cached_property
    def graph(self):
        return self.module.graph

    def instructions(self, opcodes: frozenset[str] | None = None) -> Iterator[tuple[Computation, Instruction]]:
        if opcodes is None:
            yield from self.module.instructions()
            return
        for opcode in sorted(opcodes):
            yield from self.module.with_opcode(opcode)

    def option(self, check: "type[Rule] | Rule", key: str) -> Any:
        """A check's own option (its config table, else the default), or its family's run-wide option
        (`--tpu`, the top-level config key, else the default)."""
        if key in check.options:
            return self.options.get(check.name, {}).get(key, check.options[key].default)
        spec = check.family.options[key]
        return self.options.get("_global", {}).get(key, spec.default)

    def severity_for(self, check: "type[Rule] | Rule") -> Severity:
        return self.severities.get(check.code, check.severity)

    def source_of(self, inst: Instruction) -> Location | None:
        return source_location(self.module, inst)
