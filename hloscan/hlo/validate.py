"""Semantic checks XLA's HLO parser performs beyond the grammar, raised as HLO001 syntax errors."""

from __future__ import annotations

import math
import re
from typing import Iterable

from hloscan.hlo.attrs import CALL_ATTRS, parse_int_list, parse_name_list, split_top_level, unquote
from hloscan.hlo.ir import Computation, Instruction, Module, Shape, resolve_operand_shape
from hloscan.hlo.values import ShapeError, hlo_int
from hloscan.hlo.errors import HloSyntaxError
from hloscan.hlo.nesting import check_nesting
from hloscan.hlo.shapes import parse_shape
from hloscan.hlo.signature import parse_aliases, parse_computation_layout, parse_donors

# §7.1: every opcode XLA knows, in its text spelling.
KNOWN_OPCODES = frozenset("""
abs acos acosh add add-dependency after-all all-gather all-gather-done all-gather-start
all-reduce all-reduce-done all-reduce-start all-to-all and asin asinh async-done async-start
async-update atan2 atanh batch-norm-grad batch-norm-inference batch-norm-training bitcast
bitcast-convert broadcast call cbrt ceil cholesky clamp collective-broadcast collective-permute
collective-permute-done collective-permute-start compare complex concatenate conditional
constant convert convolution copy copy-done copy-start cosh cosine count-leading-zeros
custom-call divide domain dot dynamic-reshape dynamic-slice dynamic-update-slice erf
exponential exponential-minus-one fft floor fusion gather get-dimension-size
get-tuple-element imag infeed iota is-finite log log-plus-one logistic map maximum minimum
mulhi multiply negate not opt-barrier or outfeed pad parameter partition-id popcnt power
ragged-all-to-all ragged-dot real recv recv-done reduce reduce-precision reduce-scatter
reduce-window remainder replica-id reshape reverse rng rng-bit-generator
rng-get-and-update-state round-nearest-afz round-nearest-even rsqrt scaled-dot scan scatter
select select-and-scatter send send-done set-dimension-size shift-left
shift-right-arithmetic shift-right-logical sign sine sinh slice sort sqrt stochastic-convert
subtract tan tanh topk transpose triangular-solve tuple while xor
""".split())

# §7.2: these have native async opcodes, so XLA refuses the `-start/-update/-done` sugar for them.
NO_ASYNC_SUGAR = frozenset({"all-gather", "all-reduce", "collective-permute", "copy", "send", "recv"})
ASYNC_SUFFIXES = ("-start", "-update", "-done")

TRANSCENDENTAL = frozenset("""exponential log tanh sine cosine tan sqrt rsqrt cbrt erf logistic
exponential-minus-one log-plus-one acos acosh asin asinh atanh sinh cosh""".split())

# §4.1: attributes every instruction takes (result_accuracy is restricted below).
COMMON_ATTRS = frozenset({"sharding", "frontend_attributes", "statistics", "parameter_replication",
                          "control-predecessors", "origin", "metadata", "backend_config"})

_COLLECTIVE = {"replica_groups", "channel_id", "constrain_layout", "use_global_device_ids"}
_DOT = {"lhs_contracting_dims", "rhs_contracting_dims", "lhs_batch_dims", "rhs_batch_dims",
        "operand_precision", "algorithm"}
_ASYNC = {"calls", "async_execution_thread", "output_to_operand_aliasing"}

# §4.2: opcode -> (allowed specific attributes, required attributes). Opcodes absent here (and
# custom-call) are not checked for unexpected attributes, so newer XLA attributes stay accepted.
OPCODE_ATTRS: dict[str, tuple[set[str], set[str]]] = {
    "parameter": (set(), set()),
    "constant": (set(), set()),
    "iota": ({"iota_dimension"}, {"iota_dimension"}),
    "topk": ({"k", "largest", "is_stable"}, {"k"}),
    "all-gather": (_COLLECTIVE | {"dimensions"}, {"dimensions"}),
    "all-gather-start": (_COLLECTIVE | {"dimensions"}, {"dimensions"}),
    "all-reduce": (_COLLECTIVE | {"to_apply", "mode"}, {"to_apply"}),
    "all-reduce-start": (_COLLECTIVE | {"to_apply", "mode"}, {"to_apply"}),
    "reduce-scatter": (_COLLECTIVE | {"to_apply", "mode", "dimensions"}, {"to_apply", "dimensions"}),
    "get-tuple-element": ({"index"}, {"index"}),
    "call": ({"to_apply", "is_composite"}, {"to_apply"}),
    "while": ({"condition", "body"}, {"condition", "body"}),
    "sort": ({"dimensions", "is_stable", "to_apply"}, {"dimensions", "to_apply"}),
    "reduce": ({"dimensions", "to_apply"}, {"dimensions", "to_apply"}),
    "map": ({"to_apply", "dimensions"}, {"to_apply"}),
    "scan": ({"to_apply", "dimensions", "num_carries", "is_reverse", "is_associative"},
             {"to_apply", "dimensions", "num_carries"}),
    "reduce-window": ({"window", "to_apply"}, {"to_apply"}),
    "select-and-scatter": ({"select", "scatter", "window"}, {"select", "scatter"}),
    "get-dimension-size": ({"dimensions"}, {"dimensions"}),
    "set-dimension-size": ({"dimensions"}, {"dimensions"}),
    "concatenate": ({"dimensions"}, {"dimensions"}),
    "reverse": ({"dimensions"}, {"dimensions"}),
    "transpose": ({"dimensions"}, {"dimensions"}),
    "fusion": ({"kind", "calls", "output_to_operand_aliasing"}, {"kind", "calls"}),
    "rng-bit-generator": ({"algorithm"}, {"algorithm"}),
    "send": ({"channel_id", "is_host_transfer"}, set()),
    "recv": ({"channel_id", "is_host_transfer"}, set()),
    "send-done": ({"channel_id", "is_host_transfer"}, set()),
    "recv-done": ({"channel_id", "is_host_transfer"}, set()),
    "bitcast-convert": (set(), set()),
    "dot": (set(_DOT), set()),
    "async-start": (set(_ASYNC), {"calls"}),
    "async-update": (set(_ASYNC), set()),
    "async-done": (set(_ASYNC), set()),
    "compare": ({"direction", "type"}, {"direction"}),
}
for _op in ("add", "subtract", "multiply", "divide", "maximum", "minimum", "tuple", "after-all", "copy",
            "bitcast", "replica-id", "partition-id", "add-dependency", "convert", "negate", "abs", "select"):
    OPCODE_ATTRS.setdefault(_op, (set(), set()))

# Attribute names that only some opcodes take: seeing one of them on another (checked) opcode is an
# "unexpected attribute" in XLA. Names outside this set are let through (lenient for new attributes).
KNOWN_SPECIFIC_ATTRS = frozenset(set().union(*(a for a, _ in OPCODE_ATTRS.values()))
                                 | {"result_accuracy", "true_computation", "false_computation",
                                    "branch_computations"})

# Minimum operand counts XLA's parser enforces for opcodes seen with none.
MIN_OPERANDS = {"conditional": 1, "reduce-window": 2, "rng-bit-generator": 1, "dynamic-reshape": 1,
                "async-update": 1, "async-done": 1, "get-tuple-element": 1, "reshape": 1,
                "scatter": 3, "dynamic-update-slice": 2}


API_VERSIONS = frozenset({"API_VERSION_ORIGINAL", "API_VERSION_STATUS_RETURNING",
                          "API_VERSION_STATUS_RETURNING_UNIFIED", "API_VERSION_TYPED_FFI"})
LOG_MODES = frozenset({"default", "fusion_debugger"})

# Floating types: (largest finite value, mantissa bits). A finite literal that rounds to infinity is
# out of range: XLA rejects it instead of storing inf.
FLOAT_LIMITS = {
    "f16": (65504.0, 10), "bf16": ((2 - 2 ** -7) * 2.0 ** 127, 7), "f32": ((2 - 2 ** -23) * 2.0 ** 127, 23),
    "f64": (1.7976931348623157e308, 52), "c64": ((2 - 2 ** -23) * 2.0 ** 127, 23), "c128": (1.7976931348623157e308, 52),
}
# Mantissa bits for NaN payloads; `fn`/`fnuz` types have a single NaN encoding and take no payload.
NAN_MANTISSA = {"f16": 10, "bf16": 7, "f32": 23, "f64": 52, "c64": 23, "c128": 52, "f8e5m2": 2, "f8e4m3": 3,
                "f8e3m4": 4}


class _Reject(Exception):
    """Internal: a check failed at (line, col) of the module text."""

    def __init__(self, message: str, line: int, col: int):
        super().__init__(message)
        self.message, self.line, self.col = message, line, col


def validate_module(module: Module, text: str, path: str | None, thorough: bool, line_offset: int = 0) -> None:
    """Raise HloSyntaxError for the first parser-level semantic error XLA would report.

    Cheap structural checks always run; checks that parse attribute values run when `thorough`.
    """
    try:
        try:
            _check_module(module, thorough)
        except ValueError as exc:  # an integer no 64-bit field holds (int() refuses > 4300 digits too)
            raise _huge_integer(text, line_offset, exc) from None
        except RecursionError:  # a shape nested hundreds deep in an attribute (the fast path skips check_nesting)
            check_nesting(text, path, line_offset)  # raises at the first bracket too deep
            raise _Reject("nesting too deep to parse", module.line, 1) from None
    except _Reject as exc:
        lines = text.split("\n")
        index = exc.line - line_offset - 1
        source = lines[index] if 0 <= index < len(lines) else ""
        raise HloSyntaxError(exc.message, max(exc.line, 1), max(exc.col, 1), source, path) from None


_LONG_NUMBER = re.compile(r"\d{20,}")


def _huge_integer(text: str, line_offset: int, exc: ValueError) -> _Reject:
    m = _LONG_NUMBER.search(text)
    if m is None:
        return _Reject(f"invalid value: {exc}", 1 + line_offset, 1)
    line = text.count("\n", 0, m.start()) + 1
    col = m.start() - (text.rfind("\n", 0, m.start()) + 1) + 1
    return _Reject("integer out of range (XLA reads 64-bit integers)", line + line_offset, col)


def _check_entry_layout(module: Module) -> None:
    """The header's entry_computation_layout must hold valid shapes (layouts are permutations, tiles > 0)."""
    raw = module.attr("entry_computation_layout")
    if not raw:
        return
    try:
        parse_computation_layout(raw)
    except (HloSyntaxError, ValueError) as exc:
        message = exc.message if isinstance(exc, HloSyntaxError) else str(exc)
        raise _Reject(f"entry_computation_layout: {message}", module.line, 1) from None


def _check_header_aliases(module: Module) -> None:
    """The header's input_output_alias and buffer_donor name parameters by int64 numbers (hlo_int raises
    for wider ones; validate_module positions the number)."""
    for alias in parse_aliases(module.attr("input_output_alias")):
        if alias.kind not in ("may-alias", "must-alias"):
            raise _Reject(f"input_output_alias: unknown alias kind '{alias.kind}' (may-alias or must-alias)",
                          module.line, 1)
    parse_donors(module.attr("buffer_donor"))


def _at(node: Instruction | Computation, message: str) -> _Reject:
    return _Reject(message, node.line, node.col)


def _check_module(module: Module, thorough: bool) -> None:
    single = not module.has_header and module.name == "single_instruction"
    _check_entry_layout(module)
    _check_header_aliases(module)
    seen: dict[str, Computation] = {}
    entries = 0
    for comp in module.computations:
        if comp.name in seen and comp.name:
            raise _at(comp, f"computation {comp.name} is defined twice (previously at line {seen[comp.name].line})")
        entries += comp.is_entry
        if entries > 1:
            raise _at(comp, "expects only one ENTRY computation")
        _check_computation(comp, single)
        if thorough:
            _Thorough(module, comp, seen, single).run()
        seen[comp.name] = comp
    if thorough:
        _check_debug_attributes(module)


def _check_computation(comp: Computation, single: bool) -> None:
    """Names, roots, parameter numbers and operand references: plain dict work, fast on big dumps.

    This loop runs over every instruction and operand of a 50 MB dump, so the common cases stay inline.
    """
    defined: dict[str, Instruction] = {}
    params: set[int] = set()
    roots = 0
    known, min_operands = KNOWN_OPCODES, MIN_OPERANDS
    for inst in comp.instructions:
        if single:
            _check_single(inst)
        else:
            for op in inst.operands:
                target = defined.get(op.name)  # type: ignore[arg-type]
                if target is None or op.tuple_index or (op.shape is not None and op.shape is not target.shape):
                    if op.name is not None:
                        _check_operand(inst, op, defined)
            attrs_text = inst.attrs_text
            if attrs_text and "control-predecessors" in attrs_text:
                _check_predecessors(inst, defined)
            if attrs_text and "output_to_operand_aliasing" in attrs_text:
                _check_operand_aliasing(inst)
        name = inst.name
        if name in defined:
            raise _at(inst, f"instruction %{name} is defined twice")
        defined[name] = inst
        if inst.is_root:
            roots += 1
            if roots > 1:
                raise _at(inst, "one computation should have only one ROOT")
        opcode = inst.opcode
        if opcode == "parameter":
            _check_parameter_number(inst, params)
        elif opcode not in known:
            _check_opcode(inst)
        elif opcode in min_operands:
            _check_operand_count(inst)
            if opcode == "get-tuple-element":
                _check_tuple_index(inst, defined)


def _check_tuple_index(inst: Instruction, defined: dict[str, Instruction]) -> None:
    """A get-tuple-element's `index=` is a tuple index: an integer within the operand's elements (XLA's
    parser reads an int64 and shape inference bounds it). The fast path keeps attributes as text, so a
    malformed one would otherwise reach the analyses (found by fuzzing: `index=1e99999`, `index="0"`)."""
    raw = inst.attr("index")
    if raw is None:
        return  # reported as a missing attribute by the thorough checks
    if not (raw.isascii() and raw.isdigit()) or len(raw) > 19:
        raise _at(inst, f"expects integer for attribute index, found '{raw[:24]}'")
    op = inst.operands[0]
    shape = resolve_operand_shape(op, defined)
    if shape is not None and shape.is_tuple and int(raw) >= len(shape.tuple_shapes):
        raise _at(inst, f"tuple index {raw} out of bounds for %{op.name} ({len(shape.tuple_shapes)} elements)")


def _check_operand_aliasing(inst: Instruction) -> None:
    """`output_to_operand_aliasing` names operands by int64 numbers, as input_output_alias names parameters
    (parse_aliases raises for wider ones; validate_module positions the number). Found by fuzzing: a 5000-digit
    operand number reached the HBM checks."""
    parse_aliases(inst.attr("output_to_operand_aliasing"))


def _check_predecessors(inst: Instruction, defined: dict[str, Instruction]) -> None:
    for name in parse_name_list(inst.attr("control-predecessors")):
        if name not in defined:
            raise _at(inst, f"control predecessor '{name}' of %{inst.name} is not defined")


def _check_single(inst: Instruction) -> None:
    """Single-instruction input: operands become parameters, so each needs a shape and a name."""
    if not inst.name and inst.shape is None:  # canonical form drops the name but keeps the shape
        raise _at(inst, "expects '=' in instruction (a name and a shape before the opcode)")
    for op in inst.operands:
        if op.name is not None and op.shape is None:
            raise _at(inst, f"Operand had no shape in HLO text: %{op.name}")


def _check_operand(inst: Instruction, op, defined: dict[str, Instruction]) -> None:
    target = defined.get(op.name)
    if target is None:
        raise _at(inst, f"instruction does not exist: {op.name} (operands must be defined earlier)")
    shape = target.shape
    for i in op.tuple_index:
        if shape is None:
            return
        if not shape.is_tuple:
            raise _at(inst, f"GTE operand must be tuple: %{op.name}")
        if not 0 <= i < len(shape.tuple_shapes):
            raise _at(inst, f"GTE index {i} out of bounds for %{op.name}")
        shape = shape.tuple_shapes[i]
    if op.shape is not None and shape is not None and op.shape is not shape and not _compatible(op.shape, shape):
        raise _at(inst, f"The declared operand shape {op.shape} is not compatible with the shape of the "
                        f"operand instruction {shape}")


def _compatible(a: Shape, b: Shape) -> bool:
    """Same element type and dims (layouts are ignored), recursively for tuples."""
    if a.element_type != b.element_type or a.dims != b.dims:
        return False
    if len(a.tuple_shapes) != len(b.tuple_shapes):
        return False
    return all(_compatible(x, y) for x, y in zip(a.tuple_shapes, b.tuple_shapes))


def _check_parameter_number(inst: Instruction, params: set[int]) -> None:
    try:
        number = int(inst.literal)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return
    if number < 0:
        raise _at(inst, "parameter number must be >= 0")
    if number in params:
        raise _at(inst, f"Duplicate parameter number {number}")
    params.add(number)


def _check_debug_attributes(module: Module) -> None:
    raw = module.attr("debug_attributes")
    if raw:
        for mode in re.findall(r"log_mode=([A-Za-z_0-9]+)", raw):
            if mode not in LOG_MODES:
                raise _Reject(f"Invalid debug_log_mode value: {mode}", module.line, 1)


class _Thorough:
    """Checks that read attribute values and literals (strict mode only)."""

    def __init__(self, module: Module, comp: Computation, earlier: dict[str, Computation], single: bool):
        self.module, self.comp, self.earlier, self.single = module, comp, earlier, single
        self.defined: dict[str, Instruction] = {}

    def run(self) -> None:
        for inst in self.comp.instructions:
            self.instruction(inst)
            self.defined[inst.name] = inst
        self.signature()

    def operand_shape(self, inst: Instruction, i: int) -> Shape | None:
        if i >= len(inst.operands):
            return None
        return resolve_operand_shape(inst.operands[i], self.defined)  # only names defined so far

    def instruction(self, inst: Instruction) -> None:
        _check_opcode(inst)
        _check_operand_count(inst)
        names = [k for k, _ in inst.attrs]
        _check_attr_names(inst, names)
        present = set(names)
        self.called(inst, present)
        if inst.shape is not None:
            _check_shape_layouts(inst, inst.shape)
        opcode = inst.opcode
        if opcode == "constant" and inst.literal is not None and inst.shape is not None:
            _check_literal(inst, inst.shape, inst.literal)
        # Each check returns at once unless its opcode or attribute is there: asking first skips the calls (and
        # their searches of a long attribute text) on the common instruction. Same checks, same order.
        for check, opcodes, attribute in _INSTRUCTION_CHECKS:
            if (opcodes is None or opcode in opcodes) and (attribute is None or attribute in present):
                check(self, inst)

    def called(self, inst: Instruction, present: set[str]) -> None:
        for key in CALL_ATTRS:
            if key not in present:
                continue
            raw = inst.attr(key)
            for name in parse_name_list(raw):
                if name not in self.earlier and not self.single:
                    raise _at(inst, f"computation {name} (in {key}=) is not defined before %{inst.name}")

    def signature(self) -> None:
        comp = self.comp
        if comp.result is None or not comp.instructions:
            return
        root = comp.root
        if root.shape is not None and not _compatible(comp.result, root.shape):
            raise _at(root, f"Shape of computation {comp.name}, {comp.result.to_text(False)}, is not compatible "
                            f"with that of its root instruction {root.name}, {root.shape.to_text(False)}")


def _check_opcode(inst: Instruction) -> None:
    op = inst.opcode
    if op in KNOWN_OPCODES:
        return
    for suffix in ASYNC_SUFFIXES:
        if op.endswith(suffix):
            base = op[: -len(suffix)]
            if base in KNOWN_OPCODES and base not in NO_ASYNC_SUGAR:
                return
    raise _at(inst, f"Unknown opcode: {op}")


def _async_base(opcode: str) -> tuple[str, str] | None:
    """(wrapped opcode, stage) for async ops; wrapped is '' for the explicit async-* form."""
    for suffix in ASYNC_SUFFIXES:
        if opcode.endswith(suffix):
            base = opcode[: -len(suffix)]
            if base == "async":
                return "", suffix[1:]
            if base in KNOWN_OPCODES and base not in NO_ASYNC_SUGAR and opcode not in KNOWN_OPCODES:
                return base, suffix[1:]
    return None


def _check_operand_count(inst: Instruction) -> None:
    need = MIN_OPERANDS.get(inst.opcode)
    async_op = _async_base(inst.opcode)
    if async_op and async_op[1] != "start":
        need = 1
    if need and len(inst.operands) < need:
        if async_op:
            raise _at(inst, "No operand found for AsyncUpdate and AsyncDone")
        raise _at(inst, f"{inst.opcode} expects at least {need} operand(s), got {len(inst.operands)}")


def _check_attr_names(inst: Instruction, names: list[str]) -> None:
    op = inst.opcode
    if len(set(names)) != len(names):
        dup = next(n for n in names if names.count(n) > 1)
        raise _at(inst, f"attribute {dup} is given more than once")
    if "result_accuracy" in names and op not in TRANSCENDENTAL:
        raise _at(inst, 'unexpected attribute "result_accuracy"')
    async_op = _async_base(op)
    if async_op and async_op[0]:
        if async_op[1] != "start":  # sugared update/done carry only the async attributes
            _unexpected(inst, names, _ASYNC)
        return
    entry = OPCODE_ATTRS.get(op)
    if entry is None:
        return
    allowed, required = entry
    _unexpected(inst, names, allowed)
    for name in sorted(required - set(names)):
        raise _at(inst, f"attribute {name} is expected but not seen")


def _unexpected(inst: Instruction, names: Iterable[str], allowed: set[str]) -> None:
    for name in names:
        # result_accuracy is checked on its own (it depends on the opcode family, not this table).
        if name in KNOWN_SPECIFIC_ATTRS and name not in allowed and name not in COMMON_ATTRS \
                and name != "result_accuracy":
            raise _at(inst, f'unexpected attribute "{name}"')


def _check_shape_layouts(inst: Instruction, shape: Shape) -> None:
    for _, leaf in shape.leaves():
        layout = leaf.layout
        if layout is not None and layout.physical_shape is not None and layout.dim_level_types is None:
            raise _at(inst, "Layout has physical shape, but is not for a sparse array")


# ---------------------------------------------------------------------------------------- literals

_COMMENT = re.compile(r"/\*.*?\*/", re.S)
_LIT_TOKEN = re.compile(r"\s*(?:(\{)|(\})|(,)|(\([^()]*\))|([^\s{},()]+(?:\([^()]*\))?))")


def _literal_tree(text: str) -> object:
    """Nested lists of scalar token strings; None when the text is not a plain array literal."""
    stack: list[list] = [[]]
    pos = 0
    while pos < len(text):
        m = _LIT_TOKEN.match(text, pos)
        if m is None or m.end() == pos:
            if text[pos:].strip() == "":
                break
            return None
        pos = m.end()
        if m.group(1):
            stack.append([])
        elif m.group(2):
            if len(stack) < 2:
                return None
            done = stack.pop()
            stack[-1].append(done)
        elif m.group(4) or m.group(5):
            stack[-1].append(m.group(4) or m.group(5))
    if len(stack) != 1 or len(stack[0]) != 1:
        return None
    return stack[0][0]


def _check_literal(inst: Instruction, shape: Shape, literal: str) -> None:
    if not shape.is_array or "..." in literal or len(literal) > 100_000:
        return
    tree = _literal_tree(_COMMENT.sub(" ", literal) if "/*" in literal else literal)
    if tree is None:
        return
    rank = len(shape.dims)
    if rank == 0:
        if isinstance(tree, list):
            return  # XLA's own handling of braced scalars varies; leave it
        _check_scalar(inst, shape.element_type, tree)
        return
    if not isinstance(tree, list):
        return  # a bare scalar for an array (splat in some tests): leave it
    static = not any(shape.dynamic) and all(d >= 0 for d in shape.dims)
    _check_nesting(inst, shape, tree, 0, static, "")


def _check_nesting(inst: Instruction, shape: Shape, node: list, depth: int, static: bool, where: str) -> None:
    rank = len(shape.dims)
    if static and len(node) != shape.dims[depth] and not (depth == 0 and not node and 0 in shape.dims):
        raise _at(inst, f"expects {shape.dims[depth]} elements in the {where or 'top-level'} element, "
                        f"but sees {len(node)}")
    for i, child in enumerate(node):
        if depth + 1 < rank:
            if not isinstance(child, list):
                raise _at(inst, f"expects nested array in rank {rank}, but sees {depth + 1}")
            _check_nesting(inst, shape, child, depth + 1, static, f"{where}[{i}]th")
        elif isinstance(child, list):
            raise _at(inst, f"expects nested array in rank {rank}, but sees larger")
        else:
            _check_scalar(inst, shape.element_type, child)


def _check_scalar(inst: Instruction, etype: str, token: str) -> None:
    if etype[0] in "su" and etype[1:].isdigit():
        _check_int(inst, etype, token)
    elif etype in ("c64", "c128") and token.startswith("("):
        for part in split_top_level(token[1:-1]):
            _check_float(inst, etype, part.strip())
    else:
        _check_float(inst, etype, token)


def _check_int(inst: Instruction, etype: str, token: str) -> None:
    try:
        value = int(token, 0)  # decimal or 0x hex
    except ValueError:
        try:
            value = int(token)  # leading zeros, which base 0 refuses
        except ValueError:
            return
    bits = int(etype[1:])
    if etype == "u64" and value < 0:
        return  # XLA reads u64 text through a signed 64-bit parse and accepts -1 (ConstantUnsignedUnderflow)
    low, high = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if etype[0] == "s" else (0, (1 << bits) - 1)
    if not low <= value <= high:
        raise _at(inst, f"value {token} is out of range for literal's primitive type {etype.upper()}")


_NAN_PAYLOAD = re.compile(r"-?nan\((0x[0-9a-fA-F]+)\)")


def _check_float(inst: Instruction, etype: str, token: str) -> None:
    m = _NAN_PAYLOAD.fullmatch(token)
    if m:
        payload = int(m.group(1), 16)
        bits = NAN_MANTISSA.get(etype)
        if (bits is not None and payload >= (1 << bits)) or (bits is None and etype.startswith("f8")):
            raise _at(inst, f"tries to set NaN payload {m.group(1)} which does not fit {etype}")
        return
    limit = FLOAT_LIMITS.get(etype)
    if limit is None or token.lstrip("-+").lower() in ("inf", "nan"):
        return
    try:
        value = float(token)
    except ValueError:
        return
    largest, mantissa = limit
    half_ulp = 2.0 ** (math.frexp(largest)[1] - 2 - mantissa) if largest < 1e308 else 0.0
    if math.isinf(value) or abs(value) >= largest + half_ulp and half_ulp:
        raise _at(inst, f"value {token} is out of range for literal's primitive type {etype.upper()}")


# ----------------------------------------------------------------------------- per-opcode checks

def _dims(inst: Instruction) -> list[int] | None:
    return parse_int_list(inst.attr("dimensions"))


def _check_dimensions(v: _Thorough, inst: Instruction) -> None:
    if "dimensions=" not in inst.attrs_text:
        return
    dims = _dims(inst)
    if dims is None:
        return
    if any(d < 0 for d in dims):
        raise _at(inst, f"dimensions={{{','.join(map(str, dims))}}} holds a negative dimension")
    if not dims and inst.opcode in ("all-gather", "all-gather-start", "reduce-scatter", "get-dimension-size"):
        raise _at(inst, f"{inst.opcode} expects exactly one dimension in dimensions=")


def _check_async(v: _Thorough, inst: Instruction) -> None:
    info = _async_base(inst.opcode)
    if info is None:
        return
    wrapped, stage = info
    if stage in ("start", "update") and inst.shape is not None:
        s = inst.shape
        if not (s.is_tuple and len(s.tuple_shapes) >= 2 and s.tuple_shapes[0].is_tuple):
            raise _at(inst, "AsyncStart and AsyncUpdate expect the shape to be in the form of "
                            "((operand0_shape, operand1_shape, ...), output_shape, ...)")
    if stage == "start" or not inst.operands or inst.operands[0].name is None:
        return
    prev = v.defined.get(inst.operands[0].name)
    if prev is None:
        return
    prev_info = _async_base(prev.opcode)
    if prev_info is None:
        return
    if prev_info[1] == "done":
        raise _at(inst, "AsyncUpdate and AsyncDone cannot have AsyncDone as operand.")
    start = _async_start(v, prev)
    if wrapped and prev_info[0] and wrapped != prev_info[0]:
        raise _at(inst, f"Expect async wrapped opcode to be {prev_info[0]}, but got {wrapped}")
    if start is None:
        return
    calls, mine = start.attr("calls"), inst.attr("calls")
    if mine is not None and calls is not None and parse_name_list(mine) != parse_name_list(calls):
        raise _at(inst, f"Expect async_wrapped_computation to be {calls.lstrip('%')}, but got {mine.lstrip('%')}")
    thread = unquote(start.attr("async_execution_thread")) or "main"
    mine_thread = inst.attr("async_execution_thread")
    if mine_thread is not None and unquote(mine_thread) != thread:
        raise _at(inst, f"Expect async_execution_thread to be {thread}, but got {unquote(mine_thread)}")


def _async_start(v: _Thorough, inst: Instruction) -> Instruction | None:
    """Follow update operands back to the async start of a chain."""
    for _ in range(64):
        info = _async_base(inst.opcode)
        if info is None:
            return None
        if info[1] == "start":
            return inst
        if not inst.operands or inst.operands[0].name is None:
            return None
        nxt = v.defined.get(inst.operands[0].name)
        if nxt is None:
            return None
        inst = nxt
    return None


def _check_conditional(v: _Thorough, inst: Instruction) -> None:
    if inst.opcode != "conditional":
        return
    selector = v.operand_shape(inst, 0)
    if selector is None or not selector.is_array:
        return
    if selector.dims:
        raise _at(inst, "The first operand must be a scalar")
    if selector.element_type not in ("pred", "s32"):
        raise _at(inst, "The first operand must be a scalar of PRED or S32")
    wrong = ("branch_computations",) if selector.element_type == "pred" else ("true_computation", "false_computation")
    for name in wrong:
        if inst.attr(name) is not None:
            raise _at(inst, f'unexpected attribute "{name}"')


def _check_tuple_result(v: _Thorough, inst: Instruction) -> None:
    if inst.opcode in ("infeed", "recv") and inst.shape is not None:
        if not inst.shape.is_tuple or not inst.shape.tuple_shapes:
            raise _at(inst, f"{inst.opcode} must have a non-empty tuple shape")


def _elements(shape: Shape | None) -> int | None:
    if shape is None or not shape.is_array or any(d < 0 for d in shape.dims):
        return None
    return math.prod(shape.dims)


def _check_reshape(v: _Thorough, inst: Instruction) -> None:
    if inst.opcode not in ("reshape", "dynamic-reshape") or inst.shape is None:
        return
    if inst.opcode == "dynamic-reshape" and len(inst.operands) - 1 != len(inst.shape.dims):
        raise _at(inst, f"expects one dim size operand per result dimension; got {len(inst.operands) - 1} "
                        f"for {len(inst.shape.dims)} result dimensions")
    source = v.operand_shape(inst, 0)
    a, b = _elements(inst.shape), _elements(source)
    if a is not None and b is not None and a != b:
        raise _at(inst, f"expects the same number of elements in result shape {inst.shape} and operand "
                        f"shape {source}")


def _check_custom_call(v: _Thorough, inst: Instruction) -> None:
    if inst.opcode != "custom-call":
        return
    api = inst.attr("api_version")
    if api is not None and api not in API_VERSIONS:
        raise _at(inst, f"Unknown API version {api}" if api != "API_VERSION_UNSPECIFIED" else
                  "Invalid API version API_VERSION_UNSPECIFIED")
    raw = inst.attr("operand_layout_constraints")
    if raw is None or not raw.startswith("{"):
        return
    parts = [p.strip() for p in split_top_level(raw.strip()[1:-1]) if p.strip()]
    if len(parts) != len(inst.operands):
        raise _at(inst, f"Expected {len(inst.operands)} operand layout constraints, {len(parts)} given")
    for i, part in enumerate(parts):
        try:
            want = parse_shape(part)
        except Exception:  # noqa: BLE001 - a bad shape here is the grammar's business
            return
        have = v.operand_shape(inst, i)
        if have is not None and not _compatible(want, have):
            raise _at(inst, f"operand {i} is not compatible with operand shape {part}")


_DEVICES = re.compile(r"devices=\[([0-9,]+)\](?:<=\[([0-9,]+)\](?:T\([0-9,]+\))?|([0-9,]+))")
_IOTA_GROUPS = re.compile(r"^\[([0-9,]+)\]<=\[([0-9,]+)\]")


def _product(text: str) -> int:
    return math.prod(hlo_int(x) for x in text.split(",") if x)


def _check_sharding(v: _Thorough, inst: Instruction) -> None:
    raw = inst.attr("sharding")
    if raw is None or "devices=" not in raw:
        return
    for m in _DEVICES.finditer(raw):
        tiles = _product(m.group(1))
        if m.group(2) is not None and _product(m.group(2)) != tiles:
            raise _at(inst, "iota device list size does not match the tile assignment dimensions product")
        if m.group(3) is not None and len([x for x in m.group(3).split(",") if x]) != tiles:
            raise _at(inst, "device count does not match the tile assignment size")


def _check_replica_groups(v: _Thorough, inst: Instruction) -> None:
    raw = inst.attr("replica_groups")
    if raw is None:
        return
    m = _IOTA_GROUPS.match(raw)
    if m and _product(m.group(1)) != _product(m.group(2)):
        raise _at(inst, "iota replica group list size does not match the tile assignment dimensions product")
    mesh = re.match(r"mesh\[(.*?)\](?:\s*,\s*device_ids=\((?:[^()]|\([^()]*\))*\))?\s*\{(.*?)\}", raw, re.S)
    if not mesh:
        return
    axes = re.findall(r"'([^']*)'\s*=", mesh.group(1))
    for ref in re.findall(r"'([^']*)'", mesh.group(2)):
        base = re.split(r"[:(]", ref, maxsplit=1)[0]
        if base.isdigit():
            if int(base) >= len(axes):
                raise _at(inst, f"axis index {base} is out of bounds for mesh with {len(axes)} axes")
        elif base not in axes:
            raise _at(inst, f"'{base}' is not a valid axis name or index")


_ACCURACY_MODES = frozenset({"default", "highest"})


def _check_result_accuracy(v: _Thorough, inst: Instruction) -> None:
    raw = inst.attr("result_accuracy")
    if raw is None:
        return
    m = re.fullmatch(r"\{\s*mode\s*=\s*([A-Za-z_]+)\s*\}", raw)
    if m:
        if m.group(1).lower() not in _ACCURACY_MODES:
            raise _at(inst, f"expects ResultAccuracy type but sees: {m.group(1)}")
        return
    m = re.fullmatch(r"\{\s*tolerance\s*=\s*\{(.*)\}\s*\}", raw, re.S)
    if m:
        for key in re.findall(r"([A-Za-z_]+)\s*=", m.group(1)):
            if key not in ("atol", "rtol", "ulps"):
                raise _at(inst, f"invalid attribute name {key} in result_accuracy")
        return
    raise _at(inst, "invalid attribute name in result_accuracy")


def _check_dim_labels(v: _Thorough, inst: Instruction) -> None:
    raw = inst.attr("dim_labels")
    if raw is None:
        return
    m = re.fullmatch(r"([^_]*)_([^-]*)->(.*)", raw.strip())
    if not m:
        return
    parts = m.groups()
    spatial = [[c for c in p if c in "0123456789"] for p in parts]
    if len({len(s) for s in spatial}) != 1:
        raise _at(inst, "convolution lhs, rhs and output must have same number of spatial dimensions "
                        f"(dimension numbers {raw})")
    count = len(spatial[0])
    for labels, digits, letters in zip(parts, spatial, ("bf", "io", "bf")):
        if len(set(digits)) != len(digits):
            raise _at(inst, f"convolution dim_labels {raw}: expects unique spatial digits")
        for c in labels:
            if not (c in letters or c == "?" or (c in "0123456789" and int(c) < count)):
                raise _at(inst, f"convolution dim_labels {labels}: expects [0-{count - 1}{letters}?]")


def _check_window(v: _Thorough, inst: Instruction) -> None:
    raw = inst.attr("window")
    if raw is None or not raw.startswith("{"):
        return
    fields = dict(re.findall(r"([a-z_]+)=(\S+)", raw[1:-1]))
    size = fields.get("size")
    rank = len(size.split("x")) if size else None
    for key, value in fields.items():
        items = value.split("x")
        if key == "pad" and any(len(p.split("_")) != 2 for p in re.split(r"x(?=-?\d)", value)):
            raise _at(inst, "expects padding_low and padding_high separated by '_'")
        if rank is not None and len(items) != rank:
            raise _at(inst, f"window {key} has {len(items)} entries, but size has {rank}")


def _check_parameter_replication(v: _Thorough, inst: Instruction) -> None:
    raw = inst.attr("parameter_replication")
    if raw is None or inst.shape is None:
        return
    values = [x for x in re.split(r"[{},\s]+", raw) if x]
    leaves = sum(1 for _ in inst.shape.leaves())
    if len(values) > 1 and len(values) != leaves:
        raise _at(inst, f"parameter has {leaves} leaf buffers, but parameter_replication has {len(values)} elements")


class _AsyncOpcodes:
    """The opcodes _check_async looks at (membership by _async_base)."""

    def __contains__(self, opcode: str) -> bool:
        return _async_base(opcode) is not None


# (check, the opcodes it looks at or None for all, the attribute it needs or None): every check returns at once
# for other instructions, so `instruction` calls it only for these.
_INSTRUCTION_CHECKS = (
    (_check_dimensions, None, "dimensions"),
    (_check_async, _AsyncOpcodes(), None),
    (_check_conditional, frozenset({"conditional"}), None),
    (_check_tuple_result, frozenset({"infeed", "recv"}), None),
    (_check_reshape, frozenset({"reshape", "dynamic-reshape"}), None),
    (_check_custom_call, frozenset({"custom-call"}), None),
    (_check_sharding, None, "sharding"),
    (_check_replica_groups, None, "replica_groups"),
    (_check_result_accuracy, None, "result_accuracy"),
    (_check_dim_labels, None, "dim_labels"),
    (_check_window, None, "window"),
    (_check_parameter_replication, None, "parameter_replication"),
)
