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
        print(f.span, f.code, f.message)                    # Finding: see hloscan.lint.finding

    modules = hloscan.load("module.after_optimizations.txt")  # parsed IR (hloscan.hlo.ir.Module)

`check` takes the same settings as the `[tool.hloscan]` config table (select, ignore, severity, checks,
tpu, vmem_limit_kib, host_outputs, per_path_ignores) as keyword arguments, plus `config=` (a
pyproject.toml or hloscan.toml to read first), `strict=` (full-grammar parse) and `jobs=` (worker
processes; default 1). Bad settings raise `hloscan.lint.config.ConfigError` naming the key; unparseable
input raises `hloscan.hlo.parser.HloSyntaxError` (HLO001).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from hloscan.version import __version__

if TYPE_CHECKING:
    from os import PathLike

    from hloscan.lint.finding import Finding
    from hloscan.hlo.ir import Module

_RUN_KEYS = ("config", "strict", "jobs")


def _is_text(path_or_text: Any) -> bool:
    return isinstance(path_or_text, str) and ("\n" in path_or_text or "HloModule" in path_or_text)


def check(path_or_text: "str | PathLike[str]", **options: Any) -> "list[Finding]":
    """Run the checks on HLO text or on a file / dump folder and return the findings, sorted."""
    import hloscan.checks  # noqa: F401  (registers every check: the entry points own that, not the framework)
    from hloscan.lint.config import Config, load_config, parse_config
    from hloscan.lint.scan import scan, scan_text

    settings = {k: list(v) if isinstance(v, tuple) else v for k, v in options.items() if k not in _RUN_KEYS}
    config = load_config(options["config"]) if options.get("config") else Config()
    config = config.merged(parse_config(settings))  # keyword arguments win, key by key, as flags do
    strict = bool(options.get("strict"))
    if _is_text(path_or_text):
        result = scan_text(path_or_text, config, strict=strict)
    else:
        result = scan([str(path_or_text)], config, strict=strict, jobs=int(options.get("jobs", 1)))
    for loaded in result.files:
        if loaded.error is not None:
            raise loaded.error
    return result.findings


def load(path: "str | PathLike[str]", strict: bool = False) -> "list[Module]":
    """Parse every module in a file or dump folder; raises HloSyntaxError (HLO001) for the first bad file."""
    from hloscan.hlo.loader import load as _load

    return _load(path, strict)
