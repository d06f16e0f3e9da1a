"""The `hloscan` command group and what its commands share: exit codes, the settings in force (config file
plus flags) and the rule families' option flags, generated from their declarations."""

from __future__ import annotations

import difflib
import os
import signal
import sys
import threading
from typing import Any, Callable

import click

from hloscan.lint.scan import Progress
from hloscan.hlo.loader import LoadedFile, discover, load_file
from hloscan.lint.config import Config, ConfigError, discover_config, load_config, unknown_selectors
from hloscan.lint.engine import Selection, selected_checks
from hloscan.lint.files import output_problem, printable
from hloscan.lint.registry import Option, family_options
from hloscan.version import __version__

EXIT_CLEAN, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2
EXIT_INTERRUPTED, EXIT_TERMINATED = 130, 143  # 128 + SIGINT / SIGTERM, as shells report them
_GROUP_OPTIONS = ("-h", "--help", "--version")


class DefaultCheckGroup(click.Group):
    """`hloscan PATH...` means `hloscan check PATH...` (like ruff and flake8 taking paths directly), also
    with options first (`hloscan --tpu v6e DUMP`) and for standard input (`hloscan -`)."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if args and args[0] not in self.commands and args[0] not in _GROUP_OPTIONS:
            self._refuse_mistyped_command(args[0])
            args = ["check", *args]
        return super().parse_args(ctx, args)

    def _refuse_mistyped_command(self, word: str) -> None:
        """`hloscan chek x.hlo`: a word that is no file but close to a command is a typo, not a path."""
        if word.startswith("-") or word == "-" or os.path.exists(word):
            return
        close = difflib.get_close_matches(word, sorted(self.commands), n=1, cutoff=0.75)
        if close:
            click.echo(f"hloscan: no command or file named {word!r}; did you mean `hloscan {close[0]}`?", err=True)
            sys.exit(2)

    def invoke(self, ctx: click.Context):
        """Ctrl-C exits 130 and SIGTERM 143, promptly and without a traceback (click's own handling says
        "Aborted!" and exits 1, which CI cannot tell from "findings")."""
        previous = _on_sigterm()
        try:
            return super().invoke(ctx)
        except KeyboardInterrupt:
            click.echo("\nhloscan: interrupted", err=True)
            sys.exit(EXIT_INTERRUPTED)
        finally:
            if previous is not None:
                signal.signal(signal.SIGTERM, previous)


def _terminated(signum, frame) -> None:
    raise SystemExit(EXIT_TERMINATED)  # unwinds like Ctrl-C: worker processes are stopped on the way out


def _on_sigterm():
    if threading.current_thread() is not threading.main_thread():
        return None  # signal handlers can only be set from the main thread (CliRunner in a thread, ...)
    return signal.signal(signal.SIGTERM, _terminated)


@click.group(cls=DefaultCheckGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="hloscan")
def main() -> None:
    """Static analyzer for XLA HLO text dumps.

    Predicts host-offload output mismatches (E1200), scoped Vmem OOMs (E1001), HBM out of memory
    (E1000) and buffer-size mismatches (E0102) before you compile or run. `hloscan PATH...` is
    `hloscan check PATH...`.
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


def config_report(config: Config) -> str:
    """`--show-config`: where the settings come from and what they are, after flags are applied."""
    checks = selected_checks(Selection(config.select or (), config.ignore or ()))
    lines = [f"config file: {printable(str(config.path)) if config.path else '(none: defaults and flags only)'}",
             f"select: {', '.join(config.select) if config.select else '(all)'}",
             f"ignore: {', '.join(config.ignore) if config.ignore else '(none)'}",
             f"fail-on: {config.fail_on.label if config.fail_on else 'warning (default)'}"]
    for code, level in sorted(config.severity.items()):
        lines.append(f"severity: {code} = {level.label}")
    for key, value in sorted(config.global_options.items()):
        lines.append(f"{key.replace('_', '-')}: {value}")
    for name, table in sorted(config.check_options.items()):
        lines.extend(f"checks.{name}.{opt}: {value}" for opt, value in sorted(table.items()))
    for glob, selectors in config.per_path_ignores.items():
        lines.append(f"per-path-ignores: {glob!r} = {', '.join(selectors)}")
    lines.append(f"checks run: {', '.join(c.code for c in checks) or '(none)'}")
    return "\n".join(lines)


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


# ---------------------------------------------------------------------- checked before any work


def require_selection(config: Config) -> None:
    """A `select` that matches no check (`--select HLO001`, `HLO9`, `syntax-error`) is a usage error:
    otherwise the run would pass with 0 findings whatever the dumps hold. (Ignoring every selected check
    is explicit and allowed: the dumps are then only parsed.)"""
    if not config.select or selected_checks(Selection(config.select, ())):
        return
    where = f" in {printable(str(config.path))}" if config.path is not None and _select_from_file(config) else ""
    click.echo(f"hloscan: select {', '.join(config.select)}{where} matches no check; HLO001 (syntax error) and "
               "HLO900 (check crashed) are reported always and cannot be selected alone. See `hloscan rules`.",
               err=True)
    sys.exit(EXIT_ERROR)


def _select_from_file(config: Config) -> bool:
    try:
        return load_config(config.path).select == config.select
    except ConfigError:
        return False


def require_writable(path: str | None, option: str = "--output", inputs: tuple[str, ...] | list[str] = ()) -> None:
    """Stop with exit 2 before the work when an output file cannot be written, or would overwrite an input
    (`-o dump.hlo` when dump.hlo is scanned); used by every command that writes a file."""
    if path is None:
        return
    problem = output_problem(path)
    if problem is None and os.path.exists(path):
        target = os.path.realpath(path)
        if any(os.path.realpath(i) == target for i in inputs):
            problem = "is one of the inputs (it would be overwritten)"
    if problem is not None:
        click.echo(f"hloscan: cannot write {option} {printable(str(path))}: {problem}", err=True)
        sys.exit(EXIT_ERROR)


def use_colour(choice: str, stream, to_file: bool) -> bool:
    """--color auto|always|never; `auto` is a terminal, not a file, and no NO_COLOR (no-color.org)."""
    if choice == "always":
        return True
    if choice == "never" or to_file or os.environ.get("NO_COLOR"):
        return False
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def colour_option(func: Callable) -> Callable:
    return click.option("--color", "--colour", "colour", type=click.Choice(["auto", "always", "never"]),
                        default="auto", show_default=True,
                        help="Colour text output; `auto` colours a terminal unless NO_COLOR is set.")(func)


# ---------------------------------------------------------------------- inputs of the analysis commands


def load_all(paths: tuple[str, ...], strict: bool | None = None,
             entry_only_without: str | None = None) -> list[LoadedFile]:
    """Load every input; a bad file is recorded and the others are still loaded."""
    files = [path for path, skipped in discover(list(paths)) if skipped is None]
    return list(loading(files, strict, entry_only_without=entry_only_without))


def loading(files: list[str], strict: bool | None = None, entry_only: bool = False,
            entry_only_without: str | None = None):
    """Each file loaded in turn, with check's progress line on a terminal's stderr once it takes over a
    second (a 48 MB dump takes seconds to read: hbm, memory, parse, signature and graph show it too).
    `entry_only`, `entry_only_without`: only the ENTRY computation of a big dump is parsed (loader.load_file)."""
    bar = Progress(len(files), sys.stderr)
    try:
        for path in files:
            bar.reading(path)
            loaded = load_file(path, strict, entry_only, entry_only_without)
            bar.advance()
            yield loaded
    finally:
        bar.close()


def load_reporting_errors(paths: tuple[str, ...], entry_only_without: str | None = None
                          ) -> tuple[list[LoadedFile], list[LoadedFile]]:
    """(files that loaded, files that did not); each error is printed on stderr as it is met."""
    good, bad = [], []
    for loaded in load_all(paths, entry_only_without=entry_only_without):
        (good if loaded.ok else bad).append(loaded)
        if not loaded.ok:
            click.echo(loaded.error.format(), err=True)
    return good, bad


def error_json(loaded: LoadedFile) -> dict[str, Any]:
    err = loaded.error
    return {"path": loaded.path, "code": err.code, "line": err.line, "col": err.col, "message": err.message}
