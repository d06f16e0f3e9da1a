"""Reads Mosaic kernel bodies written as MLIR *text* (Mosaic accepts text as well as bytecode; real TPU dumps
carry both) into the same MosaicKernel the bytecode reader builds. Only the main function's signature and
attributes and the transform functions' return values are read; nothing is evaluated."""

from __future__ import annotations

import re
from typing import Any, Iterator

from hloscan.analyses.vmem.mosaic.bytecode import (
    DYNAMIC,
    BytecodeError,
    DenseArray,
    MosaicKernel,
    OpaqueAttr,
    OpaqueType,
    ScalarType,
    ShapedType,
    SymbolRef,
    TypedValue,
    enum_text,
    int_tuple,
    int_value,
    window_param,
)

_FUNC = re.compile(r"func\.func\s+(?:private\s+)?@([\w$.-]+)\s*\(")
_OPEN = {"(": ")", "[": "]", "{": "}", "<": ">"}
_CLOSE = frozenset(")]}>")
_SHAPED = re.compile(r"(memref|vector|tensor)<(.*)>$", re.S)
_DENSE = re.compile(r"array<\s*([\w]+)\s*(?::\s*(.*))?>$", re.S)
_TYPED = re.compile(r"(-?\d+)\s*:\s*([\w]+)$")
_CONSTANT = re.compile(r"(%[\w.$-]+)\s*=\s*arith\.constant\s+(-?\d+)\s*:")
_RETURN = re.compile(r"\breturn\b([^:\n]*)(?::|\n|$)")
_OP_AT_LINE = re.compile(r"^\s*(?:%[^=]*=\s*)?\"?([a-z_][\w]*\.[\w.]+)\"?", re.M)
_MOSAIC_VERSION = re.compile(r"stable_mosaic\.version\s*=\s*(\d+)")
# `%5 = math.exp %4 : vector<512x512xf32>`: the op's name and its (last printed) vector type.
_VECTOR_RESULT = re.compile(r"^\s*%[^=\n]*=\s*\"?([a-z_][\w]*\.[\w.]+)\"?[^\n]*vector<((?:\d+x)+)([a-z]\w*)>[^\n<]*$", re.M)


def looks_like_mlir_text(data: bytes) -> bool:
    head = data[:4096]
    return b"func.func" in head or head.lstrip().startswith(b"module")


def read_kernel_text(text: str) -> MosaicKernel:
    """Parse the kernel; any malformed text becomes one BytecodeError with a message (never another exception)."""
    try:
        return _read(text)
    except BytecodeError:
        raise
    except (IndexError, KeyError, ValueError, TypeError, AttributeError) as exc:
        raise BytecodeError(f"unreadable MLIR text kernel: {type(exc).__name__}: {exc}") from exc


def _read(text: str) -> MosaicKernel:
    funcs = _functions(text)
    if not funcs:
        raise BytecodeError("no func.func in the MLIR text kernel body")
    main = next((f for f in funcs if "window_params" in f["attrs"] or "iteration_bounds" in f["attrs"]), funcs[0])
    attrs = main["attrs"]
    grid = int_tuple(attrs.get("iteration_bounds"))
    n_grid = len(grid or ())
    by_name = {f["name"]: f for f in funcs}
    params = attrs.get("window_params")
    semantics = attrs.get("dimension_semantics")
    version = _MOSAIC_VERSION.search(text)
    return MosaicKernel(
        name=main["name"],
        arg_types=tuple(main["args"]),
        window_params=tuple(window_param(p, lambda name: _index_map(by_name.get(name), n_grid)) for p in params)
        if isinstance(params, list) else None,
        iteration_bounds=grid,
        dimension_semantics=tuple(enum_text(s, "tpu.dimension_semantics") or "" for s in semantics)
        if isinstance(semantics, list) else (),
        scalar_prefetch=int_value(attrs.get("scalar_prefetch")),
        scratch_operands=int_value(attrs.get("scratch_operands")),
        core_type=enum_text(attrs.get("tpu.core_type"), "tpu.core_type"),
        functions=tuple(f["name"] for f in funcs),
        bytecode_version=-1,  # text, not bytecode
        producer="mlir-text",
        mosaic_version=int(version.group(1)) if version else None,
        op_names=tuple(sorted(set(_OP_AT_LINE.findall(main["body"])) - {"func.func"})),
        vector_values=_vector_values(main["body"]),
        grid_indices_read=_grid_indices_read(main, n_grid),
    )


def _grid_indices_read(main: dict[str, Any], n_grid: int) -> tuple[int, ...]:
    """Which of the first `n_grid` arguments (the grid indices) the body names."""
    names = main["arg_names"][:n_grid]
    return tuple(i for i, name in enumerate(names) if name and re.search(re.escape(name) + r"\b", main["body"]))


def _vector_values(body: str) -> tuple[tuple[str, tuple[int, ...], str], ...]:
    found = [(m.group(1), tuple(int(d) for d in m.group(2).rstrip("x").split("x")), m.group(3))
             for m in _VECTOR_RESULT.finditer(body)]
    return tuple(sorted(found))


# ------------------------------------------------------------------------------------------ structure


def _structure(text: str, start: int = 0) -> Iterator[tuple[int, str]]:
    """The MLIR bracket scanner: (index, character) of each bracket, angle and comma outside strings, from
    `start`. MLIR has angle brackets, which HLO text does not, so this is not hloscan.hlo.attrs' scanner;
    the `-` of `->` makes its `>` an arrow, not an angle."""
    i = start
    while i < len(text):
        ch = text[i]
        if ch == '"':
            i = _string_end(text, i)
            continue
        if (ch in _OPEN or ch in _CLOSE or ch == ",") and not (ch in "<>" and text[i - 1 : i] == "-"):
            yield i, ch
        i += 1


def _closing(text: str, start: int) -> int:
    """Index just past the bracket that closes text[start]."""
    stack = []
    for i, ch in _structure(text, start):
        if ch in _OPEN:
            stack.append(_OPEN[ch])
        elif stack and ch == stack[-1]:
            stack.pop()
            if not stack:
                return i + 1
    raise BytecodeError("unbalanced brackets in the MLIR text kernel body")


def _string_end(text: str, start: int) -> int:
    i = start + 1
    while i < len(text) and text[i] != '"':
        i += 2 if text[i] == "\\" else 1
    return i + 1


def _split(text: str) -> list[str]:
    """Split at top-level commas (outside brackets, angles and strings)."""
    parts, depth, start = [], 0, 0
    for i, ch in _structure(text):
        if ch in _OPEN:
            depth += 1
        elif ch in _CLOSE:
            depth -= 1
        elif depth == 0:
            parts.append(text[start:i].strip())
            start = i + 1
    tail = text[start:].strip()
    return parts + [tail] if tail else parts


def _functions(text: str) -> list[dict[str, Any]]:
    funcs = []
    for m in _FUNC.finditer(text):
        args_end = _closing(text, m.end() - 1)
        arg_texts = _split(text[m.end() : args_end - 1])
        args = [_arg_type(a) for a in arg_texts]
        rest = args_end
        body_start = text.find("{", rest)
        attrs: dict[str, Any] = {}
        attr_at = text.find("attributes", rest, body_start if body_start >= 0 else len(text))
        if attr_at >= 0:
            open_at = text.index("{", attr_at)
            close = _closing(text, open_at)
            attrs = _dict(text[open_at + 1 : close - 1])
            body_start = text.find("{", close)
        body_end = _closing(text, body_start) if body_start >= 0 else len(text)
        funcs.append({"name": m.group(1), "args": args, "arg_names": [a.partition(":")[0].strip() for a in arg_texts],
                      "attrs": attrs, "body": text[body_start:body_end]})
    return funcs


def _arg_type(arg: str) -> Any:
    """`%arg4: memref<...> {attr}` -> the type (argument attributes are dropped)."""
    _, _, type_text = arg.partition(":")
    type_text = type_text.strip()
    if type_text.endswith("}") and "{" in type_text:
        type_text = type_text[: type_text.rindex("{")].strip()
    return _type(type_text)


# ------------------------------------------------------------------------------------------ values


def _type(text: str) -> Any:
    m = _SHAPED.match(text)
    if m is None:
        return OpaqueType(text) if text.startswith("!") else ScalarType(text)
    kind, inner = m.groups()
    parts = _split(inner)
    dims_and_element = parts[0].split("x")
    shape = tuple(DYNAMIC if d.strip() == "?" else int(d) for d in dims_and_element[:-1])
    element = _type(dims_and_element[-1].strip())
    space = layout = None
    for extra in parts[1:]:
        if extra.startswith("#tpu.memory_space") or extra.isdigit():
            space = extra
        else:
            layout = extra
    return ShapedType(kind, shape, element, space, layout)


def _dict(text: str) -> dict[str, Any]:
    out = {}
    for entry in _split(text):
        key, sep, value = entry.partition("=")
        key = key.strip().strip('"')
        out[key] = _value(value.strip()) if sep else True
    return out


def _value(text: str) -> Any:
    if text.startswith("["):
        return [_value(v) for v in _split(text[1:-1])]
    if text.startswith("{"):
        return _dict(text[1:-1])
    if text.startswith("@"):
        return SymbolRef(text[1:].strip('"'))
    m = _DENSE.match(text)
    if m:
        values = tuple(int(v) for v in (m.group(2) or "").split(",") if v.strip())
        return DenseArray(ScalarType(m.group(1)), values)
    m = _TYPED.match(text)
    if m:
        return TypedValue(int(m.group(1)), ScalarType(m.group(2)))
    if text.lstrip("-").isdigit():
        return int(text)
    return OpaqueAttr(text)


def _index_map(func: dict | None, n_grid: int) -> tuple[str | int | None, ...] | None:
    """What a transform function returns: `g<k>` for grid argument k, an int constant, or None (computed)."""
    if func is None:
        return None
    returns = _RETURN.findall(func["body"])
    if not returns:
        return None
    constants = {name: int(value) for name, value in _CONSTANT.findall(func["body"])}
    out: list[str | int | None] = []
    for operand in (o.strip() for o in returns[-1].split(",") if o.strip()):
        m = re.fullmatch(r"%arg(\d+)", operand)
        if m and int(m.group(1)) < n_grid:
            out.append(f"g{m.group(1)}")
        else:
            out.append(constants.get(operand))
    return tuple(out)
