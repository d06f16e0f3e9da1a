"""The `hloscan` command group and what its commands share: exit codes, the settings in force (config file
plus flags) and the rule families' option flags, generated from their declarations."""

from __future__ import annotations

import sys
from typing import Any, Callable

import click

from hloscan.lint.config import Config, ConfigError, discover_config, load_config, unknown_selectors
from hloscan.lint.registry import Option, family_options
from hloscan.version import __version__

EXIT_CLEAN, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2


class DefaultCheckGroup(click.Group):
    """`hloscan PATH...` means `hloscan check PATH...` (like ruff and flake8 taking paths directly)."""

    def resolve_command(self, ctx: click.Context, args: list[str]):
        if args and args[0] not in self.commands and not args[0].startswith("-"):
            args = ["check", *args]
        return super().resolve_command(ctx, args)


@click.group(cls=DefaultCheckGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="hloscan")
def main() -> None:
    """Static analyzer for XLA HLO text dumps.

    Predicts host-offload output mismatches (E1200), scoped Vmem OOMs (E1001) and buffer-size
    mismatches (E0102) before you compile or run. `hloscan PATH...` is `hloscan check PATH...`.
    """


# ---------------------------------------------------------------------- family option flags


def flag_name(key: str) -> str:
    return "--" + key.replace("_", "-")


def _click_type(option: Option) -> Any:
    if option.normalize is not None:
        return str  # aliases are accepted (`--tpu tpu7x`): validated by Option.parse_text
    if option.choices is not None:
        return click.Choice([str(c) for c in option.choices])
    if option.type is int:
        return click.IntRange(option.minimum) if option.minimum is not None else int
    if option.type is float:
        return float
    return str  # tuples and free text: parsed by Option.parse_text


def family_flags(func: Callable) -> Callable:
    """One flag per run-wide option of every rule family (`--tpu`, `--vmem-limit-kib`, `--host-outputs`),
    generated from the families' declarations; the command receives them in `**family_options`."""
    for key, option in reversed(list(family_options().items())):
        help_text = option.help
        if option.normalize is not None and option.choices is not None:
            help_text += f" One of {', '.join(map(str, option.choices))} (or an alias such as tpu7x)."
        func = click.option(flag_name(key), key, type=_click_type(option), default=None, metavar=option.metavar,
                            help=help_text)(func)
    return func


def flag_values(values: dict[str, Any]) -> dict[str, Any]:
    """Family flags given on the command line, validated like their config keys."""
    out = {}
    specs = family_options()
    for key, raw in values.items():
        if raw is None or key not in specs:
            continue
        try:
            out[key] = specs[key].parse_text(key, raw) if isinstance(raw, str) else specs[key].coerce(key, raw)
        except ValueError as exc:
            raise click.BadParameter(str(exc), param_hint=flag_name(key)) from None
    return out


# ---------------------------------------------------------------------- settings in force


def load_settings(config_file: str | None, no_config: bool) -> Config:
    """The config in force; a bad one stops the run with exit code 2, naming the key."""
    if no_config:
        return Config()
    try:
        return load_config(config_file) if config_file else discover_config()
    except ConfigError as exc:
        click.echo(f"hloscan: config error: {exc}", err=True)
        sys.exit(EXIT_ERROR)


def settings(config_file: str | None, no_config: bool, flags: dict[str, Any], select: str | None = None,
             ignore: str | None = None) -> Config:
    """Config file, then command-line flags on top: the one configuration every command runs with."""
    config = load_settings(config_file, no_config)
    override = Config(select=_selectors(select, "--select"), ignore=_selectors(ignore, "--ignore"),
                      global_options=flag_values(flags))
    return config.merged(override)


def _selectors(text: str | None, flag: str) -> tuple[str, ...] | None:
    """Command-line selectors replace the config's; an unknown one is a usage error (exit 2)."""
    if text is None:
        return None
    selectors = tuple(s.strip() for s in text.split(",") if s.strip())
    bad = unknown_selectors(selectors)
    if bad:
        raise click.BadParameter(f"unknown selector {bad[0]!r} (no check code, prefix or name matches it; "
                                 "see `hloscan rules`)", param_hint=flag)
    return selectors


def config_options(func: Callable) -> Callable:
    """--config / --no-config, shared by every command that runs an analysis."""
    func = click.option("--no-config", is_flag=True, help="Ignore config files.")(func)
    return click.option("--config", "config_file", type=click.Path(dir_okay=False), default=None,
                        help="Read this config file instead of searching for pyproject.toml / hloscan.toml "
                             "upwards.")(func)
