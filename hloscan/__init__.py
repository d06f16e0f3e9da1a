"""hloscan: a static analyzer for XLA HLO text dumps.

Python API (imports are lazy, so `import hloscan` stays cheap)::

    import hloscan

    findings = hloscan.check("dumps/")                      # a file, or an --xla_dump_to folder
    findings = hloscan.check(hlo_text, tpu="v6e")           # HLO text (has a newline or `HloModule`)
    findings = hloscan.check(path, select=["HLO2"], ignore=["scoped-vmem-tight"],
                             severity={"HLO202": "error"},
                             checks={"scoped-vmem-tight": {"margin": 0.2}},
                             vmem_limit_kib=32768, host_outputs=[0])
    for f in findings:
        print(f.span, f.code, f.message)                    # Finding: see hloscan.finding

    modules = hloscan.load("module.after_optimizations.txt")  # parsed IR (hloscan.ir.Module)

`check` takes the same settings as the `[tool.hloscan]` config table (select, ignore, severity, checks,
tpu, vmem_limit_kib, host_outputs, per_path_ignores) as keyword arguments, plus `config=` (a
pyproject.toml or hloscan.toml to read first), `strict=` (True: full-grammar parse; False: fast path; default None: full grammar for
texts up to 256 KiB, fast path above) and `jobs=` (worker
processes; default 1). Bad settings raise `hloscan.config.ConfigError` naming the key; unparseable
input raises `hloscan.parser.HloSyntaxError` (HLO001).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

if TYPE_CHECKING:
    from os import PathLike

    from .finding import Finding
    from .ir import Module

_RUN_KEYS = ("config", "strict", "jobs")


def _is_text(path_or_text: Any) -> bool:
    return isinstance(path_or_text, str) and ("\n" in path_or_text or "HloModule" in path_or_text)


def check(path_or_text: "str | PathLike[str]", **options: Any) -> "list[Finding]":
    """Run the checks on HLO text or on a file / dump folder and return the findings, sorted."""
    from .config import Config, load_config, parse_config

    settings = {k: v for k, v in options.items() if k not in _RUN_KEYS}
    config = load_config(options["config"]) if options.get("config") else Config()
    override = parse_config({k: list(v) if isinstance(v, tuple) else v for k, v in settings.items()})
    config = _merge(config, override)
    if _is_text(path_or_text):
        return _check_text(path_or_text, config, _strict_option(options))
    return _check_paths(str(path_or_text), config, _strict_option(options), int(options.get("jobs", 1)))


def _strict_option(options: dict) -> bool | None:
    strict = options.get("strict")
    return None if strict is None else bool(strict)


def _merge(base, override):
    """Keyword arguments win over the config file, key by key (as command-line flags do)."""
    from dataclasses import replace

    return replace(
        base,
        select=override.select if override.select is not None else base.select,
        ignore=override.ignore if override.ignore is not None else base.ignore,
        severity={**base.severity, **override.severity},
        check_options={k: {**base.check_options.get(k, {}), **override.check_options.get(k, {})}
                       for k in {*base.check_options, *override.check_options}},
        global_options={**base.global_options, **override.global_options},
        per_path_ignores={**base.per_path_ignores, **override.per_path_ignores},
    )


def _selection(config):
    from .engine import Selection

    return Selection(config.select or (), config.ignore or ())


def _check_text(text: str, config, strict: bool | None) -> "list[Finding]":
    from .engine import run_checks, selected_checks
    from .finding import Finding
    from .loader import load_text

    checks = selected_checks(_selection(config))
    findings: list[Finding] = []
    for module in load_text(text, "<text>", strict):
        findings.extend(run_checks(module, "<text>", checks, config.options(), config.severity))
    return sorted(findings, key=Finding.sort_key)


def _check_paths(path: str, config, strict: bool | None, jobs: int) -> "list[Finding]":
    from .engine import selected_checks
    from .runner import build_tasks, scan_tasks

    checks = selected_checks(_selection(config))
    tasks = build_tasks([path], checks, config.ignored_for)
    result = scan_tasks(tasks, config.options(), config.severity, strict, jobs=jobs)
    for loaded in result.files:
        if loaded.error is not None:
            raise loaded.error
    return result.findings


def load(path: "str | PathLike[str]", strict: bool | None = None) -> "list[Module]":
    """Parse every module in a file or dump folder; raises HloSyntaxError (HLO001) for the first bad file."""
    from .loader import load as _load

    return _load(path, strict)
