"""`hloscan explain`: recognise an XLA error code or message and explain it, optionally against the dump."""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass, field
from typing import Any, Callable

import click

from hloscan.analyses import xla_errors
from hloscan.analyses.hbm import analyze_modules, explain as explain_e1000
from hloscan.analyses.host_offload import explain as explain_e1200
from hloscan.analyses.layouts import explain as e0102
from hloscan.analyses.vmem import explain as explain_e1001
from hloscan.cli.layout import EXIT_CLEAN, EXIT_ERROR, FORMAT_OPTION, signature_of
from hloscan.cli.main import main
from hloscan.cli.modules import DumpModule, load_modules_or_exit
from hloscan.hlo.ir import Module, Shape
from hloscan.hlo.layout import minor_to_major
from hloscan.hlo.signature import SignatureEntry
from hloscan.lint.files import json_text
from hloscan.lint.registry import predicting, related_to

_BARE_CODE = re.compile(r"^\s*(?:error_)?E?\d{4}\s*$", re.I)


@dataclass
class Request:
    """The text to explain and the dump it came from; the dump is loaded once, on first use."""

    text: str
    dump: str | None
    _loaded: list[DumpModule] | None = field(default=None, repr=False)

    @property
    def loaded(self) -> list[DumpModule]:
        """The dump's modules with their files (empty without --dump)."""
        if self.dump is not None and self._loaded is None:
            self._loaded = load_modules_or_exit(self.dump)
        return self._loaded or []

    @property
    def modules(self) -> list[Module] | None:
        return [m.module for m in self.loaded] if self.dump is not None else None


@dataclass(frozen=True)
class Explained:
    """One explainer's answer, as text and as JSON."""

    kind: str
    text: str
    data: dict[str, Any]


Explainer = Callable[[Request], "Explained | None"]


def fail(message: str) -> None:
    click.echo(f"hloscan explain: {message}", err=True)
    sys.exit(EXIT_ERROR)


def _generic(kind: str, module, result: Any) -> Explained:
    """Text and JSON from whatever an explainer returns: a str, or an object with to_json()."""
    if isinstance(result, str):
        return Explained(kind, result, {"kind": kind, "text": result})
    render = getattr(module, "render_text", None)
    text = render(result) if callable(render) else str(result)
    data = result.to_json() if hasattr(result, "to_json") else {"text": text}
    return Explained(kind, text, {"kind": kind, **data})


# ---------------------------------------------------------------------------------------------- explainers


def explain_code(req: Request) -> Explained | None:
    if not _BARE_CODE.match(req.text):
        return None
    result = xla_errors.explain_xla_code(req.text.strip(), predicting, related_to)
    if result is None:
        fail(f"{req.text.strip()} is not an XLA error code hloscan knows")
    return _generic("xla-code", xla_errors, result)


def explain_e0102_message(req: Request) -> Explained | None:
    e = e0102.explain_e0102(req.text)
    if e is None:
        return None
    text, data = e0102.render_text(e), {"kind": "E0102", **e.to_json()}
    if req.dump is not None:
        lines, data["dump"] = _e0102_dump(e, req.modules or [])
        text += "\n" + "\n".join(lines)
    return Explained("E0102", text, data)


def explain_e1200_message(req: Request) -> Explained | None:
    result = explain_e1200.explain_e1200(req.text, req.modules if req.dump else None)
    return None if result is None else _generic("E1200", explain_e1200, result)


def explain_e1001_message(req: Request) -> Explained | None:
    e = explain_e1001.explain_e1001(req.text, req.modules if req.dump else None)
    return None if e is None else Explained(e.code, explain_e1001.render_text(e), {"kind": e.code, **e.to_json()})


def explain_e1000_message(req: Request) -> Explained | None:
    results = _hbm_results(req) if req.dump else None
    e = explain_e1000.explain_hbm_oom(req.text, req.modules if req.dump else None, req.dump, results)
    return None if e is None else Explained("E1000", explain_e1000.render_text(e), {"kind": "E1000", **e.to_json()})


def _hbm_results(req: Request) -> list[Any] | None:
    """The dump's figures as `hloscan hbm DUMP` computes them, for the generation the message names."""
    oom = explain_e1000.parse_hbm_oom(req.text)
    if oom is None:
        return None
    gen = oom.generations[0] if oom.generations else None
    by_file: dict[str, list[Module]] = {}
    for m in req.loaded:
        by_file.setdefault(m.path, []).append(m.module)
    return [r for path, modules in by_file.items() for r in analyze_modules(modules, path, gen)]


# Tried in order; the first that recognises the text answers.
EXPLAINERS: tuple[Explainer, ...] = (explain_code, explain_e0102_message, explain_e1200_message, explain_e1001_message,
                                     explain_e1000_message)


# ------------------------------------------------------------------------------------------ E0102 and dump


def _physical(shape: Shape | None, with_tiles: bool) -> tuple | None:
    """What decides a buffer's bytes; tiles only when the dump has them (a pre-optimisation dump has none)."""
    if shape is None or not shape.is_array:
        return None
    layout = shape.layout
    tiles = (layout.tiles, layout.element_size_bits) if with_tiles and layout is not None else ()
    return (shape.element_type, shape.dims, minor_to_major(shape), tiles)


def _dump_parameter(e, modules: list[Module]) -> tuple[Module, SignatureEntry] | None:
    """The entry parameter the message names: in the module named like the executable if there is one."""
    named = [m for m in modules if e.executable and m.name == e.executable]
    for module in named + [m for m in modules if m not in named]:
        for entry in signature_of(module).parameters:
            if entry.index == e.parameter and entry.shape_index == ():
                return module, entry
    return None


def _verdict(e, entry: SignatureEntry) -> str:
    tiled = bool(entry.tiling)
    mine = _physical(entry.shape, tiled)
    sides = [role for role, side in (("expected", e.expected), ("got", e.got))
             if mine is not None and _physical(side.effective_shape, tiled) == mine]
    if len(sides) == 2:
        return "both"
    if sides:
        return sides[0]
    return "neither"


_VERDICT_TEXT = {
    "expected": "matches the EXPECTED side: this dump is the executable that rejected the buffer; the buffer "
                "was laid out by another program (its producer or a checkpoint).",
    "got": "matches the GOT side: this dump is the program whose layout the passed buffer has (its producer); "
           "the rejecting executable wants the expected layout.",
    "both": "matches both sides as far as the dump shows (it has no tiles): compare a post-optimisation dump.",
    "neither": "matches neither side: the dump is from another compile (other flags, versions or shapes).",
}


def _e0102_dump(e, modules: list[Module]) -> tuple[list[str], dict[str, Any]]:
    hit = _dump_parameter(e, modules)
    if hit is None:
        note = f"the dump has no entry parameter {e.parameter}"
        return [f"  dump: {note}"], {"found": False, "note": note}
    module, entry = hit
    verdict = _verdict(e, entry)
    lines = [f"  in the dump (module {module.name}):",
             f"    parameter {e.parameter} is %{entry.name}: {entry.shape_text}, {entry.bytes} bytes"]
    if entry.op_name:
        lines.append(f"    op_name: {entry.op_name}")
    if entry.source:
        lines.append(f"    source: {entry.source}")
    lines.append(f"    layout {_VERDICT_TEXT[verdict]}")
    data = {"found": True, "module": module.name, "instruction": entry.name, "shape": entry.shape_text,
            "bytes": entry.bytes, "op_name": entry.op_name, "source": entry.source, "matches": verdict}
    return lines, data


# ------------------------------------------------------------------------------------------------ command


def _read_text(text: str) -> str:
    return sys.stdin.read() if text == "-" else text


@click.command("explain")
@click.argument("text")
@click.option("--dump", type=click.Path(), default=None,
              help="The HLO dump (file or folder) of the program, to name the parameter or kernel.")
@FORMAT_OPTION
def explain_command(text: str, dump: str | None, fmt: str) -> None:
    """Explain an XLA error: a code (E1001, E0102, E1200) or a message from a log (TEXT, or - for stdin).

    Recognises E0102 "expected parameter N of size X ... but got buffer with incompatible size Y", E1200
    host-offload output messages and E1001 scoped-Vmem OOMs. With --dump, names the parameter or kernel
    and its Python source line.
    """
    req = Request(_read_text(text), dump)
    for explainer in EXPLAINERS:
        result = explainer(req)
        if result is not None:
            click.echo(json_text(result.data, indent=2) if fmt == "json" else result.text)
            sys.exit(EXIT_CLEAN)
    fail("not a recognised XLA error code or message (known: a code such as E1001; E0102 'expected "
         "parameter ... but got buffer with incompatible size'; E1200 'moved to host ... not set to host memory'; "
         "E1001 'Scoped allocation with size ... exceeded scoped vmem limit'; E1000 'Ran out of memory on HBM'; "
         "a whole-VMEM capacity error 'Ran out of memory in memory space vmem')")


main.add_command(explain_command)
