"""The Python API behind `hloscan.check` and `hloscan.load`: one reading of "what was given" for both.

Accepted inputs (the same for `check` and `load`):

    str that is HLO text      has a newline or starts with `HloModule`/`ENTRY`; "" and whitespace are
                              (empty) text, never the current directory
    str / os.PathLike path    a file (plain, .gz, .xz) or an --xla_dump_to folder
    bytes / bytearray         HLO text as UTF-8 bytes (binary or non-UTF-8 data is an HLO001 error)
    list / tuple of paths     several files or folders, as on the command line
    jax Lowered / Compiled    (when jax is installed; never required) the HLO text, and for `check` the
                              outputs jax placed in host memory (pinned_host) as the `host_outputs` option

A file that cannot be read or parsed never raises: it is an HLO001 entry in `.errors` (and, for `check`,
an HLO001 finding in the list), and every other file's results are kept. Only programmer errors raise:
an input of another type (TypeError) or bad settings (hloscan.lint.config.ConfigError, a ValueError).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Iterable

if TYPE_CHECKING:
    from hloscan.hlo.errors import HloSyntaxError
    from hloscan.hlo.ir import Module
    from hloscan.hlo.loader import LoadedFile
    from hloscan.lint.cache import ResultCache
    from hloscan.lint.engine import ScanResult
    from hloscan.lint.finding import Finding

_RUN_KEYS = ("config", "strict", "jobs", "cache")
_TEXT_STARTS = ("HloModule", "ENTRY")


class Findings(list):
    """The findings of `hloscan.check()`, sorted: a list of Finding, plus what happened per file.

    `.errors` holds the HloSyntaxError (HLO001) of every input that could not be analysed (each is also
    an HLO001 finding in the list); `.files` the LoadedFile of every input; `.ok` is True when none failed.
    """

    def __init__(self, findings: Iterable["Finding"] = (), files: Iterable["LoadedFile"] = ()):
        super().__init__(findings)
        self.files = list(files)
        self.errors: list[HloSyntaxError] = [f.error for f in self.files if f.error is not None]

    @property
    def ok(self) -> bool:
        return not self.errors


class Modules(list):
    """The modules of `hloscan.load()` (hloscan.hlo.ir.Module), plus `.errors` (HLO001, one per bad
    input) and `.files`; the good files' modules are kept when another file fails."""

    def __init__(self, modules: Iterable["Module"] = (), files: Iterable["LoadedFile"] = ()):
        super().__init__(modules)
        self.files = list(files)
        self.errors: list[HloSyntaxError] = [f.error for f in self.files if f.error is not None]

    @property
    def ok(self) -> bool:
        return not self.errors


@dataclass
class Inputs:
    """What the caller gave, resolved: paths to discover, or one in-memory text (or its decoding error)."""

    paths: list[str] = field(default_factory=list)
    text: str | None = None
    label: str = "<text>"
    error: "HloSyntaxError | None" = None
    host_outputs: tuple[int, ...] | None = None


def looks_like_text(value: str) -> bool:
    stripped = value.lstrip()
    return "\n" in value or not stripped or stripped.startswith(_TEXT_STARTS)


def resolve(source: Any) -> Inputs:
    """Classify an input as text, bytes, path(s) or a jax stage object; TypeError for anything else."""
    from hloscan.hlo.jax_input import is_jax_stage, program_of
    from hloscan.hlo.loader import decode

    if isinstance(source, str):
        return Inputs(text=source) if looks_like_text(source) else Inputs(paths=[source])
    if isinstance(source, os.PathLike):
        return Inputs(paths=[os.fspath(source)])
    if isinstance(source, (bytes, bytearray, memoryview)):
        from hloscan.hlo.errors import HloSyntaxError

        try:
            return Inputs(text=decode(bytes(source), "<bytes>"), label="<bytes>")
        except HloSyntaxError as exc:
            return Inputs(label="<bytes>", error=exc)
    if isinstance(source, (list, tuple)):
        return Inputs(paths=[_path_item(item, i) for i, item in enumerate(source)])
    if is_jax_stage(source):
        program = program_of(source)
        return Inputs(text=program.text, label=program.label, host_outputs=program.host_outputs)
    raise TypeError(f"hloscan: cannot read a {type(source).__name__}: give HLO text, bytes, a path, a list of "
                    "paths, or a jax Lowered/Compiled object")


def _path_item(item: Any, index: int) -> str:
    if isinstance(item, os.PathLike):
        return os.fspath(item)
    if isinstance(item, str) and not looks_like_text(item):
        return item
    raise TypeError(f"hloscan: item {index} of the list is not a path ({type(item).__name__}); a list holds "
                    "paths only (pass HLO text on its own)")


def check(source: Any, **options: Any) -> Findings:
    """Run the checks; see hloscan's module docstring for inputs and options."""
    import hloscan.checks  # noqa: F401  (registers every check: the entry points own that, not the framework)
    from hloscan.lint.config import Config, load_config, parse_config
    from hloscan.lint.engine import Selection, selected_checks
    from hloscan.lint.scan import scan, scan_text

    inputs = resolve(source)
    settings = {k: list(v) if isinstance(v, tuple) else v for k, v in options.items() if k not in _RUN_KEYS}
    if inputs.host_outputs is not None and "host_outputs" not in settings:
        settings["host_outputs"] = list(inputs.host_outputs)  # jax's declared output memory kinds
    config = load_config(options["config"]) if options.get("config") else Config()
    config = config.merged(parse_config(settings))  # keyword arguments win, key by key, as flags do
    if config.select and not selected_checks(Selection(config.select, ())):
        # As the CLI's usage error: a select that runs nothing would return [] whatever the dump holds.
        raise ValueError(f"select {', '.join(config.select)} matches no check (HLO001 and HLO900 are reported "
                         "always and cannot be selected alone)")
    strict = None if options.get("strict") is None else bool(options["strict"])  # None: chosen by size
    if inputs.error is not None:
        result = _failed(inputs)
    elif inputs.text is not None:
        result = scan_text(inputs.text, config, strict=strict, path=inputs.label)
    else:
        result = scan(inputs.paths, config, strict=strict, jobs=int(options.get("jobs", 1)),
                      cache=result_cache(options.get("cache", False)))
    return findings_of(result)


def result_cache(choice: Any) -> "ResultCache | None":
    """`check(..., cache=)`: False (the default: a library call writes nothing unasked), True (the CLI's
    cache: $HLOSCAN_CACHE_DIR or ~/.cache/hloscan/results) or a folder of its own."""
    from hloscan.lint.cache import ResultCache, default_max_bytes

    if choice is False or choice is None:
        return None
    if choice is True:
        return ResultCache.default()
    if isinstance(choice, (str, os.PathLike)):
        from pathlib import Path

        return ResultCache(Path(choice), default_max_bytes())
    raise TypeError(f"hloscan: cache must be True, False or a folder, not a {type(choice).__name__}")


def findings_of(result: "ScanResult") -> Findings:
    """The findings plus one HLO001 finding per input that failed, in path order."""
    from hloscan.lint.finding import Finding

    errors = [error_finding(f) for f in result.files if f.error is not None]
    return Findings(sorted(result.findings + errors, key=Finding.sort_key), result.files)


def error_finding(loaded: "LoadedFile") -> "Finding":
    from hloscan.lint.finding import Finding, Severity, Span
    from hloscan.lint.registry import TOOL_CODES

    err = loaded.error
    return Finding(code=err.code, name=TOOL_CODES[err.code].name if err.code in TOOL_CODES else "syntax-error",
                   severity=Severity.ERROR, message=err.message, span=Span(loaded.path, err.line, err.col),
                   data={"source_line": err.source_line})


def _failed(inputs: Inputs) -> "ScanResult":
    from hloscan.hlo.loader import LoadedFile
    from hloscan.lint.engine import ScanResult

    return ScanResult(files=[LoadedFile(inputs.label, [], inputs.error)])


def confirm_tpu(source: Any, *, tpu: str, topology: str | None = None, python: str | None = None,
                timeout: float | None = None, **options: Any) -> list:
    """`hloscan confirm` for the inputs `check` takes (HLO text, paths, a jax Lowered/Compiled): each module
    compiled by the TPU compiler in a worker process, a ModuleConfirmation (hloscan.confirm.module) per
    module. Raises hloscan.confirm.runner.NoTpuPython when no python has the tpu extra; a file that cannot
    be read is in no result (as `check`, it never raises)."""
    from hloscan.confirm.module import confirm_module
    from hloscan.confirm.runner import DEFAULT_TIMEOUT, num_partitions, tpu_python
    from hloscan.confirm.scan import confirm_paths
    from hloscan.confirm.topology import topology_for
    from hloscan.lint.config import parse_config
    from hloscan.lint.scan import scan_text

    import hloscan.checks  # noqa: F401  (registers every check)

    chosen = tpu_python(python)
    inputs = resolve(source)
    settings = {k: list(v) if isinstance(v, tuple) else v for k, v in options.items() if k not in _RUN_KEYS}
    settings["tpu"] = tpu
    if inputs.host_outputs is not None and "host_outputs" not in settings:
        settings["host_outputs"] = list(inputs.host_outputs)
    config = parse_config(settings)
    limit = DEFAULT_TIMEOUT if timeout is None else timeout
    if inputs.text is None:
        return confirm_paths(inputs.paths, config, chosen, tpu=tpu, topology=topology, timeout=limit).modules
    result = scan_text(inputs.text, config, path=inputs.label)
    done = []
    for module in (m for f in result.files for m in f.modules):
        static = [f for f in result.findings if f.module == module.name]
        done.append(confirm_module(module, inputs.label, static, topology or topology_for(tpu, num_partitions(module)),
                                   chosen, limit, host_outputs=inputs.host_outputs))
    return done


def load(source: Any, strict: bool | None = None) -> Modules:
    """Parse HLO text, bytes, a file, a dump folder or a list of them into modules; never raises for bad input."""
    from hloscan.hlo.loader import LoadedFile, discover, load_file, load_text
    from hloscan.hlo.errors import HloSyntaxError

    inputs = resolve(source)
    if inputs.error is not None:
        files = [LoadedFile(inputs.label, [], inputs.error)]
    elif inputs.text is not None:
        try:
            files = [LoadedFile(inputs.label, load_text(inputs.text, inputs.label, strict))]
        except HloSyntaxError as exc:
            files = [LoadedFile(inputs.label, [], exc)]
    else:
        files = [load_file(path, strict) for path, skipped in discover(inputs.paths) if skipped is None]
    return Modules([m for f in files for m in f.modules], files)
