"""hloscan: a static analyzer for XLA HLO text dumps.

Python API (imports are lazy, so `import hloscan` stays cheap; jax is never imported by hloscan)::

    import hloscan

    findings = hloscan.check("dumps/")                      # a file, or an --xla_dump_to folder
    findings = hloscan.check(hlo_text, tpu="v6e")           # HLO text (has a newline or starts with HloModule)
    findings = hloscan.check(hlo_bytes)                     # UTF-8 bytes
    findings = hloscan.check(["a.txt", "dumps/"])           # several paths
    findings = hloscan.check(jax.jit(f).lower(x))           # a jax Lowered or Compiled (jax optional)
    findings = hloscan.check(path, select=["HLO2"], ignore=["scoped-vmem-tight"],
                             severity={"HLO202": "error"},
                             checks={"scoped-vmem-tight": {"margin": 0.2}},
                             vmem_limit_kib=32768, host_outputs=[0])
    for f in findings:
        print(f.span, f.code, f.message)                    # Finding: see hloscan.lint.finding
    if findings.errors:                                     # inputs that could not be analysed (HLO001)
        print(findings.errors[0])

    done = hloscan.confirm_tpu(jax.jit(f).lower(x), tpu="v5e")  # the TPU compiler's verdict (tpu extra)
    modules = hloscan.load("module.after_optimizations.txt")  # parsed IR (hloscan.hlo.ir.Module)
    modules = hloscan.load(hlo_text)                          # same inputs as check; modules.errors likewise

`check` and `load` accept the same inputs: HLO text, bytes, a path (str or PathLike) to a file or dump
folder, a list of paths, or a jax `Lowered`/`Compiled` (its HLO text; for `check` also the outputs its
out_shardings place in pinned_host memory, as `host_outputs`, unless given). "" is empty text, not the
current directory. `check` returns a `Findings` list (sorted Finding objects) and `load` a `Modules` list;
both carry `.errors` (one HloSyntaxError per input that failed), `.files` and `.ok`. A bad file never
raises and never drops the other files' results: it is in `.errors` and, for `check`, an HLO001 finding
in the list. Details: hloscan.api.

`check` takes the same settings as the `[tool.hloscan]` config table (select, ignore, severity, checks,
tpu, vmem_limit_kib, host_outputs, per_path_ignores) as keyword arguments, plus `config=` (a
pyproject.toml or hloscan.toml to read first), `strict=` (True: the full grammar; False: the fast path;
None, the default: the full grammar for texts up to 256 KiB, the fast path above), `jobs=` (worker
processes; default 1) and `cache=` (False, the default; True: reuse the findings of unchanged files from
the result cache `hloscan check` uses, hloscan.lint.cache; or a folder to keep them in; text inputs are
never cached). Bad settings raise `hloscan.lint.config.ConfigError` (a ValueError) naming the
key; an input of an unsupported type raises TypeError.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from hloscan.version import __version__

if TYPE_CHECKING:
    from os import PathLike

    from hloscan.api import Findings, Modules


def check(source: "str | bytes | PathLike[str] | list[str | PathLike[str]] | Any", **options: Any) -> "Findings":
    """Run the checks on HLO text, bytes, a file / dump folder, a list of paths or a jax stage object."""
    from hloscan.api import check as _check

    return _check(source, **options)


def confirm_tpu(source: Any, *, tpu: str, **options: Any) -> list:
    """Compile the same inputs as `check` with the real TPU compiler (needs the tpu extra; jax is imported
    only by the worker process) and compare: one hloscan.confirm.module.ModuleConfirmation per module."""
    from hloscan.api import confirm_tpu as _confirm

    return _confirm(source, tpu=tpu, **options)


def load(source: "str | bytes | PathLike[str] | list[str | PathLike[str]] | Any", strict: bool | None = None) -> "Modules":
    """Parse the same inputs as `check` into modules; bad inputs are in `.errors`, never raised."""
    from hloscan.api import load as _load

    return _load(source, strict)
