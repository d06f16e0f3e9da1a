"""Reads and validates `[tool.hloscan]` (pyproject.toml) or `hloscan.toml`, found from a folder upwards."""

from __future__ import annotations

import fnmatch
import logging
import os
import tomllib
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Iterable

from hloscan.lint.finding import Severity
from hloscan.lint.registry import REDIRECTS, TOOL_CODES, Check, all_checks, family_options, lookup, matches

log = logging.getLogger(__name__)

CONFIG_FILES = ("hloscan.toml", "pyproject.toml")  # hloscan.toml wins when a folder holds both (as ruff.toml does)
# The framework's own keys; the rule families add their run-wide options (tpu, ...) as further top-level keys.
_LINT_KEYS = ("select", "ignore", "fail_on", "severity", "checks", "per_path_ignores")


def top_level_keys() -> tuple[str, ...]:
    return _LINT_KEYS + tuple(family_options())


class ConfigError(ValueError):
    """A bad config key or value; the message names the key (exit code 2)."""

    def __init__(self, key: str, problem: str, path: Path | str | None = None):
        self.key, self.problem, self.path = key, problem, path
        where = f"{path}: " if path else ""
        super().__init__(f"{where}{key}: {problem}")


@dataclass
class Config:
    """Validated settings; `None`/empty means "not set" so command-line flags and defaults can fill in."""

    path: Path | None = None
    select: tuple[str, ...] | None = None
    ignore: tuple[str, ...] | None = None
    fail_on: Severity | None = None
    severity: dict[str, Severity] = field(default_factory=dict)  # check code -> severity
    check_options: dict[str, dict[str, Any]] = field(default_factory=dict)  # check name -> {option: value}
    global_options: dict[str, Any] = field(default_factory=dict)
    per_path_ignores: dict[str, tuple[str, ...]] = field(default_factory=dict)

    @property
    def root(self) -> Path:
        return self.path.parent if self.path is not None else Path.cwd()

    def merged(self, override: "Config") -> "Config":
        """This config with `override`'s settings on top, key by key (as command-line flags win over the file)."""
        return replace(
            self,
            select=override.select if override.select is not None else self.select,
            ignore=override.ignore if override.ignore is not None else self.ignore,
            fail_on=override.fail_on if override.fail_on is not None else self.fail_on,
            severity={**self.severity, **override.severity},
            check_options={k: {**self.check_options.get(k, {}), **override.check_options.get(k, {})}
                           for k in {*self.check_options, *override.check_options}},
            global_options={**self.global_options, **override.global_options},
            per_path_ignores={**self.per_path_ignores, **override.per_path_ignores},
        )

    def options(self) -> dict[str, Any]:
        """The options mapping Context expects: check name -> table, plus run-wide values under `_global`."""
        return {"_global": dict(self.global_options), **{k: dict(v) for k, v in self.check_options.items()}}

    def ignored_for(self, path: str) -> tuple[str, ...]:
        """Selectors ignored for one input path (globs are relative to the config file's folder)."""
        if not self.per_path_ignores:
            return ()
        candidates = _path_forms(path, self.root)
        out: list[str] = []
        for glob, selectors in self.per_path_ignores.items():
            if any(fnmatch.fnmatchcase(c, glob) for c in candidates):
                out.extend(selectors)
        return tuple(out)


def _path_forms(path: str, root: Path) -> list[str]:
    # NOTE: fnmatch's `*` also matches `/`, so "dumps/*" covers the whole tree below dumps/.
    p = Path(path)
    forms = [p.as_posix(), p.name]
    try:
        forms.append(p.resolve().relative_to(root.resolve()).as_posix())
    except ValueError:
        pass
    return forms


# ---------------------------------------------------------------------- finding and reading


def find_config(start: Path | str | None = None) -> Path | None:
    """The nearest hloscan.toml, or pyproject.toml holding [tool.hloscan], from `start` upwards."""
    folder = Path(start or os.getcwd()).resolve()
    for candidate_dir in (folder, *folder.parents):
        for name in CONFIG_FILES:
            candidate = candidate_dir / name
            if candidate.is_file() and (name != "pyproject.toml" or _has_tool_table(candidate)):
                return candidate
    return None


def _has_tool_table(path: Path) -> bool:
    try:
        return "hloscan" in _read_toml(path).get("tool", {})
    except ConfigError:
        # A broken pyproject.toml without our table is not ours to report; one with it is read again and fails.
        return "[tool.hloscan" in path.read_text(encoding="utf-8", errors="replace")


def _read_toml(path: Path) -> dict[str, Any]:
    try:
        with open(path, "rb") as handle:
            return tomllib.load(handle)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError("(file)", f"invalid TOML: {exc}", path) from None
    except UnicodeDecodeError as exc:
        raise ConfigError("(file)", f"not UTF-8 text (byte 0x{exc.object[exc.start]:02x} at offset {exc.start}); "
                                    "TOML files must be UTF-8", path) from None
    except OSError as exc:
        raise ConfigError("(file)", f"cannot read: {exc.strerror or exc}", path) from None


def load_config(path: Path | str) -> Config:
    """Read one config file: `[tool.hloscan]` of a pyproject.toml, else the top-level keys."""
    path = Path(path)
    data = _read_toml(path)
    if path.name == "pyproject.toml":
        table, prefix = data.get("tool", {}).get("hloscan", {}), "tool.hloscan."
    else:
        table, prefix = data, ""
    if not isinstance(table, dict):
        raise ConfigError(prefix.rstrip(".") or "(file)", "must be a table", path)
    try:
        config = parse_config(table, prefix)
    except ConfigError as exc:
        raise ConfigError(exc.key, exc.problem, path) from None
    config.path = path
    return config


def discover_config(start: Path | str | None = None) -> Config:
    found = find_config(start)
    log.debug("config: %s", found)
    return load_config(found) if found is not None else Config()


# ---------------------------------------------------------------------- validation


def parse_config(table: dict[str, Any], prefix: str = "") -> Config:
    """Validate a config table; raises ConfigError naming the first bad key."""
    config = Config()
    for raw_key, value in table.items():
        key = raw_key.replace("-", "_")
        name = prefix + raw_key
        if key not in top_level_keys():
            known = ", ".join(k.replace("_", "-") for k in top_level_keys())
            raise ConfigError(name, f"unknown key (expected one of: {known})")
        if key in ("select", "ignore"):
            setattr(config, key, parse_selectors(value, name))
        elif key == "fail_on":
            config.fail_on = _severity(value, name)
        elif key == "severity":
            config.severity = _severities(value, name)
        elif key == "checks":
            config.check_options = _check_tables(value, name)
        elif key == "per_path_ignores":
            config.per_path_ignores = _per_path(value, name)
        else:
            config.global_options[key] = parse_global_option(key, value, name)
    return config


def parse_selectors(value: Any, key: str) -> tuple[str, ...]:
    if isinstance(value, str):
        value = [s for s in value.split(",")]
    if not isinstance(value, list) or not all(isinstance(s, str) for s in value):
        raise ConfigError(key, f"must be a list of codes, code prefixes or names, got {value!r}")
    selectors = tuple(s.strip() for s in value if s.strip())
    bad = unknown_selectors(selectors)
    if bad:
        raise ConfigError(key, f"unknown selector {bad[0]!r} (no check code, prefix or name matches it)")
    return selectors


def unknown_selectors(selectors: Iterable[str]) -> list[str]:
    """Selectors that match no check, tool code or retired code: a typo must not silently disable a check."""
    checks = all_checks()
    out = []
    for s in selectors:
        s = s.strip()
        known = (any(matches(c, s) for c in checks)
                 or any(code.startswith(s.upper()) or tool.name == s.lower() for code, tool in TOOL_CODES.items())
                 or s in REDIRECTS)
        if not known or not s:
            out.append(s)
    return out


def _severity(value: Any, key: str) -> Severity:
    if not isinstance(value, str):
        raise ConfigError(key, f"must be a string (error, warning or note), got {value!r}")
    try:
        return Severity.parse(value)
    except ValueError as exc:
        raise ConfigError(key, str(exc)) from None


def _severities(value: Any, key: str) -> dict[str, Severity]:
    if not isinstance(value, dict):
        raise ConfigError(key, "must be a table of {code-or-name = \"error\"|\"warning\"|\"note\"}")
    out = {}
    for ref, level in value.items():
        check = _check(ref, f"{key}.{ref}")
        out[check.code] = _severity(level, f"{key}.{ref}")
    return out


def _check(ref: str, key: str) -> type[Check]:
    check = lookup(ref)
    if check is None:
        raise ConfigError(key, f"unknown check {ref!r} (see `hloscan rules`)")
    return check


def _check_tables(value: Any, key: str) -> dict[str, dict[str, Any]]:
    if not isinstance(value, dict):
        raise ConfigError(key, "must be a table of per-check option tables")
    out: dict[str, dict[str, Any]] = {}
    for ref, table in value.items():
        where = f"{key}.{ref}"
        check = _check(ref, where)
        if not isinstance(table, dict):
            raise ConfigError(where, "must be a table of options")
        out.setdefault(check.name, {}).update(parse_check_options(check, table, where))
    return out


def parse_check_options(check: type[Check], table: dict[str, Any], where: str) -> dict[str, Any]:
    """Validate one check's option table against its declared `options` (Option.coerce)."""
    out = {}
    for opt, raw in table.items():
        spec = check.options.get(opt) or check.options.get(opt.replace("-", "_"))
        if spec is None:
            known = ", ".join(sorted(check.options)) or "none"
            raise ConfigError(f"{where}.{opt}", f"unknown option for {check.code} (options: {known})")
        if spec.type is tuple and isinstance(raw, list):
            raw = tuple(raw)
        try:
            out[opt.replace("-", "_")] = spec.coerce(opt, raw)
        except ValueError as exc:
            raise ConfigError(f"{where}.{opt}", str(exc)) from None
    return out


def parse_global_option(key: str, value: Any, where: str) -> Any:
    """A rule family's run-wide option (`tpu`, ...: the same as its command-line flag), validated by its declaration."""
    try:
        return family_options()[key].coerce(key, value)
    except ValueError as exc:
        raise ConfigError(where, str(exc)) from None


def _per_path(value: Any, key: str) -> dict[str, tuple[str, ...]]:
    if not isinstance(value, dict):
        raise ConfigError(key, 'must be a table of {"glob" = ["HLO3", ...]}')
    return {glob: parse_selectors(sel, f"{key}.{glob!r}") for glob, sel in value.items()}
