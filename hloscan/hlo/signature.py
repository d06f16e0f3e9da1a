"""Entry signatures of HLO modules (parameters and outputs with layouts, bytes, aliasing) and their diffs."""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass
from typing import Any, Callable

from hloscan.hlo.attrs import find_top_level, parse_metadata, split_top_level, strip_comments_and_space
from hloscan.hlo.ir import UNBOUNDED, Instruction, Location, Module, Shape
from hloscan.hlo.values import hlo_int
from hloscan.hlo.layout import memory_space_name, minor_to_major, size_report, tiles_text
from hloscan.hlo.shapes import parse_shape
from hloscan.hlo.sharding import Sharding, parse_sharding, unpartitioned_devices

ShapeParser = Callable[[str], Shape]
# Hook for Python source resolution from metadata (stack frames, source_file/line); set by the metadata
# module's owner, or passed per call. It receives the module and the instruction, and may return None.
SourceResolver = Callable[[Module, Instruction], "Location | str | None"]
_source_resolver: SourceResolver | None = None


def set_source_resolver(resolver: SourceResolver | None) -> None:
    """Install the default metadata -> Python source resolver used by `module_signature`."""
    global _source_resolver
    _source_resolver = resolver


def _default_parser() -> ShapeParser:
    return parse_shape


# ---------------------------------------------------------------------------------------------------
# Raw attribute readers


def parse_computation_layout(raw: str, parse_shape: ShapeParser | None = None) -> tuple[list[Shape], Shape]:
    """`{(p0, p1)->result}` -> ([p0, p1], result). Raises ValueError when the text is not of that form."""
    parse = parse_shape or _default_parser()
    text = strip_comments_and_space(raw)
    if text.startswith("{") and text.endswith("}"):
        text = text[1:-1].strip()
    params_text, result_text = _split_arrow(text)
    params_text = params_text.strip()
    if not (params_text.startswith("(") and params_text.endswith(")")):
        raise ValueError(f"entry_computation_layout parameters are not parenthesised: {params_text[:60]!r}")
    inner = params_text[1:-1]
    items = [strip_comments_and_space(p) for p in split_top_level(inner)] if inner.strip() else []
    return [parse(p) for p in items], parse(strip_comments_and_space(result_text))


def _split_arrow(text: str) -> tuple[str, str]:
    """Split at the `->` that follows the parenthesised parameter list."""
    at = find_top_level(text, "->")
    if at is None:
        raise ValueError("entry_computation_layout has no `->`")
    return text[:at], text[at + 2:]


_INDEX = r"\{\s*([\d\s,]*)\}"
_ALIAS = re.compile(_INDEX + r"\s*:\s*\(\s*(\d+)\s*,\s*" + _INDEX + r"\s*(?:,\s*([A-Za-z-]+))?\s*\)")
_DONOR = re.compile(r"\(\s*(\d+)\s*,\s*" + _INDEX + r"\s*\)")


def _index(text: str) -> tuple[int, ...]:
    return tuple(hlo_int(x) for x in text.replace(" ", "").split(",") if x)


@dataclass(frozen=True, slots=True)
class Alias:
    """`input_output_alias` entry: output shape index <- (parameter, parameter shape index, kind)."""

    output_index: tuple[int, ...]
    parameter: int
    parameter_index: tuple[int, ...]
    kind: str = "may-alias"

    def to_json(self) -> dict[str, Any]:
        return {"output_index": list(self.output_index), "parameter": self.parameter,
                "parameter_index": list(self.parameter_index), "kind": self.kind}

    def text(self) -> str:
        """As XLA prints it: `{0}: (1, {}, may-alias)`."""
        index = lambda ix: "{" + ",".join(map(str, ix)) + "}"
        return f"{index(self.output_index)}: ({self.parameter}, {index(self.parameter_index)}, {self.kind})"


def parse_aliases(raw: str | None) -> list[Alias]:
    if not raw:
        return []
    return [Alias(_index(m.group(1)), hlo_int(m.group(2)), _index(m.group(3)), m.group(4) or "may-alias")
            for m in _ALIAS.finditer(raw)]


def parse_donors(raw: str | None) -> list[tuple[int, tuple[int, ...]]]:
    """`buffer_donor={ (0, {}), (1, {0}) }` -> [(0, ()), (1, (0,))]."""
    if not raw:
        return []
    return [(hlo_int(m.group(1)), _index(m.group(2))) for m in _DONOR.finditer(raw)]


# ---------------------------------------------------------------------------------------------------
# Signature


@dataclass(frozen=True)
class SignatureEntry:
    """One array leaf of an entry parameter or of the entry output."""

    kind: str  # "parameter" or "output"
    index: int  # parameter number, or output leaf ordinal
    shape_index: tuple[int, ...]  # within the parameter / output tuple
    name: str | None
    shape: Shape
    bytes: int
    unpadded_bytes: int
    op_name: str | None = None
    source: str | None = None
    aliases: tuple[Alias, ...] = ()
    donated: bool = False
    # Of a module not yet partitioned (num_partitions > 1, before SPMD): one device's shard, as its sharding
    # cuts the global shape. The runtime checks this size (E0102), not the global one.
    device_shape: Shape | None = None
    devices: int = 1

    @property
    def device_bytes(self) -> int:
        """The bytes of the buffer one device is passed: its shard's when the module is split, else `bytes`."""
        return self.bytes if self.device_shape is None else size_report(self.device_shape).bytes

    @property
    def shape_text(self) -> str:
        return self.shape.to_text()

    @property
    def tiling(self) -> str:
        return tiles_text(self.shape)

    @property
    def memory_space(self) -> int:
        return self.shape.memory_space

    @property
    def physical_key(self) -> tuple:
        """Everything that decides how the buffer is laid out in memory (not its name)."""
        layout = self.shape.layout
        parts = () if layout is None else (layout.tiles, layout.element_size_bits, layout.memory_space,
                                           layout.tail_padding_alignment, layout.split_configs,
                                           layout.dynamic_shape_metadata_prefix_bytes)
        order = minor_to_major(self.shape) if self.shape.is_array else ()
        return (self.shape.element_type, self.shape.dims, order, parts)

    @property
    def label(self) -> str:
        index = "{" + ",".join(map(str, self.shape_index)) + "}" if self.shape_index else ""
        where = f"parameter {self.index}{index}" if self.kind == "parameter" else f"output {index or '{}'}"
        return where + (f" ({self.name})" if self.name else "")

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "kind": self.kind, "index": self.index, "shape_index": list(self.shape_index), "name": self.name,
            "shape": self.shape_text, "tiling": self.tiling, "memory_space": self.memory_space,
            "memory_space_name": memory_space_name(self.memory_space), "bytes": self.bytes,
            "unpadded_bytes": self.unpadded_bytes, "op_name": self.op_name, "source": self.source,
            "aliases": [a.to_json() for a in self.aliases],
        }
        if self.kind == "parameter":
            out["donated"] = self.donated
        if self.device_shape is not None:
            out.update(devices=self.devices, device_shape=self.device_shape.to_text(), device_bytes=self.device_bytes)
        return out


@dataclass(frozen=True)
class Signature:
    """The entry signature of one module."""

    module: str
    parameters: tuple[SignatureEntry, ...]
    outputs: tuple[SignatureEntry, ...]
    layout_source: str  # "entry_computation_layout" or "instructions"
    warnings: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {"module": self.module, "layout_source": self.layout_source,
                "parameters": [p.to_json() for p in self.parameters],
                "outputs": [o.to_json() for o in self.outputs],
                "parameter_bytes": sum(p.bytes for p in self.parameters),
                "output_bytes": sum(o.bytes for o in self.outputs),
                "warnings": list(self.warnings)}


def _entry_shapes(module: Module, parse: ShapeParser) -> tuple[list[Shape], Shape | None, str, list[str]]:
    comp = module.entry
    raw = module.attr("entry_computation_layout")
    if raw:
        try:
            params, result = parse_computation_layout(raw, parse)
            if len(params) == len(comp.parameter_instructions) or not comp.parameter_instructions:
                return params, result, "entry_computation_layout", []
            warning = (f"entry_computation_layout lists {len(params)} parameters but the entry has "
                       f"{len(comp.parameter_instructions)}; using the instructions")
        except Exception as exc:  # noqa: BLE001 - a malformed attribute falls back to the instructions
            warning = f"could not read entry_computation_layout ({exc}); using the instructions"
    else:
        warning = None
    insts = comp.parameter_instructions
    params = [insts[i].shape for i in sorted(insts) if insts[i].shape is not None]
    return params, comp.root.shape, "instructions", [warning] if warning else []


def _op_name(inst: Instruction | None) -> str | None:
    if inst is None:
        return None
    value = parse_metadata(inst.attr("metadata")).get("op_name")
    return str(value) if value else None


def _source(module: Module, inst: Instruction | None, resolver: SourceResolver | None) -> str | None:
    if inst is None or resolver is None:
        return None
    try:
        loc = resolver(module, inst)
    except Exception:  # noqa: BLE001 - source lookup is best effort and must never break a signature
        return None
    return None if loc is None else str(loc)


def _output_instruction(module: Module, shape_index: tuple[int, ...]) -> Instruction | None:
    """The instruction producing an output leaf: follow `tuple` operands from ROOT."""
    comp = module.entry
    inst: Instruction | None = comp.root
    for i in shape_index:
        if inst is None or inst.opcode != "tuple" or i >= len(inst.operands):
            return inst
        name = inst.operands[i].name
        inst = comp.by_name.get(name) if name else None
    return inst


def entry_parameter_shapes(module: Module) -> list[Shape]:
    """The entry parameters' shapes with the layouts XLA will use: `entry_computation_layout`'s when it can be
    read (a before-optimisation dump puts host memory spaces, S(5), only there), else the instructions'."""
    return _entry_shapes(module, _default_parser())[0]


def module_signature(module: Module, parse_shape: ShapeParser | None = None,
                     resolve_source: SourceResolver | None = None) -> Signature:
    """The entry signature: one entry per array leaf of every parameter and of the output."""
    parse = parse_shape or _default_parser()
    resolver = resolve_source or _source_resolver
    params, result, source, warnings = _entry_shapes(module, parse)
    aliases = parse_aliases(module.attr("input_output_alias"))
    donors = set(parse_donors(module.attr("buffer_donor")))
    insts = module.entry.parameter_instructions
    # Indexed once: a train step has thousands of parameters and as many aliases.
    by_parameter: dict[tuple[int, tuple[int, ...]], list[Alias]] = {}
    by_output: dict[tuple[int, ...], list[Alias]] = {}
    for a in aliases:
        by_parameter.setdefault((a.parameter, a.parameter_index), []).append(a)
        by_output.setdefault(a.output_index, []).append(a)
    devices = unpartitioned_devices(module)
    entries = []
    for number, shape in enumerate(params):
        inst = insts.get(number)
        shards = _leaf_shardings(inst, devices)
        for k, (index, leaf) in enumerate(shape.leaves()):
            leaf_aliases = tuple(by_parameter.get((number, index), ()))
            entry = _entry("parameter", number, index, leaf, inst, module, resolver, leaf_aliases,
                           (number, index) in donors or (number, ()) in donors)
            entries.append(_on_device(entry, shards[k] if k < len(shards) else None, devices))
    outputs = []
    root_shards = _leaf_shardings(module.entry.root, devices)
    for ordinal, (index, leaf) in enumerate(result.leaves() if result is not None else ()):
        inst = _output_instruction(module, index)
        leaf_aliases = tuple(by_output.get(index, ()))
        entry = _entry("output", ordinal, index, leaf, inst, module, resolver, leaf_aliases, False)
        outputs.append(_on_device(entry, root_shards[ordinal] if ordinal < len(root_shards) else None, devices))
    entries, outputs = _with_donations(entries, outputs)
    return Signature(module.name, tuple(entries), tuple(outputs), source, tuple(warnings))


def _with_donations(params: list[SignatureEntry], outputs: list[SignatureEntry]
                    ) -> tuple[list[SignatureEntry], list[SignatureEntry]]:
    """The aliases XLA will make of `buffer_donor` parameters (jax's donate_argnums under shard_map, or
    donation it leaves to the compiler). Its OptimizeInputOutputBufferAlias pass pairs, per memory space,
    donated leaves with outputs of the same buffer size: both sorted by size, largest first (stable), matched
    two at a time. Without this a donated update counted its outputs as new buffers beside the arguments."""
    added: list[Alias] = []
    for space in sorted({p.memory_space for p in params if p.donated}):
        donors = sorted((p for p in params if p.donated and not p.aliases and p.memory_space == space),
                        key=lambda p: -p.device_bytes)
        donees = sorted((o for o in outputs if not o.aliases and o.memory_space == space),
                        key=lambda o: -o.device_bytes)
        i = j = 0
        while i < len(donors) and j < len(donees):
            have, want = donors[i].device_bytes, donees[j].device_bytes
            if have == want:
                added.append(Alias(donees[j].shape_index, donors[i].index, donors[i].shape_index))
            i += have >= want
            j += have <= want
    if not added:
        return params, outputs
    by_parameter = {(a.parameter, a.parameter_index): a for a in added}
    by_output = {a.output_index: a for a in added}
    params = [dataclasses.replace(p, aliases=p.aliases + (by_parameter[(p.index, p.shape_index)],))
              if (p.index, p.shape_index) in by_parameter else p for p in params]
    outputs = [dataclasses.replace(o, aliases=o.aliases + (by_output[o.shape_index],))
               if o.shape_index in by_output else o for o in outputs]
    return params, outputs


def entry_aliases(module: Module) -> list[Alias]:
    """Every output buffer that will alias a parameter: `input_output_alias`, and the donated parameters
    XLA will pair with outputs (`buffer_donor`)."""
    explicit = parse_aliases(module.attr("input_output_alias"))
    if not module.attr("buffer_donor"):
        return explicit
    return sorted({a for o in module_signature(module).outputs for a in o.aliases} | set(explicit),
                  key=lambda a: (a.output_index, a.parameter))


def _leaf_shardings(inst: Instruction | None, devices: int) -> list[Sharding]:
    """The sharding of each array leaf of an instruction (empty when unsharded or on one device)."""
    if devices <= 1 or inst is None:
        return []
    return parse_sharding(inst.attr("sharding")) or []


def _on_device(entry: SignatureEntry, sharding: Sharding | None, devices: int) -> SignatureEntry:
    if sharding is None or sharding.kind != "tiled" or not entry.shape.is_array or sharding.shards <= 1:
        return entry
    local = Shape(entry.shape.element_type, sharding.local_dims(entry.shape.dims), entry.shape.dynamic,
                  entry.shape.layout)
    return dataclasses.replace(entry, device_shape=local, devices=devices)


def _entry(kind: str, number: int, index: tuple[int, ...], leaf: Shape, inst: Instruction | None,
           module: Module, resolver: SourceResolver | None, aliases: tuple[Alias, ...],
           donated: bool) -> SignatureEntry:
    report = size_report(leaf)
    return SignatureEntry(kind, number, index, inst.name if inst is not None else None, leaf, report.bytes,
                          report.unpadded_bytes, _op_name(inst), _source(module, inst, resolver), aliases,
                          donated)


# ---------------------------------------------------------------------------------------------------
# Diff


@dataclass(frozen=True)
class Change:
    field: str  # shape | dimension order | tiling | memory space | bytes | aliasing | donation | index
    old: Any
    new: Any

    def to_json(self) -> dict[str, Any]:
        return {"field": self.field, "old": self.old, "new": self.new}


@dataclass(frozen=True)
class EntryDiff:
    """A matched pair of signature entries and what changed between them."""

    old: SignatureEntry
    new: SignatureEntry
    matched_by: str  # "index" or "name"
    changes: tuple[Change, ...]

    @property
    def physical_layout_differs(self) -> bool:
        return self.old.physical_key != self.new.physical_key

    @property
    def size_differs(self) -> bool:
        """The runtime would reject the old buffer with E0102 (it checks one device's byte sizes)."""
        return self.old.device_bytes != self.new.device_bytes

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.old.kind, "old_index": self.old.index, "new_index": self.new.index,
                "shape_index": list(self.new.shape_index), "name": self.new.name or self.old.name,
                "matched_by": self.matched_by, "old_shape": self.old.shape_text,
                "new_shape": self.new.shape_text, "old_bytes": self.old.bytes, "new_bytes": self.new.bytes,
                "physical_layout_differs": self.physical_layout_differs, "size_differs": self.size_differs,
                "changes": [c.to_json() for c in self.changes]}


@dataclass(frozen=True)
class SignatureDiff:
    """Differences between two entry signatures (old -> new)."""

    old_module: str
    new_module: str
    parameters: tuple[EntryDiff, ...]  # every matched pair, changed or not
    outputs: tuple[EntryDiff, ...]
    removed: tuple[SignatureEntry, ...] = ()
    added: tuple[SignatureEntry, ...] = ()
    warnings: tuple[str, ...] = ()

    @property
    def changed_parameters(self) -> list[EntryDiff]:
        return [d for d in self.parameters if d.changes]

    @property
    def layout_changes(self) -> list[EntryDiff]:
        """Parameters whose physical layout differs: buffers laid out for `old` do not fit `new`."""
        return [d for d in self.parameters if d.physical_layout_differs]

    @property
    def e0102_risks(self) -> list[EntryDiff]:
        """Parameters whose byte size differs: the runtime rejects old buffers with E0102."""
        return [d for d in self.parameters if d.size_differs]

    @property
    def changed_outputs(self) -> list[EntryDiff]:
        return [d for d in self.outputs if d.changes]

    @property
    def is_empty(self) -> bool:
        return not (self.changed_parameters or self.changed_outputs or self.removed or self.added)

    def to_json(self) -> dict[str, Any]:
        return {"old_module": self.old_module, "new_module": self.new_module,
                "layout_changes": [d.to_json() for d in self.layout_changes],
                "e0102_risks": [d.to_json() for d in self.e0102_risks],
                "parameters": [d.to_json() for d in self.changed_parameters],
                "outputs": [d.to_json() for d in self.changed_outputs],
                "removed": [e.to_json() for e in self.removed], "added": [e.to_json() for e in self.added],
                "warnings": list(self.warnings)}


def _changes(old: SignatureEntry, new: SignatureEntry) -> list[Change]:
    out = []
    if old.index != new.index:
        out.append(Change("index", old.index, new.index))
    if (old.shape.element_type, old.shape.dims) != (new.shape.element_type, new.shape.dims):
        out.append(Change("shape", old.shape.to_text(with_layout=False), new.shape.to_text(with_layout=False)))
    elif old.shape.is_array and minor_to_major(old.shape) != minor_to_major(new.shape):
        out.append(Change("dimension order", _m2m(old.shape), _m2m(new.shape)))
    if old.tiling != new.tiling:
        out.append(Change("tiling", old.tiling or "untiled", new.tiling or "untiled"))
    if old.memory_space != new.memory_space:
        out.append(Change("memory space", old.memory_space, new.memory_space))
    if old.physical_key[3][3:] != new.physical_key[3][3:] and old.shape.layout and new.shape.layout:
        out.append(Change("other layout attributes", old.shape.layout.to_text(), new.shape.layout.to_text()))
    if old.bytes != new.bytes:
        out.append(Change("bytes", old.bytes, new.bytes))
    if _alias_key(old) != _alias_key(new):
        out.append(Change("aliasing", "; ".join(a.text() for a in old.aliases) or "none",
                          "; ".join(a.text() for a in new.aliases) or "none"))
    if old.donated != new.donated:
        out.append(Change("donation", old.donated, new.donated))
    return out


def _m2m(shape: Shape) -> str:
    return "{" + ",".join(map(str, minor_to_major(shape))) + "}"


def _alias_key(entry: SignatureEntry) -> tuple:
    # Output aliases are keyed by the parameter they reuse; parameter aliases by the output they feed.
    if entry.kind == "output":
        return tuple(sorted((a.parameter, a.parameter_index, a.kind) for a in entry.aliases))
    return tuple(sorted((a.output_index, a.kind) for a in entry.aliases))


def _identity(entry: SignatureEntry) -> str | None:
    """What names a parameter across compiles: its op_name (jax argument path), else its name sans `.N`."""
    if entry.op_name:
        return "op:" + entry.op_name
    if entry.name:
        return "name:" + re.sub(r"\.\d+$", "", entry.name)
    return None


def _unique(entries: list[SignatureEntry]) -> dict[tuple, SignatureEntry]:
    seen: dict[tuple, list[SignatureEntry]] = {}
    for e in entries:
        ident = _identity(e)
        if ident is not None:
            seen.setdefault((ident, e.shape_index), []).append(e)
    return {k: v[0] for k, v in seen.items() if len(v) == 1}


def _match(old: list[SignatureEntry], new: list[SignatureEntry], by_name: bool) -> tuple[
        list[tuple[SignatureEntry, SignatureEntry, str]], list[SignatureEntry], list[SignatureEntry]]:
    """Pair entries: same index and no conflicting identity, then by identity (reordered), then by index."""
    new_at = {(e.index, e.shape_index): e for e in new}
    pairs, used_old, used_new = [], set(), set()
    for e in old:
        other = new_at.get((e.index, e.shape_index))
        if other is not None and (not by_name or None in (_identity(e), _identity(other))
                                  or _identity(e) == _identity(other)):
            pairs.append((e, other, "index"))
            used_old.add(id(e))
            used_new.add(id(other))
    if by_name:
        old_ids = _unique([e for e in old if id(e) not in used_old])
        new_ids = _unique([e for e in new if id(e) not in used_new])
        for key, e in old_ids.items():
            if key in new_ids:
                pairs.append((e, new_ids[key], "name"))
                used_old.add(id(e))
                used_new.add(id(new_ids[key]))
    for e in old:
        other = new_at.get((e.index, e.shape_index))
        if id(e) not in used_old and other is not None and id(other) not in used_new:
            pairs.append((e, other, "index"))
            used_old.add(id(e))
            used_new.add(id(other))
    pairs.sort(key=lambda p: (p[1].index, p[1].shape_index))
    return (pairs, [e for e in old if id(e) not in used_old], [e for e in new if id(e) not in used_new])


def diff_signatures(old: Signature, new: Signature) -> SignatureDiff:
    """Compare parameters (matched by index, or by op_name/name when reordered) and outputs (by index)."""
    p_pairs, p_removed, p_added = _match(list(old.parameters), list(new.parameters), by_name=True)
    o_pairs, o_removed, o_added = _match(list(old.outputs), list(new.outputs), by_name=False)
    params = tuple(EntryDiff(a, b, how, tuple(_changes(a, b))) for a, b, how in p_pairs)
    outputs = tuple(EntryDiff(a, b, how, tuple(_changes(a, b))) for a, b, how in o_pairs)
    return SignatureDiff(old.module, new.module, params, outputs, tuple(p_removed + o_removed),
                         tuple(p_added + o_added), _tiling_warnings(old, new))


def _tiling_warnings(old: Signature, new: Signature) -> tuple[str, ...]:
    """Comparing a pre-optimisation dump (no tiles) with a compiled one flags every parameter: say why."""
    def tiled(sig: Signature) -> bool:
        return any(e.tiling for e in sig.parameters + sig.outputs)

    if tiled(old) != tiled(new):
        untiled = "old" if tiled(new) else "new"
        return (f"the {untiled} signature has no tiled layouts (a before_optimizations dump?): its sizes are "
                "logical, so tiling and byte differences against the other side are expected",)
    return ()


# ---------------------------------------------------------------------------------------------------
# Text rendering (the CLI may use its own)


def render_signature(sig: Signature) -> str:
    lines = [f"module {sig.module} (layouts from {sig.layout_source})"]
    for title, entries in (("parameters", sig.parameters), ("outputs", sig.outputs)):
        lines.append(f"{title}:")
        for e in entries:
            extra = []
            if e.memory_space:
                extra.append(f"S({e.memory_space}) {memory_space_name(e.memory_space)}")
            extra += [f"aliases output {{{','.join(map(str, a.output_index))}}} ({a.kind})" if e.kind == "parameter"
                      else f"aliases parameter {a.parameter} ({a.kind})" for a in e.aliases]
            if e.donated:
                extra.append("donated")
            if e.op_name:
                extra.append(f"op_name={e.op_name}")
            if e.source:
                extra.append(e.source)
            if e.device_shape is not None:
                extra.insert(0, f"per device: {e.device_shape.to_text()} {e.device_bytes} bytes "
                                f"({e.devices} devices)")
            size = "? bytes (unbounded dimension)" if UNBOUNDED in e.shape.dims else f"{e.bytes} bytes"
            lines.append(f"  {e.label}: {e.shape_text}  {size}" + ("  " + "; ".join(extra) if extra else ""))
    lines += [f"warning: {w}" for w in sig.warnings]
    return "\n".join(lines)


def render_diff(diff: SignatureDiff) -> str:
    lines = [f"signature diff {diff.old_module} -> {diff.new_module}"]
    if diff.is_empty:
        return lines[0] + ": identical"
    for d in diff.changed_parameters + diff.changed_outputs:
        what = "; ".join(f"{c.field}: {c.old} -> {c.new}" for c in d.changes)
        flag = "  [E0102: size differs]" if d.old.kind == "parameter" and d.size_differs else ""
        lines.append(f"  {d.new.label}{' (moved from ' + str(d.old.index) + ')' if d.old.index != d.new.index else ''}"
                     f": {d.old.shape_text} ({d.old.bytes} B) -> {d.new.shape_text} ({d.new.bytes} B); {what}{flag}")
    lines += [f"  removed {e.label}: {e.shape_text}" for e in diff.removed]
    lines += [f"  added {e.label}: {e.shape_text}" for e in diff.added]
    lines += [f"warning: {w}" for w in diff.warnings]
    risks = diff.e0102_risks
    if risks:
        lines.append(f"{len(risks)} parameter(s) would fail with E0102 when passed buffers laid out for the old "
                     "program: " + ", ".join(f"{d.new.index} ({d.old.bytes} -> {d.new.bytes} bytes)" for d in risks))
    return "\n".join(lines)

__all__ = ["Alias", "Change", "EntryDiff", "Signature", "SignatureDiff", "SignatureEntry", "diff_signatures",
           "entry_aliases", "module_signature", "parse_aliases", "parse_computation_layout", "parse_donors", "render_diff",
           "render_signature", "set_source_resolver"]
