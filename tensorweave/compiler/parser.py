"""Reading the IR text form back into `Graph`s.

The text is MLIR generic operation syntax; `tensorweave.compiler.printer` documents the
exact spelling, and everything it prints reads back to an equal graph. The parser is a
hand-written lexer plus a recursive-descent parser. It also accepts reasonable
hand-written text and what ``mlir-opt --allow-unregistered-dialect --mlir-print-debuginfo
--mlir-print-local-scope`` prints back:

- a ``module { ... }`` wrapper, custom ``return %x : T`` / ``func.return``, result types
  without parentheses, no ``-> ...`` for functions without results;
- numeric SSA ids (``%0``), missing ``loc(...)`` (a node is then named after its SSA id,
  or after its op when the id is numeric), ``loc("file":line:col)`` without a name,
  ``loc(unknown)``, ``// comments``;
- attributes without a type suffix (``axis = 1``), ints and floats as lists (``[1, 2]``),
  integer literals for float attributes, decimal or hex elements in ``dense<...>``.

Unranked tensors (``tensor<*xf32>``) read as types of unknown rank (which only v1 graphs
under construction hold).

Every malformed input raises `tensorweave.errors.ParseError` with a 1-based line and
column: lexical errors, unknown ops and attributes, undefined or redefined SSA values,
operand types that differ from their values' types, result counts that differ from the
op's type, attribute values of the wrong kind, and declared result types that type
inference contradicts (checked per node, then with `verifier.verify` on the whole graph).
"""

from __future__ import annotations

import bisect
import math
import sys
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import numpy as np

from ..errors import ParseError, TensorWeaveError, VerificationError
from .dtypes import ALL_DTYPES, DType, string, uint8
from .ir import Graph, Node, SourceLoc, Value
from .printer import float_text_bits, format_type, uint_view
from .registry import OpDef, get_op
from .types import ResourceType, TensorType, Type
from .verifier import verify

_ELEMENT_TYPES: dict[str, DType] = {d.ir_name: d for d in (*ALL_DTYPES, string)}
_ELEMENT_TYPES["ui8"] = uint8  # MLIR's spelling; plain "u8" is accepted too
_UINT_BY_SIZE = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}

_PUNCTUATION = set("(){}[]<>,:=*?+")
_ID_CHARS = set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_$.")
_SSA_CHARS = _ID_CHARS | {"-"}
_HEX_DIGITS = set("0123456789abcdefABCDEF")
_TENSOR_BODY_STOP = set('>\n<()[]{},=:"')  # a tensor<...> body ends at '>' or is malformed

_KIND_WANTS = {
    "bool": "true or false",
    "int": "an integer such as 3 : i64",
    "float": "a float such as 1.5 : f64",
    "str": "a string",
    "dtype": "an element type such as f32",
    "shape": "a shape such as array<i64: 2, -1> (-1 for an unknown dimension)",
    "ints": "integers such as array<i64: 0, 1>",
    "floats": "floats such as array<f64: 0.5, 1.0>",
    "strs": "a list of strings such as [\"a\", \"b\"]",
    "tensor": "a constant such as dense<[1.0, 2.0]> : tensor<2xf32>",
    "type": "a type such as tensor<2xf32>",
}


# --------------------------------------------------------------------------- entry points

def parse_module(text: str, source_name: str = "<text>") -> list[Graph]:
    """Every ``func.func`` in `text` (optionally inside ``module { ... }``), as Graphs."""
    return [g for g, _ in _Parser(text, source_name).module()]


def parse_graph(text: str, source_name: str = "<text>") -> Graph:
    """The one ``func.func`` in `text` as a Graph; raises `ParseError` on malformed text."""
    parser = _Parser(text, source_name)
    functions = parser.module()
    if len(functions) != 1:
        at = functions[1][1] if functions else parser.tok
        raise parser.error(f"expected exactly one func.func, found {len(functions)}", at)
    return functions[0][0]


# --------------------------------------------------------------------------- lexer

class Token(NamedTuple):
    """One lexical token. `kind` is ``ident``, ``percent`` (``%id``), ``caret`` (``^id``),
    ``at`` (``@sym``), ``hash`` (``#id``), ``bang`` (``!id``), ``int``, ``hex``,
    ``float``, ``string``, ``eof``, or the punctuation itself (``(``, ``->``, ...)."""

    kind: str
    text: str
    start: int
    end: int
    value: Any = None


class _Lexer:
    """Produces tokens on demand, so the parser can re-scan raw text (tensor types)."""

    def __init__(self, text: str, source_name: str) -> None:
        self.text = text
        self.source_name = source_name
        self.pos = 0
        self.line_starts = [0] + [i + 1 for i, c in enumerate(text) if c == "\n"]

    def location(self, offset: int) -> tuple[int, int]:
        line = bisect.bisect_right(self.line_starts, offset)
        return line, offset - self.line_starts[line - 1] + 1

    def error(self, message: str, offset: int) -> ParseError:
        line, column = self.location(offset)
        return ParseError(message, line, column, source_name=self.source_name)

    def next(self) -> Token:
        self._skip_space_and_comments()
        text, i = self.text, self.pos
        if i >= len(text):
            return Token("eof", "", i, i)
        c = text[i]
        if c == '"':
            return self._string(i)
        if c.isascii() and c.isdigit():
            return self._number(i)
        if c == "-":
            if text.startswith("->", i):
                return self._emit("->", i, i + 2)
            return self._emit("-", i, i + 1)
        if c in "%^":
            return self._sigil_id("percent" if c == "%" else "caret", i, _SSA_CHARS)
        if c == "@":
            if text.startswith('@"', i):
                s = self._string(i + 1)
                return self._emit("at", i, s.end, s.value)
            return self._sigil_id("at", i, _ID_CHARS)
        if c in "#!":
            return self._sigil_id("hash" if c == "#" else "bang", i, _ID_CHARS)
        if c.isascii() and (c.isalpha() or c == "_"):
            end = self._scan(i, _ID_CHARS)
            return self._emit("ident", i, end, text[i:end])
        if c in _PUNCTUATION:
            return self._emit(c, i, i + 1)
        raise self.error(f"unexpected character {c!r}", i)

    def _emit(self, kind: str, start: int, end: int, value: Any = None) -> Token:
        self.pos = end
        return Token(kind, self.text[start:end], start, end, value)

    def _scan(self, i: int, chars: set[str]) -> int:
        text = self.text
        while i < len(text) and text[i] in chars:
            i += 1
        return i

    def _skip_space_and_comments(self) -> None:
        text, i = self.text, self.pos
        while i < len(text):
            if text[i] in " \t\r\n":
                i += 1
            elif text.startswith("//", i):
                nl = text.find("\n", i)
                i = len(text) if nl < 0 else nl + 1
            else:
                break
        self.pos = i

    def _sigil_id(self, kind: str, i: int, chars: set[str]) -> Token:
        end = self._scan(i + 1, chars)
        name = self.text[i + 1:end]
        if not name:
            raise self.error(f"expected a name after {self.text[i]!r}", i)
        if kind in ("percent", "caret") and name[0].isdigit() and not name.isdigit():
            raise self.error(f"invalid name {self.text[i]}{name}: names start with a letter or "
                             f"one of _$.- unless they are all digits", i)
        return self._emit(kind, i, end, name)

    def _number(self, i: int) -> Token:
        text = self.text
        if text.startswith(("0x", "0X"), i) and i + 2 < len(text) and text[i + 2] in _HEX_DIGITS:
            end = self._scan(i + 2, _HEX_DIGITS)
            return self._emit("hex", i, end, int(text[i + 2:end], 16))
        end = self._scan(i, set("0123456789"))
        is_float = False
        if end < len(text) and text[end] == ".":
            is_float = True
            end = self._scan(end + 1, set("0123456789"))
        if end < len(text) and text[end] in "eE":
            j = end + 1
            if j < len(text) and text[j] in "+-":
                j += 1
            if j < len(text) and text[j].isdigit():
                is_float = True
                end = self._scan(j, set("0123456789"))
        if is_float:
            return self._emit("float", i, end, float(text[i:end]))
        return self._emit("int", i, end, int(text[i:end]))

    def _string(self, start: int) -> Token:
        """A string literal with MLIR escapes: \\" \\\\ \\n \\t and \\XX (a hex byte)."""
        text, n = self.text, len(self.text)
        out = bytearray()
        i = start + 1
        while True:
            quote = text.find('"', i)
            stop = n if quote < 0 else quote
            for special in ("\\", "\n"):
                k = text.find(special, i, stop)
                if k >= 0:
                    stop = min(stop, k)
            out += text[i:stop].encode("utf-8", "surrogatepass")
            i = stop
            if i >= n or text[i] == "\n":
                raise self.error("unterminated string", start)
            if text[i] == '"':
                break
            i = self._escape(i, out)
        try:
            value = bytes(out).decode("utf-8", "surrogatepass")
        except UnicodeDecodeError:
            raise self.error("string is not valid UTF-8", start) from None
        return self._emit("string", start, i + 1, value)

    def _escape(self, i: int, out: bytearray) -> int:
        text = self.text
        nxt = text[i + 1:i + 2]
        simple = {'"': b'"', "\\": b"\\", "n": b"\n", "t": b"\t"}
        if nxt in simple:
            out += simple[nxt]
            return i + 2
        pair = text[i + 1:i + 3]
        if len(pair) == 2 and all(c in _HEX_DIGITS for c in pair):
            out.append(int(pair, 16))
            return i + 3
        raise self.error("invalid escape in string: use \\\" \\\\ \\n \\t or \\XX (two hex digits)", i)


# --------------------------------------------------------------------------- parsed pieces

@dataclass
class _Attr:
    """A parsed attribute value before it is checked against the kind its op declares.
    `tag` is bool, int, float, str, list, array, dense, type or unit."""

    tag: str
    value: Any
    token: Token

    def describe(self) -> str:
        if self.tag == "array":
            return f"array<{self.value[0].ir_name}: ...>"
        if self.tag == "type":
            v = self.value
            return f"the type {v.ir_name if isinstance(v, DType) else format_type(v)}"
        return {"bool": "a bool", "int": "an integer", "float": "a float", "str": "a string",
                "list": "a list [...]", "dense": "a dense<...> tensor",
                "unit": "no value"}[self.tag]


class _Lit(NamedTuple):
    """A scalar literal inside ``dense<...>`` or ``array<...>``: `token` is the number or
    true/false, `start` the first token (the minus sign of a negative number)."""

    token: Token
    negative: bool
    start: Token


class _ListLit(NamedTuple):
    open: Token
    items: list


class _Scope:
    """SSA names visible in a block: its own and those of the enclosing blocks."""

    def __init__(self, parent: _Scope | None) -> None:
        self.parent = parent
        self.values: dict[str, list[Value]] = {}

    def lookup(self, name: str) -> list[Value] | None:
        scope: _Scope | None = self
        while scope is not None:
            if name in scope.values:
                return scope.values[name]
            scope = scope.parent
        return None


@dataclass
class _Block:
    """The graph a block builds, its SSA scope, the node/arg names it used and the
    control dependencies to resolve once all its nodes exist."""

    graph: Graph
    scope: _Scope
    names: set[str] = field(default_factory=set)
    controls: list[tuple[Node, tuple[str, ...], Token]] = field(default_factory=list)


@dataclass
class _OpText:
    """The pieces of one generic operation, as parsed."""

    start: Token
    name_token: Token
    opdef: OpDef
    results: list[tuple[Token, int]]
    operands: list[tuple[Value, Token]]
    regions: list[Graph]
    attrs: list[tuple[str, Token, _Attr]]
    in_types: list[Type]
    out_types: list[Type]
    type_token: Token
    loc_name: str | None
    loc: SourceLoc | None
    loc_token: Token | None


@dataclass
class _Terminator:
    operands: list[tuple[Value, Token]]
    attrs: list[tuple[str, Token, _Attr]]
    token: Token


# --------------------------------------------------------------------------- parser

class _Parser:
    def __init__(self, text: str, source_name: str) -> None:
        self.lex = _Lexer(text, source_name)
        self.tok = self.lex.next()
        self.node_tokens: dict[str, Token] = {}

    # -- token helpers
    def advance(self) -> Token:
        tok = self.tok
        self.tok = self.lex.next()
        return tok

    def at(self, kind: str) -> bool:
        return self.tok.kind == kind

    def at_ident(self, *words: str) -> bool:
        return self.tok.kind == "ident" and self.tok.text in words

    def accept(self, kind: str) -> Token | None:
        return self.advance() if self.tok.kind == kind else None

    def expect(self, kind: str, what: str) -> Token:
        if self.tok.kind != kind:
            raise self.error(f"expected {what}, found {_describe(self.tok)}")
        return self.advance()

    def expect_close(self, open_tok: Token, what: str) -> Token:
        if self.tok.kind != "}":
            line, _ = self.lex.location(open_tok.start)
            raise self.error(f"expected '}}' to close {what} opened at line {line}, "
                             f"found {_describe(self.tok)}")
        return self.advance()

    def error(self, message: str, tok: Token | None = None) -> ParseError:
        return self.lex.error(message, (tok or self.tok).start)

    # -- module and functions
    def module(self) -> list[tuple[Graph, Token]]:
        functions = []
        if self.at_ident("module", "builtin.module"):
            open_tok = self.advance()
            self.accept("at")
            if self.at_ident("attributes"):
                self.advance()
                self.attr_dict()
            brace = self.expect("{", f"'{{' to open the {open_tok.text}")
            while self.at_ident("func.func"):
                functions.append(self.function())
            self.expect_close(brace, "the module")
            self.optional_loc()
        else:
            while self.at_ident("func.func"):
                functions.append(self.function())
        if not self.at("eof"):
            raise self.error(f"expected 'func.func', found {_describe(self.tok)}")
        return functions

    def function(self) -> tuple[Graph, Token]:
        start = self.advance()
        symbol = self.expect("at", "a function name such as @main")
        block = _Block(Graph(symbol.value), _Scope(None))
        self.expect("(", "'(' before the function arguments")
        self.block_args(block)
        result_types: list[Type] = []
        if self.accept("->"):
            result_types = self.result_types()
        names_attr = None
        if self.at_ident("attributes"):
            self.advance()
            for key, key_tok, value in self.attr_dict():
                if key != "tw.result_names":
                    raise self.error(f"unknown function attribute '{key}' (only tw.result_names)",
                                     key_tok)
                names_attr = value
        brace = self.expect("{", "'{' to open the function body")
        term = self.block_body(block, "func.return")
        self.expect_close(brace, f"the body of @{block.graph.name}")
        self.optional_loc()
        if term.attrs:
            raise self.error("func.return takes no attributes", term.attrs[0][1])
        self.check_operand_types(term.operands, result_types, term.token,
                                 "the function's result types")
        self.set_results(block.graph, [v for v, _ in term.operands], names_attr)
        self.verify(block.graph, start)
        return block.graph, start

    def block_args(self, block: _Block) -> None:
        """``%a: T loc(...), ...)`` up to and including the closing parenthesis."""
        if self.accept(")"):
            return
        while True:
            tok = self.expect("percent", "an argument such as %x: tensor<f32>")
            self.expect(":", "':' and the argument's type")
            arg_type = self.value_type()
            if self.at("{"):
                raise self.error("argument attributes are not supported; name an argument "
                                 "with loc(\"name\")")
            loc_name, _, loc_tok = self.optional_loc()
            name = loc_name
            if name is None:
                name = f"arg{len(block.graph.args)}" if tok.value.isdigit() else tok.value
            elif name in block.names:
                raise self.error(f"duplicate argument name '{name}'", loc_tok)
            value = block.graph.add_arg(arg_type, name)
            block.names.add(block.graph.arg_names[-1])
            self.define(block.scope, tok, [value])
            if self.accept(","):
                continue
            self.expect(")", "',' or ')' after an argument")
            return

    def set_results(self, graph: Graph, values: list[Value], names_attr: _Attr | None) -> None:
        if names_attr is None:
            graph.set_results(values)
            return
        names = self.coerce(names_attr, "strs", "tw.result_names")
        if len(names) != len(values):
            raise self.error(f"tw.result_names has {len(names)} names for {len(values)} results",
                             names_attr.token)
        graph.set_results(values, list(names))

    def verify(self, graph: Graph, start: Token) -> None:
        """Whole-graph invariants (cycles through control edges and the like)."""
        try:
            verify(graph)
        except VerificationError as e:
            prefix = f"node '{e.node}': " if e.node else ""
            raise self.error(prefix + e.message, self.node_tokens.get(e.node or "", start)) from None

    # -- blocks and regions
    def block_body(self, block: _Block, terminator: str) -> _Terminator:
        """Operations up to and including the terminator; resolves control dependencies."""
        while True:
            if self.at("}"):
                raise self.error(f"the block must end with \"{terminator}\"(...)")
            if self.at("eof"):
                raise self.error("unexpected end of input: expected an operation or '}'")
            term = self.operation(block, terminator)
            if term is not None:
                break
        by_name = {n.name: n for n in block.graph.nodes}
        for node, names, tok in block.controls:
            missing = [n for n in names if n not in by_name]
            if missing:
                raise self.error(f"control dependency '{missing[0]}' of node '{node.name}' is not "
                                 f"a node of this graph", tok)
            node.control_inputs = [by_name[n] for n in names]
        return term

    def region(self, outer: _Scope) -> Graph:
        brace = self.expect("{", "'{' to open a region")
        block = _Block(Graph(), _Scope(outer))
        if self.at("caret"):
            self.advance()
            if self.accept("("):
                self.block_args(block)
            self.expect(":", "':' after the block label")
        term = self.block_body(block, "tw.yield")
        if self.at("caret"):
            raise self.error("a region may hold only one block")
        self.expect_close(brace, "the region")
        names_attr = None
        for key, key_tok, value in term.attrs:
            if key == "tw.graph_name":
                block.graph.name = self.coerce(value, "str", key)
            elif key == "tw.result_names":
                names_attr = value
            else:
                raise self.error(f"unknown tw.yield attribute '{key}' (known: tw.graph_name, "
                                 f"tw.result_names)", key_tok)
        self.set_results(block.graph, [v for v, _ in term.operands], names_attr)
        return block.graph

    # -- operations
    def operation(self, block: _Block, terminator: str) -> _Terminator | None:
        """One operation: builds its node, or returns the block's terminator."""
        start = self.tok
        results = self.result_names()
        if self.at_ident("return", "func.return"):
            if terminator != "func.return" or results:
                raise self.error("'return' is only allowed at the end of a function body")
            return self.custom_return(block.scope)
        name_tok = self.expect("string", "an operation such as \"tw.Identity\"(%x)")
        if name_tok.value in ("func.return", "tw.yield"):
            if name_tok.value != terminator:
                raise self.error(f"\"{name_tok.value}\" is not allowed here: this block ends with "
                                 f"\"{terminator}\"", name_tok)
            if results:
                raise self.error(f"\"{terminator}\" has no results", results[0][0])
            return self.generic_terminator(block.scope, name_tok)
        op = self.generic_op(block.scope, start, name_tok, results)
        self.build_node(block, op)
        return None

    def result_names(self) -> list[tuple[Token, int]]:
        """``%a, %b:2 =`` -> [(token, count), ...] (empty when the op binds no results)."""
        results: list[tuple[Token, int]] = []
        while self.at("percent"):
            tok = self.advance()
            count = 1
            if self.accept(":"):
                count_tok = self.expect("int", "a result count after ':'")
                count = count_tok.value
                if count < 1:
                    raise self.error("a result group holds at least one result", count_tok)
            results.append((tok, count))
            if not self.accept(","):
                break
        if results:
            self.expect("=", "'=' after the result names")
        return results

    def generic_op(self, scope: _Scope, start: Token, name_tok: Token,
                   results: list[tuple[Token, int]]) -> _OpText:
        opdef = self.lookup_op(name_tok)
        operands = self.operand_list(scope)
        regions = self.region_list(scope) if self.at("(") else []
        attrs = self.attr_dict() if self.at("{") else []
        self.expect(":", "':' and the op's type, e.g. (tensor<f32>) -> tensor<f32>")
        type_tok = self.tok
        in_types, out_types = self.function_type()
        loc_name, loc, loc_tok = self.optional_loc()
        return _OpText(start, name_tok, opdef, results, operands, regions, attrs, in_types,
                       out_types, type_tok, loc_name, loc, loc_tok)

    def lookup_op(self, name_tok: Token) -> OpDef:
        name = name_tok.value
        if not name.startswith("tw."):
            raise self.error(f"unknown op '{name}': tensorweave ops are spelled \"tw.Name\"", name_tok)
        try:
            return get_op(name[3:])
        except VerificationError:
            raise self.error(f"unknown op '{name}'", name_tok) from None

    def operand_list(self, scope: _Scope) -> list[tuple[Value, Token]]:
        self.expect("(", "'(' before the operands")
        operands: list[tuple[Value, Token]] = []
        if self.accept(")"):
            return operands
        while True:
            tok = self.expect("percent", "an operand such as %x")
            operands.append((self.use(scope, tok), tok))
            if self.accept(","):
                continue
            self.expect(")", "',' or ')' after an operand")
            return operands

    def use(self, scope: _Scope, tok: Token) -> Value:
        """The value `tok` (``%name``, optionally followed by ``#index``) refers to."""
        values = scope.lookup(tok.value)
        if values is None:
            raise self.error(f"use of undefined value '%{tok.value}'", tok)
        if self.at("hash"):
            index_tok = self.advance()
            if not index_tok.value.isdigit():
                raise self.error("expected a result index such as #0", index_tok)
            index = int(index_tok.value)
            if index >= len(values):
                raise self.error(f"'%{tok.value}' has {len(values)} results, there is no "
                                 f"#{index}", index_tok)
            return values[index]
        if len(values) != 1:
            raise self.error(f"'%{tok.value}' names {len(values)} results; pick one with "
                             f"%{tok.value}#0 ... #{len(values) - 1}", tok)
        return values[0]

    def define(self, scope: _Scope, tok: Token, values: list[Value]) -> None:
        if scope.lookup(tok.value) is not None:
            raise self.error(f"redefinition of SSA value '%{tok.value}'", tok)
        scope.values[tok.value] = values

    def region_list(self, scope: _Scope) -> list[Graph]:
        self.expect("(", "'(' before the regions")
        regions = []
        while True:
            regions.append(self.region(scope))
            if self.accept(","):
                continue
            self.expect(")", "',' or ')' after a region")
            return regions

    def generic_terminator(self, scope: _Scope, name_tok: Token) -> _Terminator:
        operands = self.operand_list(scope)
        attrs = self.attr_dict() if self.at("{") else []
        self.expect(":", "':' and the type, e.g. (tensor<f32>) -> ()")
        type_tok = self.tok
        in_types, out_types = self.function_type()
        if out_types:
            raise self.error(f"\"{name_tok.value}\" has no results; its type ends in -> ()", type_tok)
        self.check_operand_types(operands, in_types, type_tok, "the operand types")
        self.optional_loc()
        return _Terminator(operands, attrs, name_tok)

    def custom_return(self, scope: _Scope) -> _Terminator:
        """``return %a, %b : T0, T1`` (how mlir-opt prints func.return)."""
        tok = self.advance()
        operands: list[tuple[Value, Token]] = []
        if self.at("percent"):
            while True:
                use_tok = self.expect("percent", "a returned value such as %x")
                operands.append((self.use(scope, use_tok), use_tok))
                if not self.accept(","):
                    break
            self.expect(":", "':' and the returned types")
            types = [self.value_type()]
            while self.accept(","):
                types.append(self.value_type())
            self.check_operand_types(operands, types, tok, "the returned types")
        self.optional_loc()
        return _Terminator(operands, [], tok)

    def check_operand_types(self, operands: list[tuple[Value, Token]], types: list[Type],
                            tok: Token, what: str) -> None:
        if len(types) != len(operands):
            raise self.error(f"{len(operands)} operands but {what} list {len(types)} types", tok)
        for (value, use_tok), declared in zip(operands, types):
            if value.type != declared:
                raise self.error(f"'{use_tok.text}' has type {format_type(value.type)}, but "
                                 f"{what} say {format_type(declared)}", use_tok)

    # -- building nodes
    def build_node(self, block: _Block, op: _OpText) -> None:
        self.check_operand_types(op.operands, op.in_types, op.type_token, "the op's operand types")
        declared = sum(count for _, count in op.results)
        if declared != len(op.out_types):
            at = op.results[0][0] if op.results else op.name_token
            raise self.error(f"{declared} result names for {len(op.out_types)} results in the op's "
                             f"type", at)
        attrs, device, assigned, controls = self.split_attrs(op)
        name = op.loc_name
        if name is not None and name in block.names:
            raise self.error(f"duplicate node name '{name}'", op.loc_token)
        if name is None and op.results and not op.results[0][0].value.isdigit():
            name = op.results[0][0].value
        try:
            node = block.graph.add_node(op.opdef.name, [v for v, _ in op.operands], attrs,
                                        name=name, device=device, loc=op.loc,
                                        output_types=op.out_types, regions=op.regions)
        except TensorWeaveError as e:
            raise self.error(f"tw.{op.opdef.name}: {e.message}", op.start) from None
        node.assigned_device = assigned
        block.names.add(node.name)
        self.node_tokens.setdefault(node.name, op.start)
        self.check_inferred_types(node, op)
        if controls is not None:
            block.controls.append((node, *controls))
        outputs = iter(node.outputs)
        for tok, count in op.results:
            self.define(block.scope, tok, [next(outputs) for _ in range(count)])

    def split_attrs(self, op: _OpText) -> tuple[dict, str | None, str | None, tuple | None]:
        """The op's own attributes (checked against their declared kinds), the device, the
        assigned device and the control dependencies (names and token)."""
        specs = op.opdef.attrs
        attrs: dict[str, Any] = {}
        device = assigned = controls = None
        for key, key_tok, value in op.attrs:
            where = f"attribute '{key}' of tw.{op.opdef.name}"
            if key in specs:
                attrs[key] = self.coerce(value, specs[key].kind, where)
            elif key.startswith("_"):
                attrs[key] = self.coerce(value, "any", where)
            elif key == "device":
                device = self.coerce(value, "str", where)
            elif key == "tw.assigned_device":
                assigned = self.coerce(value, "str", where)
            elif key == "tw.control_deps":
                controls = (self.coerce(value, "strs", where), value.token)
            else:
                known = ", ".join(specs) or "none"
                raise self.error(f"tw.{op.opdef.name} has no attribute '{key}' (known: {known})",
                                 key_tok)
        return attrs, device, assigned, controls

    def check_inferred_types(self, node: Node, op: _OpText) -> None:
        """The declared result types must agree with the op's type inference."""
        label = f"tw.{op.opdef.name}"
        try:
            inferred = op.opdef.infer_types([v.type for v in node.inputs], node.attrs, node.regions)
        except TensorWeaveError as e:
            raise self.error(f"{label}: type inference fails: {e.message}", op.start) from None
        if len(inferred) != len(node.outputs):
            raise self.error(f"{label} has {len(inferred)} results, the text declares "
                             f"{len(node.outputs)}", op.start)
        for i, (t, out) in enumerate(zip(inferred, node.outputs)):
            if not _compatible(t, out.type):
                raise self.error(f"{label} result {i} is declared {format_type(out.type)} but type "
                                 f"inference gives {format_type(t)}", op.start)

    # -- types
    def function_type(self) -> tuple[list[Type], list[Type]]:
        self.expect("(", "'(' to start the op's type, e.g. (tensor<f32>) -> tensor<f32>")
        ins = self.type_list(")")
        self.expect("->", "'->' in the op's type")
        return ins, self.result_types()

    def result_types(self) -> list[Type]:
        if self.accept("("):
            return self.type_list(")")
        return [self.value_type()]

    def type_list(self, closer: str) -> list[Type]:
        types: list[Type] = []
        if self.accept(closer):
            return types
        while True:
            types.append(self.value_type())
            if self.accept(","):
                continue
            self.expect(closer, f"',' or '{closer}' in a type list")
            return types

    def value_type(self) -> Type:
        """A tensor or resource type."""
        tok = self.tok
        t = self.any_type()
        if isinstance(t, DType):
            raise self.error(f"expected a tensor or resource type, found the element type "
                             f"{tok.text} (a scalar is tensor<{tok.text}>)", tok)
        return t

    def any_type(self) -> Type | DType:
        """A tensor type, ``!tw.resource[<tensor<...>>]`` or an element type."""
        tok = self.tok
        if self.at_ident("tensor"):
            return self.tensor_type()
        if tok.kind == "bang":
            self.advance()
            if tok.value != "tw.resource":
                raise self.error(f"unknown type '!{tok.value}'", tok)
            if not self.accept("<"):
                return ResourceType()
            inner_tok = self.tok
            inner = self.value_type()
            if not isinstance(inner, TensorType):
                raise self.error("a variable resource holds a tensor type", inner_tok)
            self.expect(">", "'>' to close !tw.resource<...>")
            return ResourceType(inner)
        if tok.kind == "ident" and tok.text in _ELEMENT_TYPES:
            self.advance()
            return _ELEMENT_TYPES[tok.text]
        raise self.error(f"expected a type, found {_describe(tok)}")

    def tensor_type(self) -> TensorType:
        """``tensor<?x784xf32>``: scanned as raw text, since ``0x5`` and ``2xf32`` are not
        tokens of their own."""
        text = self.lex.text
        i = self.tok.end
        while i < len(text) and text[i] in " \t":
            i += 1
        if i >= len(text) or text[i] != "<":
            raise self.lex.error("expected '<' after 'tensor'", i)
        close = i + 1
        while close < len(text) and text[close] not in _TENSOR_BODY_STOP:
            close += 1
        if close >= len(text) or text[close] != ">":
            raise self.lex.error("expected '>' to close the tensor type", close)
        shape, dtype = self._tensor_body(text[i + 1:close], i + 1)
        self.lex.pos = close + 1
        self.tok = self.lex.next()
        return TensorType(dtype, shape)

    def _tensor_body(self, body: str, offset: int) -> tuple[tuple | None, DType]:
        unranked = body.lstrip().startswith("*")
        if unranked:  # tensor<*xf32>: an unknown rank, then the element type
            star = body.index("*")
            if body[star + 1:].lstrip()[:1] != "x":
                raise self.lex.error("expected 'x' and an element type after '*' in an "
                                     "unranked tensor type (tensor<*xf32>)", offset + star + 1)
            cut = body.index("x", star) + 1
            body, offset = body[cut:], offset + cut
        elif "*" in body:
            raise self.lex.error("'*' (an unknown rank) must be the whole shape of a tensor "
                                 "type, e.g. tensor<*xf32>; write ? for an unknown dimension",
                                 offset + body.index("*"))
        pieces, pos = [], offset
        for piece in body.split("x"):
            pieces.append((piece, pos))
            pos += len(piece) + 1
        element, element_pos = pieces.pop()
        dtype = _ELEMENT_TYPES.get(element.strip())
        if dtype is None:
            known = ", ".join(sorted(_ELEMENT_TYPES))
            raise self.lex.error(f"unknown element type '{element.strip()}' (known: {known})",
                                 element_pos)
        dims: list[int | None] = []
        for piece, piece_pos in pieces:
            s = piece.strip()
            if s == "?":
                dims.append(None)
            elif s.isascii() and s.isdigit():
                dims.append(int(s))
            else:
                raise self.lex.error(f"invalid dimension '{s}' in a tensor type (a size or ?)",
                                     piece_pos)
        if unranked and dims:
            raise self.lex.error("an unranked tensor type has no dimensions: tensor<*xf32>",
                                 offset)
        return (None if unranked else tuple(dims)), dtype

    # -- locations
    def optional_loc(self) -> tuple[str | None, SourceLoc | None, Token | None]:
        """``loc(...)`` if present: (name, source location, token)."""
        if not self.at_ident("loc"):
            return None, None, None
        tok = self.advance()
        self.expect("(", "'(' after loc")
        name, loc = self.loc_body()
        self.expect(")", "')' to close loc(...)")
        return name, loc, tok

    def loc_body(self) -> tuple[str | None, SourceLoc | None]:
        tok = self.tok
        if self.at_ident("unknown"):
            self.advance()
            return None, None
        if tok.kind == "hash":
            raise self.error("location aliases such as #loc1 are not supported; with mlir-opt, "
                             "print with --mlir-print-local-scope")
        s = self.expect("string", "a location: \"name\", \"name\"(\"file\":line:col) or "
                                  "\"file\":line:col")
        if self.accept(":"):
            line = self.expect("int", "a line number").value
            self.expect(":", "':' and a column number")
            column = self.expect("int", "a column number").value
            return None, SourceLoc(s.value, line, column)
        if self.accept("("):
            _, inner = self.loc_body()
            self.expect(")", "')' to close the named location")
            return s.value, inner
        return s.value, None

    # -- attributes
    def attr_dict(self) -> list[tuple[str, Token, _Attr]]:
        brace = self.expect("{", "'{' to open the attributes")
        entries: list[tuple[str, Token, _Attr]] = []
        if self.accept("}"):
            return entries
        seen: set[str] = set()
        while True:
            key_tok = self.tok
            if key_tok.kind not in ("ident", "string"):
                raise self.error(f"expected an attribute name, found {_describe(key_tok)}")
            self.advance()
            key = key_tok.text if key_tok.kind == "ident" else key_tok.value
            if key in seen:
                raise self.error(f"duplicate attribute '{key}'", key_tok)
            seen.add(key)
            value = self.attr_value() if self.accept("=") else _Attr("unit", True, key_tok)
            entries.append((key, key_tok, value))
            if self.accept(","):
                continue
            self.expect_close(brace, "the attribute dictionary")
            return entries

    def attr_value(self) -> _Attr:
        tok = self.tok
        if self.at_ident("true", "false"):
            self.advance()
            return _Attr("bool", tok.text == "true", tok)
        if tok.kind in ("int", "float", "hex", "-"):
            return self.number_attr()
        if tok.kind == "string":
            self.advance()
            return _Attr("str", tok.value, tok)
        if tok.kind == "[":
            return self.list_attr()
        if self.at_ident("array"):
            return self.dense_array_attr()
        if self.at_ident("dense"):
            return self.dense_attr()
        if self.at_ident("unit"):
            self.advance()
            return _Attr("unit", True, tok)
        if tok.kind == "hash":
            if tok.value == "tw.unprintable":
                raise self.error("this attribute was printed from a value with no text form", tok)
            raise self.error(f"unsupported attribute '#{tok.value}'", tok)
        if tok.kind == "bang" or self.at_ident("tensor", *_ELEMENT_TYPES):
            return _Attr("type", self.any_type(), tok)
        raise self.error(f"expected an attribute value, found {_describe(tok)}")

    def number_attr(self) -> _Attr:
        """``3``, ``-3 : i32``, ``1.5 : f64``, ``0x7FF0000000000000 : f64``."""
        start = self.tok
        negative = self.accept("-") is not None
        num = self.tok
        if num.kind not in ("int", "float", "hex"):
            raise self.error(f"expected a number after '-', found {_describe(num)}")
        self.advance()
        dtype = None
        if self.accept(":"):
            type_tok = self.tok
            if self.at_ident("index"):
                self.advance()
            else:
                dtype = self.any_type()
                if not isinstance(dtype, DType):
                    raise self.error("expected an element type such as i64 or f64", type_tok)
        if dtype is not None and dtype.is_bool:
            if num.kind != "int" or negative or num.value not in (0, 1):
                raise self.error("an i1 value is 0 or 1 (or true/false)", start)
            return _Attr("bool", bool(num.value), start)
        if num.kind == "float" or (dtype is not None and dtype.is_floating):
            lit = _Lit(num, negative, start)
            return _Attr("float", self.literal_python(lit, dtype or _ELEMENT_TYPES["f64"]), start)
        value = -num.value if negative else num.value
        if dtype is not None:
            self.check_int_range(value, dtype, start)
        return _Attr("int", value, start)

    def list_attr(self) -> _Attr:
        bracket = self.advance()
        items: list[_Attr] = []
        if self.accept("]"):
            return _Attr("list", items, bracket)
        while True:
            items.append(self.attr_value())
            if self.accept(","):
                continue
            self.expect("]", "',' or ']' in a list")
            return _Attr("list", items, bracket)

    def dense_array_attr(self) -> _Attr:
        """``array<i64: 1, 2>`` / ``array<f64: 0.5>`` / ``array<i64>``."""
        tok = self.advance()
        self.expect("<", "'<' after array")
        type_tok = self.tok
        dtype = self.any_type()
        if not isinstance(dtype, DType):
            raise self.error("expected an element type such as i64 or f64", type_tok)
        values = []
        if self.accept(":"):
            while True:
                values.append(self.literal_python(self.literal(), dtype))
                if not self.accept(","):
                    break
        self.expect(">", "'>' to close array<...>")
        return _Attr("array", (dtype, values), tok)

    def dense_attr(self) -> _Attr:
        """``dense<...> : tensor<...>``: a splat, nested lists, ``"0x..."`` or empty."""
        tok = self.advance()
        self.expect("<", "'<' after dense")
        body: Any = None
        if self.at("string"):
            body = self.advance()
        elif not self.at(">"):
            body = self.dense_tree()
        self.expect(">", "'>' to close dense<...>")
        self.expect(":", "':' and the tensor type after dense<...>")
        type_tok = self.tok
        t = self.value_type()
        if not isinstance(t, TensorType) or not t.is_fully_defined:
            raise self.error("dense<...> needs a tensor type with known dimensions", type_tok)
        return _Attr("dense", self.build_dense(body, t, tok), tok)

    def dense_tree(self) -> _Lit | _ListLit:
        if not self.at("["):
            return self.literal()
        bracket = self.advance()
        items: list = []
        if self.accept("]"):
            return _ListLit(bracket, items)
        while True:
            items.append(self.dense_tree())
            if self.accept(","):
                continue
            self.expect("]", "',' or ']' in a dense literal")
            return _ListLit(bracket, items)

    def literal(self) -> _Lit:
        start = self.tok
        if self.at_ident("true", "false") or self.at("string"):  # (a string: tensor<string>)
            return _Lit(self.advance(), False, start)
        negative = self.accept("-") is not None
        if self.tok.kind not in ("int", "float", "hex"):
            raise self.error(f"expected a number, true or false, found {_describe(self.tok)}")
        return _Lit(self.advance(), negative, start)

    def build_dense(self, body: Any, t: TensorType, tok: Token) -> np.ndarray:
        dtype, shape = t.dtype, t.shape
        size = math.prod(shape)
        if dtype.is_string:
            return self.build_strings(body, t, tok)
        uint = _UINT_BY_SIZE[dtype.np.itemsize]
        if body is None:
            if size:
                raise self.error(f"dense<> is empty but {t.mlir()} has {size} elements", tok)
            return np.zeros(shape, dtype.np)
        if isinstance(body, Token):
            return self.dense_hex(body, t)
        if isinstance(body, _Lit):
            bits = self.element_bits(body, dtype)
            return np.full(shape, bits, dtype=uint).view(dtype.np)
        flat: list[int] = []
        self.flatten_dense(body, t, 0, flat)
        return np.array(flat, dtype=uint).view(dtype.np).reshape(shape)

    def build_strings(self, body: Any, t: TensorType, tok: Token) -> np.ndarray:
        """A string tensor from ``dense<"text">`` (a splat), nested lists of quoted strings,
        or ``dense<>``; surrogate escapes become the bytes they stand for
        (`printer._string_body`)."""
        size = math.prod(t.shape)
        out = np.empty(t.shape, object)
        if body is None:
            if size:
                raise self.error(f"dense<> is empty but {t.mlir()} has {size} elements", tok)
            return out
        if isinstance(body, Token):
            body = _Lit(body, False, body)
        if isinstance(body, _Lit):
            out.reshape(-1)[:] = [self.string_element(body)] * size
            return out
        flat: list[Any] = []
        self.flatten_dense(body, t, 0, flat)
        out.reshape(-1)[:] = flat
        return out

    def string_element(self, lit: _Lit) -> bytes:
        if lit.token.kind != "string":
            raise self.error(f"expected a quoted string, found {_describe(lit.token)}",
                             lit.start)
        return lit.token.value.encode("utf-8", "surrogateescape")

    def flatten_dense(self, node: _Lit | _ListLit, t: TensorType, depth: int, out: list[int]) -> None:
        """Check that nested lists match the shape; append each element's bits."""
        if depth == t.rank:
            if not isinstance(node, _Lit):
                raise self.error(f"dense literal nests deeper than the rank {t.rank} of {t.mlir()}",
                                 node.open)
            out.append(self.string_element(node) if t.dtype.is_string
                       else self.element_bits(node, t.dtype))
            return
        if isinstance(node, _Lit):
            raise self.error(f"expected a list of {t.shape[depth]} elements here for {t.mlir()}",
                             node.start)
        if len(node.items) != t.shape[depth]:
            raise self.error(f"dense literal has {len(node.items)} elements at depth {depth + 1}, "
                             f"{t.mlir()} needs {t.shape[depth]}", node.open)
        for item in node.items:
            self.flatten_dense(item, t, depth + 1, out)

    def dense_hex(self, tok: Token, t: TensorType) -> np.ndarray:
        """``dense<"0x...">``: raw little-endian bytes, or one element for a splat."""
        s = tok.value
        if not s.startswith(("0x", "0X")):
            raise self.error("the string in dense<\"...\"> must be hex data \"0x...\"", tok)
        if t.dtype.is_bool:
            raise self.error("write bool tensors as lists, e.g. dense<[true, false]>", tok)
        try:
            data = bytes.fromhex(s[2:])
        except ValueError:
            raise self.error("invalid hex data in dense<\"0x...\">", tok) from None
        item, size = t.dtype.np.itemsize, math.prod(t.shape)
        if len(data) not in (item * size, item):
            raise self.error(f"hex data has {len(data)} bytes; {t.mlir()} needs {item * size} "
                             f"(or {item} for a splat)", tok)
        arr = np.frombuffer(data, dtype=t.dtype.np)
        if sys.byteorder == "big":
            arr = arr.byteswap()
        if len(data) == item * size:
            return arr.reshape(t.shape).copy()
        bits = uint_view(arr)
        return np.full(t.shape, bits[0], dtype=bits.dtype).view(t.dtype.np)

    def element_bits(self, lit: _Lit, dtype: DType) -> int:
        """The bit pattern (as an unsigned int) of one literal of element type `dtype`."""
        tok, width = lit.token, dtype.np.itemsize * 8
        if tok.kind == "string":
            raise self.error(f"a {dtype.ir_name} element is a number, not a string", lit.start)
        if tok.kind == "ident":
            if not dtype.is_bool:
                raise self.error(f"{tok.text} is not a {dtype.ir_name} value", lit.start)
            return int(tok.text == "true")
        if dtype.is_bool:
            if tok.kind == "int" and not lit.negative and tok.value in (0, 1):
                return tok.value
            raise self.error("an i1 element is true or false", lit.start)
        if dtype.is_floating:
            if tok.kind == "hex":
                if lit.negative:
                    raise self.error("a hex float bit pattern has no sign", lit.start)
                if tok.value >> width:
                    raise self.error(f"{tok.text} does not fit in {width} bits", lit.start)
                return tok.value
            return float_text_bits(("-" if lit.negative else "") + tok.text, dtype.np)
        if tok.kind == "float":
            raise self.error(f"{dtype.ir_name} elements are integers, found {tok.text}", lit.start)
        value = -tok.value if lit.negative else tok.value
        self.check_int_range(value, dtype, lit.start)
        return value & ((1 << width) - 1)

    def literal_python(self, lit: _Lit, dtype: DType) -> Any:
        """One literal as a Python bool, int or float of element type `dtype` (exact)."""
        bits = self.element_bits(lit, dtype)
        scalar = np.array([bits], dtype=_UINT_BY_SIZE[dtype.np.itemsize]).view(dtype.np)[0]
        if dtype.is_bool:
            return bool(scalar)
        return float(scalar) if dtype.is_floating else int(scalar)

    def check_int_range(self, value: int, dtype: DType, tok: Token) -> None:
        if dtype.is_integer:
            info = np.iinfo(dtype.np)
            if not info.min <= value <= info.max:
                raise self.error(f"{value} is out of range for {dtype.ir_name}", tok)

    # -- attribute kinds
    def coerce(self, attr: _Attr, kind: str, where: str) -> Any:
        """The Python value of `attr` for registry kind `kind`, or a ParseError."""
        tag, value = attr.tag, attr.value
        if kind == "any":
            return _any_value(attr)
        if kind == "bool" and tag in ("bool", "unit"):
            return bool(value)
        if kind == "int" and tag == "int":
            return value
        if kind == "float" and tag in ("float", "int"):
            return float(value)
        if kind == "str" and tag == "str":
            return value
        if kind == "dtype" and tag == "type" and isinstance(value, DType):
            return value
        if kind == "type" and tag == "type" and isinstance(value, Type):
            return value
        if kind == "tensor" and tag == "dense":
            return value
        if kind in ("shape", "ints", "floats", "strs"):
            items = self.sequence(attr, kind, where)
            if items is not None:
                return items
        raise self.error(f"{where} expects {_KIND_WANTS[kind]}, found {attr.describe()}", attr.token)

    def sequence(self, attr: _Attr, kind: str, where: str) -> tuple | None:
        """Kinds shape/ints/floats/strs from ``array<...>`` or ``[...]`` (None if neither)."""
        if attr.tag == "array":
            dtype, items = attr.value
            if kind == "strs" or dtype.is_bool or (kind != "floats" and not dtype.is_integer):
                return None
        elif attr.tag == "list":
            wanted = {"strs": ("str",), "floats": ("float", "int")}.get(kind, ("int",))
            for item in attr.value:
                if item.tag not in wanted:
                    raise self.error(f"{where} expects {_KIND_WANTS[kind]}, found "
                                     f"{item.describe()} in the list", item.token)
            items = [item.value for item in attr.value]
        else:
            return None
        if kind == "floats":
            return tuple(float(x) for x in items)
        if kind == "shape":
            if any(d < -1 for d in items):
                raise self.error(f"{where}: a dimension is >= 0, or -1 when unknown", attr.token)
            return tuple(None if d == -1 else d for d in items)
        return tuple(items)


def _any_value(attr: _Attr) -> Any:
    """An attribute of kind ``any`` (or a private ``_name`` one): by its spelling."""
    if attr.tag == "array":
        return tuple(attr.value[1])
    if attr.tag == "list":
        return tuple(_any_value(item) for item in attr.value)
    if attr.tag == "unit":
        return True
    return attr.value


def _compatible(inferred: Type, declared: Type) -> bool:
    """Declared types may refine inferred ones (passes refine shapes), as the verifier allows."""
    if isinstance(inferred, TensorType):
        return inferred.is_compatible_with(declared)
    if isinstance(inferred, ResourceType):
        if not isinstance(declared, ResourceType):
            return False
        a, b = inferred.value_type, declared.value_type
        return a is None or b is None or a.is_compatible_with(b)
    return inferred == declared


def _describe(tok: Token) -> str:
    if tok.kind == "eof":
        return "end of input"
    text = tok.text if len(tok.text) <= 40 else tok.text[:37] + "..."
    return f"'{text}'"
