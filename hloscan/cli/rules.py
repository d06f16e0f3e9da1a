"""`hloscan rules` lists every check; `hloscan rule CODE-or-NAME` prints one check's documentation."""

from __future__ import annotations

import re
import sys

import click

from hloscan.cli.main import main
from hloscan.lint.files import json_text
from hloscan.lint.registry import Check, TOOL_CODES, all_checks, lookup
from hloscan.lint.stages import PREFERENCES


def rule_row(check: type[Check]) -> dict[str, str | None]:
    return {"code": check.code, "name": check.name, "severity": check.severity.label,
            "xla_error": check.xla_error, "stage": check.stage, "summary": check.summary()}


def rules_table(rows: list[dict]) -> str:
    widths = {k: max([len(k)] + [len(str(r[k] or "-")) for r in rows]) for k in ("code", "name", "severity", "xla_error")}
    head = ("code", "name", "severity", "xla_error")
    lines = ["  ".join(h.upper().ljust(widths[h]) for h in head) + "  SUMMARY"]
    for r in rows:
        lines.append("  ".join(str(r[h] or "-").ljust(widths[h]) for h in head) + "  " + r["summary"])
    return "\n".join(lines)


def rule_text(check: type[Check]) -> str:
    """ruff's format_rule_text: a heading, the facts a user filters on, then the docstring."""
    lines = [f"# {check.name} ({check.code})", ""]
    lines.append(f"Severity: {check.severity.label}")
    lines.append(f"XLA error: {check.xla_error or 'none'}")
    order = PREFERENCES.get(check.stage, (check.stage,))
    lines.append(f"Stage: reads {order[0]} when a dump folder holds several stages of a module, else "
                 f"{', '.join(order[1:])} (any single file is read as it is)")
    lines.append(f"Family: {check.family.name} ({check.family.prefix}xx)")
    if check.options:
        lines.append("Options ([tool.hloscan.checks." + check.name + "]):")
        lines += _option_lines(check.options)
    if check.family.options:
        lines.append("Run-wide options (top-level config key / flag):")
        lines += _option_lines(check.family.options, flags=True)
    lines += ["", _elide_kernel_bodies(check.docs())]
    return "\n".join(lines)


_BODY = re.compile(r'("body"\s*:\s*\\?")([A-Za-z0-9+/=]{64,})(\\?")')


def _elide_kernel_bodies(text: str) -> str:
    """A Pallas kernel body in an example is MLIR bytecode in base64: shown as what it is, not as lines of it
    (the example's full text is in the check's source)."""
    return _BODY.sub(lambda m: f"{m.group(1)}<Mosaic kernel: {len(m.group(2))} characters of base64 MLIR "
                               f"bytecode>{m.group(3)}", text)


def _option_lines(options, flags: bool = False) -> list[str]:
    out = []
    for key, opt in options.items():
        flag = f" / --{key.replace('_', '-')}" if flags else ""
        out.append(f"  {key}{flag} ({opt.type.__name__}, default {opt.default!r}): {opt.help}")
    return out


def tool_code_text(code: str) -> str:
    tool = TOOL_CODES[code]
    return f"# {tool.name} ({tool.code})\n\nSeverity: {tool.severity.label}\n\n{tool.summary}"


@main.command("rules")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
def rules_command(fmt: str) -> None:
    """List every check: code, name, severity, XLA error and summary."""
    rows = [rule_row(c) for c in all_checks()]
    click.echo(json_text(rows, indent=2) if fmt == "json" else rules_table(rows))


@main.command("rule")
@click.argument("code_or_name")
def rule_command(code_or_name: str) -> None:
    """Show one check's documentation (by code, like HLO201, or name)."""
    check = lookup(code_or_name)
    if check is not None:
        click.echo(rule_text(check))
        return
    if code_or_name.upper() in TOOL_CODES:
        click.echo(tool_code_text(code_or_name.upper()))
        return
    click.echo(f"hloscan: unknown rule {code_or_name!r} (see `hloscan rules`)", err=True)
    sys.exit(2)
