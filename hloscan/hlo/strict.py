"""The strict path: the full lark grammar over a whole module text, then the tree turned into IR."""

from __future__ import annotations

import re

from lark import Token, Tree

from hloscan.hlo.attrs import NAME, strip_comments_and_space
from hloscan.hlo.grammar import parser
from hloscan.hlo.ir import LITERAL_OPCODES, Computation, Instruction, Module, Operand, Parameter, StackFrameTables
from hloscan.hlo.transform import shape_from_tree
from hloscan.hlo.values import ShapeError, hlo_int

# A word in operand position (`true`, `nan`) is a name reference, not a literal.
_BARE_WORD = re.compile(NAME)


def parse_module_strict(text: str, path: str | None = None, line_offset: int = 0) -> Module:
    """Parse one module (or a header-less text, or a single instruction) with the whole grammar."""
    tree = parser("hlo_text").parse(text)
    return _Builder(text, path, line_offset).module(tree.children[0])


def _start(node) -> int:
    return node.start_pos if isinstance(node, Token) else node.meta.start_pos


def _end(node) -> int:
    return node.end_pos if isinstance(node, Token) else node.meta.end_pos


def _name(node: Tree) -> str:
    token = node.children[0]
    return str(token)[1:] if token.type == "PCT_NAME" else str(token)


class _Builder:
    """Walks the tree; raw attribute texts are slices of the source so both parse paths agree."""

    def __init__(self, text: str, path: str | None, line_offset: int):
        self.text = text
        self.path = path
        self.line_offset = line_offset
        self.percent: bool | None = None  # whether instruction names carry `%` (printer form to reproduce)

    def slice(self, first, last) -> str:
        return self.text[_start(first) : _end(last)]

    # ------------------------------------------------------------------ module

    def module(self, node: Tree) -> Module:
        if node.data == "single_instruction":
            return self.single_instruction(node)
        name, attrs, has_header, frames = "", (), False, None
        comps = []
        for child in node.children:
            if child.data == "header":
                has_header = True
                name, attrs = self.header(child)
            elif child.data == "stack_frame_index":
                frames = self.stack_frames(child)
            else:
                comps.append(self.computation(child))
        if not has_header:
            name = "module_" + next((c.name for c in comps if c.is_entry), comps[-1].name)
        percent = self.percent if self.percent is not None else True
        return Module(name, tuple(comps), attrs, frames, has_header, percent, self.path, 1 + self.line_offset)

    def header(self, node: Tree) -> tuple[str, tuple[tuple[str, str], ...]]:
        first = node.children[0]
        name = _name(first) if isinstance(first, Tree) else str(first)[:-1].rstrip()
        attrs = tuple(self.attribute(a) for a in node.children[1:])
        return name, attrs

    def attribute(self, node: Tree) -> tuple[str, str]:
        key = str(node.children[0])[:-1]
        value = self.slice(node.children[1], node.children[-1])
        return key, strip_comments_and_space(value)

    def stack_frames(self, node: Tree) -> StackFrameTables:
        tables: dict[str, list] = {"file_name": [], "function_name": [], "file_location": [], "stack_frame": []}
        for entry in node.children:
            ident = hlo_int(entry.children[0])
            if entry.data in ("file_name", "function_name"):
                tables[entry.data].append((ident, str(entry.children[1])))
            else:
                fields = tuple((str(f.children[0])[:-1], hlo_int(f.children[1])) for f in entry.children[1:])
                tables[entry.data].append((ident, fields))
        return StackFrameTables(
            tuple(tables["file_name"]),
            tuple(tables["function_name"]),
            tuple(tables["file_location"]),
            tuple(tables["stack_frame"]),
        )

    # ------------------------------------------------------------------ computations

    def computation(self, node: Tree) -> Computation:
        is_entry = False
        name = ""
        params = result = thread = None
        instructions = []
        for child in node.children:
            if isinstance(child, Token):
                if child.type == "ENTRY":
                    is_entry = True
                elif child.type == "STRING":
                    thread = str(child)
                continue
            if child.data == "name":
                name = _name(child)
            elif child.data == "signature":
                params, result = self.signature(child)
            elif child.data == "instruction":
                instructions.append(self.instruction(child))
        line, col = self.position(node)
        return Computation(name, tuple(instructions), is_entry, params, result, thread, line, col)

    def signature(self, node: Tree):
        params = []
        result = None
        for child in node.children:
            if isinstance(child, Tree) and child.data == "param":
                params.append(Parameter(str(child.children[0])[:-1], shape_from_tree(child.children[1])))
            elif isinstance(child, Tree):
                result = shape_from_tree(child)
        return tuple(params), result

    def position(self, node) -> tuple[int, int]:
        if isinstance(node, Token):
            return node.line + self.line_offset, node.column
        return node.meta.line + self.line_offset, node.meta.column

    # ------------------------------------------------------------------ instructions

    def instruction(self, node: Tree) -> Instruction:
        is_root = False
        name = None
        shape = None
        opcode = None
        operands_nodes: list[Tree] = []
        attr_nodes: list[Tree] = []
        rparen_end = None
        for child in node.children:
            if isinstance(child, Token):
                if child.type == "ROOT":
                    is_root = True
                continue
            kind = child.data
            if kind == "name":
                name = _name(child)
                if self.percent is None:
                    self.percent = child.children[0].type == "PCT_NAME"
            elif kind == "opcode":
                opcode = str(child.children[0])
            elif kind.startswith("operand_"):
                operands_nodes.append(child)
            elif kind.startswith("attr_"):
                attr_nodes.append(child)
            elif opcode is None:
                shape = shape_from_tree(child)
        line, col = self.position(node)
        after_opcode = self.text.index("(", _end(next(c for c in node.children if isinstance(c, Tree) and c.data == "opcode")))
        rparen_end = self._closing_paren(after_opcode, operands_nodes, node)
        literal = None
        operands: tuple[Operand, ...] = ()
        if opcode in LITERAL_OPCODES:
            literal = self.text[after_opcode + 1 : rparen_end - 1].strip()
        else:
            operands = tuple(self.operand(o) for o in operands_nodes)
        attrs_text = self.text[rparen_end : _end(attr_nodes[-1])] if attr_nodes else ""
        attrs = tuple(self.attribute(a) for a in attr_nodes)
        for attr in attr_nodes:
            for body in attr.find_data("computation_body"):
                self._check_inline_body(body)
        inst = Instruction(name or "", opcode or "", shape, operands, attrs_text, is_root, literal, line, col)
        inst.__dict__["_attrs"] = attrs  # the grammar has split them already (Instruction.attrs' cache)
        return inst

    def _check_inline_body(self, body: Tree) -> None:
        """An inline (full-bodies) computation such as `to_apply={...}`: XLA parses it as a computation, so
        each operand must name an instruction defined before it in that body (the IR keeps the body as raw
        attribute text, so this is the one place it is looked at)."""
        defined: set[str] = set()
        for child in body.children:
            if not isinstance(child, Tree):
                continue
            inst = self.instruction(child)
            for operand in inst.operands:
                if operand.name is None:
                    raise ShapeError("expects name (an operand of an inline computation names an instruction)",
                                     child.meta.line, child.meta.column)
                if operand.name not in defined:
                    raise ShapeError(f"instruction does not exist: {operand.name} (inline computation)",
                                     child.meta.line, child.meta.column)
            defined.add(inst.name)

    def _closing_paren(self, open_pos: int, operand_nodes: list[Tree], node: Tree) -> int:
        """End offset of the `)` closing the operand list (the grammar drops anonymous tokens)."""
        pos = _end(operand_nodes[-1]) if operand_nodes else open_pos + 1
        close = self.text.index(")", pos)
        return close + 1

    def operand(self, node: Tree) -> Operand:
        kind = node.data
        raw = self.slice(node, node)
        if kind == "operand_ref":
            shape = None
            name = ""
            index = []
            for child in node.children:
                if child.data == "name":
                    name = _name(child)
                elif child.data == "gte_suffix":
                    index.append(hlo_int(child.children[0]))
                else:
                    shape = shape_from_tree(child)
            return Operand(name, shape, tuple(index))
        if kind == "operand_shape_only":
            return Operand(None, shape_from_tree(node.children[0]), (), raw)
        if _BARE_WORD.fullmatch(raw.strip()):
            # `negate(true)`: the grammar reads the word as a literal, the fast path (and XLA, whose operand
            # list takes names only) as a name, which no instruction defines: both paths say so (found by fuzzing).
            return Operand(raw.strip(), None, ())
        return Operand(None, None, (), raw)

    def single_instruction(self, node: Tree) -> Module:
        body = node.children[0] if node.children and isinstance(node.children[0], Tree) else None
        if body is not None and body.data == "computation_body":
            instructions = tuple(self.instruction(c) for c in body.children if isinstance(c, Tree))
        else:
            instructions = (self.instruction(node),)
        line, col = self.position(node)
        comp = Computation("single_instruction", instructions, True, None, None, None, line, col)
        percent = self.percent if self.percent is not None else True
        return Module("single_instruction", (comp,), (), None, False, percent, self.path, 1)
