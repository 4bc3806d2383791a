"""The IR text form: MLIR generic operation syntax (printer side).

`print_graph` writes a `Graph` as one ``func.func`` that the real MLIR tools accept with
``mlir-opt --allow-unregistered-dialect``; `tensorweave.compiler.parser` reads it back.
The spelling, in full:

Functions and regions
    ``func.func @name(%x: tensor<?x784xf32> loc("x"), ...) -> (T0, T1) attributes {...} {``
    then one line per node in ``graph.nodes`` order, then
    ``"func.return"(%a, %b) : (T0, T1) -> ()`` and ``}``. The symbol is quoted
    (``@"my fn"``) when it is not an MLIR bare identifier. Every argument carries its real
    name as an MLIR name location ``loc("name")``. ``graph.result_names`` are printed as
    ``attributes {tw.result_names = ["out0", ...]}`` unless they are the default
    ``result0, result1, ...``.

    A node with regions prints them between its operands and its attributes:
    ``"tw.While"(%a) ({ ^bb0(%arg: tensor<f32> loc("arg")): ... "tw.yield"(%v) : (tensor<f32>)
    -> () }, {...}) : ...``. Each region graph is one block: its args are the block
    arguments, its results the operands of the closing ``"tw.yield"``, which also carries
    ``tw.result_names`` (unless default) and ``tw.graph_name`` (unless the `Graph`
    constructor's default ``"main"``). Regions may use values of enclosing graphs.

Nodes
    ``%name = "tw.Op"(%in0, %in1) ({regions}) {attrs} : (T_in0, T_in1) -> T_out loc(...)``.
    SSA ids are derived from node names (characters outside ``[A-Za-z0-9_$.-]`` become
    ``_``, then ``_1``, ``_2``... keep them unique within the whole function, regions
    included). Multi-result nodes are ``%split:3 = ...``, used as ``%split#1``; nodes
    without results have no ``%id =``. The result type is ``()`` for none, ``T`` for one,
    ``(T0, T1)`` for several. Every node prints its name and source location as an MLIR
    location: ``loc("layer1/mat_mul")`` or ``loc("layer1/mat_mul"("model.py":13:0))``.

Attributes (printed sorted by name; bare names when they are MLIR identifiers, quoted
otherwise; attributes whose value is None are omitted, so the parser takes the op's
declared default)
    - the op's attributes, spelled by the kind the op declares (`registry.AttrSpec`):
      bool ``true``/``false``; int ``3 : i64``; float ``1.5 : f64`` (shortest decimal that
      round-trips, or for inf and NaN the hex bit pattern ``0x7FF0000000000000 : f64``, NaN
      payloads kept); str ``"..."`` with MLIR escapes (``\\"``, ``\\\\``, ``\\n``, ``\\t``,
      ``\\XX`` for the UTF-8 bytes of other unprintable characters); dtype a type
      (``dtype = f32``); shape ``array<i64: 784, -1>`` where ``-1`` is an unknown (None)
      dimension and ``array<i64>`` the scalar shape; ints ``array<i64: 1, 2>``; floats
      ``array<f64: 1.5, 0x7FF8000000000000>``; strs ``["a", "b"]``; tensor
      ``dense<...> : tensor<2x3xf32>`` (see below); type the type itself
      (``tensor<2xf32>``, ``!tw.resource``).
    - kind ``any`` and private ``_name`` attributes are spelled by their Python value:
      bool, int, float, str, DType and Type as above, NumPy arrays as tensors, tuples or
      lists of ints/floats as ``array<i64|f64: ...>``, other sequences as ``[...]`` of
      their elements (read back as tuples). A value with no spelling prints as
      ``#tw.unprintable<"repr">`` so that printing never fails; the parser rejects it.
    - ``device = "/cpu:0"``: the requested device (printed when not None);
      ``tw.assigned_device = "..."``: the placer's choice (printed when set);
      ``tw.control_deps = ["node_a", ...]``: control inputs, by node name (same graph).
      Op attributes therefore may not be named ``device`` or start with ``tw.``.

Dense tensors
    Element types are the IR dtypes, with ``u8`` spelled ``ui8`` (MLIR's ``i8`` is
    signless and it has no ``u8``). A tensor whose elements are all bitwise equal is a
    splat, ``dense<0.0> : tensor<2x3xf32>``; an empty one is ``dense<>``; bool tensors are
    lists ``dense<[true, false]>``; other tensors with up to `DECIMAL_ELEMENTS_LIMIT`
    elements are nested lists of decimal literals that read back bit for bit (a float
    element that would not, inf or NaN, is written as its hex bit pattern ``0x7F800000``,
    as MLIR allows), larger ones are MLIR's hex form ``dense<"0x...">`` (the raw
    little-endian bytes in row-major order).
"""

from __future__ import annotations

import math
import struct
import sys
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from ..errors import TensorWeaveError
from .dtypes import DType, as_dtype
from .ir import Graph, Node, SourceLoc, Value
from .types import TensorType, Type

DECIMAL_ELEMENTS_LIMIT = 32
"""Non-splat numeric tensors with more elements than this are printed in hex form."""

DEFAULT_GRAPH_NAME = Graph().name
"""The name of a region graph whose yield carries no ``tw.graph_name``."""

_ELEMENT_SPELLING = {"u8": "ui8"}
_SSA_PUNCT = "_$.-"
_BARE_PUNCT = "_$."
_UINT_BY_SIZE = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}


# --------------------------------------------------------------------------- entry points

def print_graph(graph: Graph) -> str:
    """The MLIR text of `graph` as one ``func.func`` (never fails, even for broken IR)."""
    return _FunctionPrinter().function(graph)


def print_module(graphs: Iterable[Graph]) -> str:
    """Several graphs as consecutive ``func.func`` definitions (read with `parse_module`)."""
    return "\n".join(print_graph(g) for g in graphs)


def default_result_names(n: int) -> list[str]:
    """The names `Graph.set_results` gives when none are given."""
    return [f"result{i}" for i in range(n)]


# --------------------------------------------------------------------------- spelling helpers

def element_type_name(dtype: DType) -> str:
    """The MLIR element type of `dtype` (``f32``, ``ui8``...)."""
    return _ELEMENT_SPELLING.get(dtype.ir_name, dtype.ir_name)


def format_type(t: Type) -> str:
    """The MLIR spelling of an IR type."""
    mlir = getattr(t, "mlir", None)
    return mlir() if callable(mlir) else f"!tw.unknown<{quote_string(repr(t))}>"


def quote_string(s: str) -> str:
    """`s` as an MLIR string literal."""
    out = ['"']
    for ch in s:
        if ch == '"':
            out.append('\\"')
        elif ch == "\\":
            out.append("\\\\")
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\t":
            out.append("\\t")
        elif ch.isprintable():
            out.append(ch)
        else:
            out.extend(f"\\{b:02X}" for b in ch.encode("utf-8", "surrogatepass"))
    out.append('"')
    return "".join(out)


def is_bare_id(s: str) -> bool:
    """True when `s` is an MLIR bare identifier (usable unquoted as a symbol or attr name)."""
    return bool(s) and (s[0].isascii() and (s[0].isalpha() or s[0] == "_")) and all(
        c.isascii() and (c.isalnum() or c in _BARE_PUNCT) for c in s)


def sanitize_ssa_id(name: str) -> str:
    """A valid MLIR SSA suffix id derived from a node or argument name."""
    out = "".join(c if c.isascii() and (c.isalnum() or c in _SSA_PUNCT) else "_" for c in name)
    if not out:
        return "v"
    if out[0].isdigit() and not out.isdigit():
        return "_" + out  # MLIR ids start with a letter or punctuation, or are all digits
    return out


def uint_view(arr: np.ndarray) -> np.ndarray:
    """The raw bits of `arr` as unsigned integers of the same width."""
    return arr.view(_UINT_BY_SIZE[arr.dtype.itemsize])


def float_text_bits(text: str, np_dtype: np.dtype) -> int:
    """The bit pattern of decimal `text` rounded to `np_dtype` (how the parser reads it)."""
    with np.errstate(over="ignore"):
        arr = np.array(float(text), dtype=np_dtype)
    return int(uint_view(arr.reshape(1))[0])


def _with_dot(s: str) -> str:
    """MLIR float literals need a ``.`` before the exponent: ``1e+20`` -> ``1.0e+20``."""
    mantissa, e, exponent = s.partition("e")
    if "." not in mantissa:
        mantissa += ".0"
    return mantissa + e + exponent


def format_f64(value: float) -> str:
    """A Python float as an MLIR ``f64`` attribute, exact (hex bits for inf and NaN)."""
    value = float(value)
    if math.isfinite(value):
        return f"{_with_dot(repr(value))} : f64"
    return f"{_f64_hex(value)} : f64"


def _f64_hex(value: float) -> str:
    (bits,) = struct.unpack("<Q", struct.pack("<d", value))
    return f"0x{bits:016X}"


def _f64_element(value: float) -> str:
    """One element of an ``array<f64: ...>``."""
    value = float(value)
    return _with_dot(repr(value)) if math.isfinite(value) else _f64_hex(value)


def _float_element(x: np.generic, np_dtype: np.dtype) -> str:
    """One float tensor element: the shortest decimal that reads back to the same bits,
    else the hex bit pattern."""
    bits = int(uint_view(np.array(x, dtype=np_dtype).reshape(1))[0])
    if math.isfinite(float(x)):
        # NumPy prints float16/32 with their own shortest repr; bf16 goes through float32.
        shown = repr(float(x)) if np_dtype == np.float64 else str(
            x if np_dtype in (np.float16, np.float32) else np.float32(x))
        text = _with_dot(shown)
        if float_text_bits(text, np_dtype) == bits:
            return text
    return f"0x{bits:0{2 * np_dtype.itemsize}X}"


def _element(x: np.generic, dtype: DType) -> str:
    if dtype.is_bool:
        return "true" if bool(x) else "false"
    if dtype.is_floating:
        return _float_element(x, dtype.np)
    return str(int(x))


def _nest(items: Sequence[str], shape: Sequence[int]) -> str:
    """Nested ``[...]`` lists of `items` (row-major) for `shape`."""
    if not shape:
        return items[0]
    step = len(items) // shape[0]
    inner = (_nest(items[i * step:(i + 1) * step], shape[1:]) for i in range(shape[0]))
    return "[" + ", ".join(inner) + "]"


def format_dense(value: np.ndarray) -> str:
    """A NumPy array as ``dense<...> : tensor<...>`` (see the module docstring)."""
    arr = np.asarray(value)
    dtype = as_dtype(arr.dtype)
    type_text = TensorType(dtype, arr.shape).mlir()
    return f"dense<{_dense_body(arr, dtype)}> : {type_text}"


def _dense_body(arr: np.ndarray, dtype: DType) -> str:
    if arr.size == 0:
        return ""
    if dtype.is_string:
        return _string_body(arr)
    flat = np.ascontiguousarray(arr).reshape(-1)
    bits = uint_view(flat)
    if bool((bits == bits[0]).all()):
        return _element(flat[0], dtype)
    if dtype.is_bool or flat.size <= DECIMAL_ELEMENTS_LIMIT:
        return _nest([_element(x, dtype) for x in flat], arr.shape)
    if sys.byteorder == "big":
        flat = flat.byteswap()
    return '"0x' + flat.tobytes().hex().upper() + '"'


def _string_body(arr: np.ndarray) -> str:
    """A string tensor's elements as quoted literals (a splat when all are equal). Bytes
    that are not UTF-8 travel as surrogate escapes (``\\ED\\B3\\BF`` for a byte 0xFF),
    which the parser turns back into the same bytes."""
    items = [quote_string(b.decode("utf-8", "surrogateescape")) for b in arr.reshape(-1)]
    if all(x == items[0] for x in items):
        return items[0]
    return _nest(items, arr.shape)


def _dense_array(element: str, items: Sequence[str]) -> str:
    return f"array<{element}: {', '.join(items)}>" if items else f"array<{element}>"


def format_attribute(value: Any, kind: str = "any") -> str:
    """The MLIR spelling of attribute `value` of registry kind `kind`."""
    if kind == "shape":
        return _dense_array("i64", ["-1" if d is None else str(int(d)) for d in value])
    if kind == "ints":
        return _dense_array("i64", [str(int(x)) for x in value])
    if kind == "floats":
        return _dense_array("f64", [_f64_element(x) for x in value])
    if kind == "strs":
        return "[" + ", ".join(quote_string(s) for s in value) + "]"
    if kind == "float":
        return format_f64(value)
    return _format_any(value)


def _format_any(value: Any) -> str:
    """Spell an attribute by its Python type (kinds bool, int, str, dtype, tensor, type, any)."""
    if isinstance(value, (bool, np.bool_)):
        return "true" if value else "false"
    if isinstance(value, (int, np.integer)):
        return f"{int(value)} : i64"
    if isinstance(value, (float, np.floating)):
        return format_f64(float(value))
    if isinstance(value, str):
        return quote_string(value)
    if isinstance(value, DType):
        return element_type_name(value)
    if isinstance(value, Type):
        return format_type(value)
    if isinstance(value, np.ndarray):
        return format_dense(value)
    if isinstance(value, (tuple, list)):
        return _format_sequence(value)
    raise TypeError(f"no text form for attribute value {value!r}")


def _format_sequence(value: Sequence[Any]) -> str:
    items = list(value)
    if items and all(isinstance(x, (int, np.integer)) and not isinstance(x, (bool, np.bool_))
                     for x in items):
        return format_attribute(items, "ints")
    if items and all(isinstance(x, (float, np.floating)) for x in items):
        return format_attribute(items, "floats")
    return "[" + ", ".join(_format_any(x) for x in items) + "]"


def format_loc(name: str | None, loc: SourceLoc | None) -> str:
    """An MLIR location: ``loc("name")``, ``loc("name"("file":12:0))`` or
    ``loc("file":12:0)``."""
    file_loc = f"{quote_string(loc.file)}:{loc.line}:{loc.column}" if loc is not None else None
    if name is None:
        return f"loc({file_loc or 'unknown'})"
    if file_loc is None:
        return f"loc({quote_string(name)})"
    return f"loc({quote_string(name)}({file_loc}))"


def _attr_name(name: str) -> str:
    return name if is_bare_id(name) else quote_string(name)


def _attr_dict(entries: dict[str, str]) -> str:
    if not entries:
        return ""
    body = ", ".join(f"{_attr_name(k)} = {entries[k]}" for k in sorted(entries))
    return "{" + body + "}"


def _types_list(types: Iterable[Type]) -> str:
    return "(" + ", ".join(format_type(t) for t in types) + ")"


def _result_types(types: Sequence[Type]) -> str:
    return format_type(types[0]) if len(types) == 1 else _types_list(types)


# --------------------------------------------------------------------------- the printer

class _FunctionPrinter:
    """Prints one function; SSA ids are unique across the function and its regions."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.ssa: dict[Value, str] = {}
        self.used: set[str] = set()

    def function(self, graph: Graph) -> str:
        symbol = graph.name if is_bare_id(graph.name) else quote_string(graph.name)
        args = self._block_args(graph)
        results = _types_list(v.type for v in graph.results)
        attrs = {}
        if graph.result_names != default_result_names(len(graph.results)):
            attrs["tw.result_names"] = format_attribute(graph.result_names, "strs")
        attr_text = f" attributes {_attr_dict(attrs)}" if attrs else ""
        self.lines.append(f"func.func @{symbol}({args}) -> {results}{attr_text} {{")
        self._body(graph, "  ", "func.return", {})
        self.lines.append("}")
        return "\n".join(self.lines) + "\n"

    # -- naming
    def _define(self, value: Value, base: str) -> str:
        name = self._fresh(base)
        self.ssa[value] = "%" + name
        return name

    def _fresh(self, base: str) -> str:
        base = sanitize_ssa_id(base)
        name, i = base, 0
        while name in self.used:
            i += 1
            name = sanitize_ssa_id(f"{base}_{i}")  # "0" -> "_0_1": a digit may not lead
        self.used.add(name)
        return name

    def _use(self, v: Value) -> str:
        if v in self.ssa:
            return self.ssa[v]
        # An undefined value (broken IR): print something the parser will reject clearly.
        return "%undefined." + sanitize_ssa_id(_safe_value_name(v))

    def _block_args(self, graph: Graph) -> str:
        parts = []
        for i, a in enumerate(graph.args):
            name = graph.arg_names[i] if i < len(graph.arg_names) else f"arg{i}"
            ssa = self._define(a, name)
            parts.append(f"%{ssa}: {format_type(a.type)} {format_loc(name, None)}")
        return ", ".join(parts)

    # -- bodies
    def _body(self, graph: Graph, indent: str, terminator: str, term_attrs: dict[str, str]) -> None:
        for node in graph.nodes:
            self._node(node, indent)
        uses = ", ".join(self._use(v) for v in graph.results)
        attrs = _attr_dict(term_attrs)
        attrs = f" {attrs}" if attrs else ""
        types = _types_list(v.type for v in graph.results)
        self.lines.append(f'{indent}"{terminator}"({uses}){attrs} : {types} -> ()')

    def _region(self, region: Graph, indent: str) -> None:
        """One region: the block label at the op's indentation (as mlir-opt prints it)."""
        if region.args:
            self.lines.append(f"{indent}^bb0({self._block_args(region)}):")
        attrs = {}
        if region.name != DEFAULT_GRAPH_NAME:
            attrs["tw.graph_name"] = quote_string(region.name)
        if region.result_names != default_result_names(len(region.results)):
            attrs["tw.result_names"] = format_attribute(region.result_names, "strs")
        self._body(region, indent + "  ", "tw.yield", attrs)

    def _node(self, node: Node, indent: str) -> None:
        head = ""
        if node.outputs:
            base = self._fresh(node.name)
            if len(node.outputs) == 1:
                self.ssa[node.outputs[0]] = f"%{base}"
                head = f"%{base} = "
            else:
                for i, out in enumerate(node.outputs):
                    self.ssa[out] = f"%{base}#{i}"
                head = f"%{base}:{len(node.outputs)} = "
        operands = ", ".join(self._use(v) for v in node.inputs)
        text = f'{indent}{head}"tw.{node.op}"({operands})'
        if node.regions:
            text += " ("
            for i, region in enumerate(node.regions):
                self.lines.append(text + ("{" if i == 0 else ", {"))
                self._region(region, indent)
                text = indent + "}"
            text += ")"
        attrs = _attr_dict(_node_attrs(node))
        if attrs:
            text += " " + attrs
        in_types = _types_list(v.type for v in node.inputs)
        out_types = _result_types([v.type for v in node.outputs])
        self.lines.append(f"{text} : {in_types} -> {out_types} {format_loc(node.name, node.loc)}")


def _safe_value_name(v: Value) -> str:
    try:
        return v.name
    except (IndexError, AttributeError):
        return "value"


def _node_attrs(node: Node) -> dict[str, str]:
    """Attribute name -> spelled value, including the device and control-dep attributes."""
    try:
        specs = node.opdef.attrs
    except TensorWeaveError:  # an unregistered op in broken IR: spell attributes by value
        specs = {}
    out = {}
    for key, value in node.attrs.items():
        if value is None:
            continue
        spec = specs.get(key)
        try:
            out[key] = format_attribute(value, spec.kind if spec is not None else "any")
        except (TypeError, ValueError, KeyError, AttributeError):
            out[key] = f"#tw.unprintable<{quote_string(repr(value))}>"
    if node.device is not None:
        out["device"] = quote_string(node.device)
    if node.assigned_device is not None:
        out["tw.assigned_device"] = quote_string(node.assigned_device)
    if node.control_inputs:
        out["tw.control_deps"] = format_attribute([c.name for c in node.control_inputs], "strs")
    return out


# --------------------------------------------------------------------------- fingerprints

class Unfingerprintable(Exception):
    """An attribute value without a canonical byte form (see `graph_fingerprint`)."""


def graph_fingerprint(graph: Graph) -> str | None:
    """A SHA-256 (hex) of everything `print_graph` writes about `graph` (names, ops, value
    flow, attributes with NumPy arrays by their bytes, types, devices, placements, control
    dependencies, source locations, regions), computed without printing: a cache key for
    what is derived from a graph, several times cheaper than the text for big graphs.
    None when an attribute has no canonical form (e.g. a Python object: its ``repr``
    may name a memory address), so that such graphs are never cached by it."""
    import hashlib
    h = hashlib.sha256()
    try:
        _Fingerprint(h).graph(graph)
    except Unfingerprintable:
        return None
    return h.hexdigest()


class _Fingerprint:
    """Feeds a canonical, unambiguous encoding of a graph to a hash: each item is its
    ``repr`` of plain tuples of str / int / bool / None (what ``repr`` spells
    unambiguously), floats by their bit patterns, arrays by dtype, shape and bytes."""

    def __init__(self, h: Any) -> None:
        self.h = h
        self.ids: dict[Value, int] = {}  # value -> its number (function-wide, like SSA ids)
        self.types: dict[Any, str] = {}

    def _type(self, t: Type) -> str:
        text = self.types.get(t)
        if text is None:
            text = self.types[t] = format_type(t)
        return text

    def _value(self, v: Value) -> int:
        k = self.ids.get(v)
        if k is None:
            raise Unfingerprintable("a value used before it is defined")
        return k

    def graph(self, g: Graph) -> None:
        ids = self.ids
        args = []
        for a in g.args:
            ids[a] = len(ids)
            args.append(self._type(a.type))
        update = self.h.update
        update(repr(("graph", g.name, tuple(g.arg_names), tuple(args))).encode())
        for node in g.nodes:
            for r in node.regions:
                update(b"(region")
                self.graph(r)
                update(b")")
            for v in node.outputs:
                ids[v] = len(ids)
            loc = node.loc
            update(repr((node.op, node.name, tuple(self._value(v) for v in node.inputs),
                         tuple(c.name for c in node.control_inputs), node.device,
                         node.assigned_device,
                         (loc.file, loc.line, loc.column) if loc is not None else None,
                         tuple(self._type(v.type) for v in node.outputs),
                         tuple(sorted((k, _canonical(x)) for k, x in node.attrs.items())),
                         )).encode())
        update(repr(("results", tuple(self._value(v) for v in g.results),
                     tuple(g.result_names))).encode())


def _canonical(x: Any) -> Any:
    """`x` as nested tuples of str / int / bool / None (see `_Fingerprint`)."""
    if x is None or isinstance(x, (bool, str)):
        return x
    if isinstance(x, int):
        return ("i", x)  # (1 and True are equal as dict keys, not here)
    if isinstance(x, float):
        return ("f", struct.pack("<d", x).hex())
    if isinstance(x, np.generic):
        if x.dtype.hasobject:
            raise Unfingerprintable(repr(x))
        return ("np", x.dtype.str, x.tobytes().hex())
    if isinstance(x, np.ndarray):
        import hashlib
        if x.dtype.hasobject:
            if not all(type(b) is bytes for b in x.reshape(-1)):
                raise Unfingerprintable("an object array")
            digest = hashlib.sha256()  # (a string tensor: each element's length, then bytes)
            for b in x.reshape(-1):
                digest.update(len(b).to_bytes(8, "little") + b)
            return ("strings", x.shape, digest.hexdigest())
        data = np.ascontiguousarray(x)
        return ("nd", x.dtype.str, x.shape, hashlib.sha256(data).hexdigest())
    if isinstance(x, DType):
        return ("dtype", x.ir_name)
    if isinstance(x, Type):
        return ("type", format_type(x))
    if isinstance(x, (tuple, list)):
        # by kind, not class: a TensorShape attribute prints (and parses back) as a tuple
        return ("list" if isinstance(x, list) else "tuple", tuple(_canonical(e) for e in x))
    raise Unfingerprintable(f"{type(x).__name__} attribute")
