"""Cut one module of LLVM IR text into independent modules that LLVM can optimize and
compile on separate threads (`jit`), and whose object files link in one engine.

The text is the code generator's (llvmlite.ir's printing): top-level entities start at
column 0, a function definition runs from its ``define`` line to a line ``}``, and every
global name is quoted (``@"name"``). Each externally visible function definition (node
functions, the step's entry points, fused loops) goes to exactly one part; the others
see a ``declare`` of it. Everything local (``internal`` / ``private`` functions and
constants) is copied into each part that reaches it, so that the optimizer sees the same
callees as in the whole module and inlines them as before, except the large ones
(`PROMOTE_MIN_LINES`: GEMM and thread-pool helpers) that several external functions
reach: each is placed like an external function (a unit of its own), compiled once,
made external there and declared elsewhere. A local *mutable* global that parts share
(the profile buffer that ``tw_profile_slot`` hands out) must exist once: it becomes
external in the lowest part that uses it and an ``external global`` elsewhere.

Functions whose bodies are textually identical (two layers' epilogues) are kept in one
part, so that `MergeFunctions` still compiles them once. Parts are balanced by lines of
IR (a rough measure of what LLVM spends on them), largest first.

Anything this does not recognise (another linkage, a global it cannot parse) gives no
split (`split_module` returns the text whole): LLVM parsing and verifying each part, and
the loader checking that every undefined symbol is defined by some part, catch the rest.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field

# local functions of at least this many lines that several external functions reach are
# compiled once, in the part the balancing gives them, and called from the others
# (smaller ones are copied into each part)
PROMOTE_MIN_LINES = 40
_NAME = re.compile(r'@"((?:[^"\\]|\\.)*)"|@([-a-zA-Z$._][-a-zA-Z$._0-9]*)')
_DEFINE = re.compile(r'define (?:(internal|private) )?(.*?)@"((?:[^"\\]|\\.)*)"(\(.*)$')
_GLOBAL = re.compile(r'@"((?:[^"\\]|\\.)*)" = (internal |private )?(global|constant) (.*)$')
_DECLARED_GLOBAL = re.compile(r'@"((?:[^"\\]|\\.)*)" = external global ')
# top-level lines that every part keeps as they are
_SHARED_PREFIXES = ("declare ", "!", "target ", ";", "%", "attributes ", "source_filename")


_DEFINE_LOCAL = re.compile(r"^define (?:internal|private) ")


class Unsplittable(Exception):
    """The text has something the splitter does not handle (the module stays whole)."""


@dataclass
class _Item:
    """One top-level entity of the module, in its original order."""

    text: str                         # its lines, as printed
    kind: str                         # "shared", "define", "global"
    name: str = ""
    local: bool = False               # internal / private linkage
    mutable: bool = False             # a `global` (not a `constant`)
    refs: set[str] = field(default_factory=set)
    declaration: str = ""             # how another part declares it (external ones)
    lines: int = 0


def _refs(text: str, own: str) -> set[str]:
    return {a or b for a, b in _NAME.findall(text)} - {own}


def _type_prefix(rest: str) -> str:
    """The LLVM type at the start of `rest` (a global's value type before its
    initializer): a bracketed aggregate or vector, or one token, with any ``*``s."""
    if not rest:
        raise Unsplittable("a global without a type")
    if rest[0] in "[{<":
        depth, end = 0, 0
        while end < len(rest):
            ch = rest[end]
            end += 1
            if ch in "[{<":
                depth += 1
            elif ch in "]}>":
                depth -= 1
                if depth == 0:
                    break
        if depth:
            raise Unsplittable("an unbalanced global type")
    else:
        end = rest.find(" ")
        if end < 0:
            raise Unsplittable("a global without an initializer")
    while end < len(rest) and rest[end] == "*":
        end += 1
    return rest[:end]


def _parse(text: str) -> list[_Item]:
    lines = text.split("\n")
    items: list[_Item] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("define "):
            j = i
            while j < len(lines) and lines[j] != "}":
                j += 1
            if j == len(lines):
                raise Unsplittable("a function definition without its closing brace")
            body = "\n".join(lines[i:j + 1])
            m = _DEFINE.match(line)
            if m is None:
                raise Unsplittable(f"a definition it cannot read: {line[:80]}")
            linkage, head, name, rest = m.groups()
            if head.split()[:1] and head.split()[0] in (
                    "linkonce", "linkonce_odr", "weak", "weak_odr", "common",
                    "available_externally", "extern_weak", "appending"):
                raise Unsplittable(f"linkage {head.split()[0]} of {name}")
            # a declaration of it: the same prototype and attributes, no body
            decl = f'declare {head}@"{name}"{rest}'.rstrip()
            if decl.endswith("{"):
                decl = decl[:-1].rstrip()
            items.append(_Item(body, "define", name, local=linkage is not None,
                               refs=_refs(body, name), declaration=decl, lines=j - i + 1))
            i = j + 1
            continue
        if line.startswith("@"):
            m = _GLOBAL.match(line)
            if m is not None:
                name, linkage, what, rest = m.groups()
                local = linkage is not None
                mutable = what == "global"
                decl = ""
                if mutable and local:
                    decl = f'@"{name}" = external global {_type_prefix(rest)}'
                elif not local:
                    raise Unsplittable(f"an external definition of global {name}")
                items.append(_Item(line, "global", name, local=local, mutable=mutable,
                                   refs=_refs(line, name), declaration=decl, lines=1))
            elif _DECLARED_GLOBAL.match(line):
                items.append(_Item(line, "shared"))
            else:
                raise Unsplittable(f"a global it cannot read: {line[:80]}")
        elif not line.strip() or line.startswith(_SHARED_PREFIXES):
            items.append(_Item(line, "shared"))
        else:
            raise Unsplittable(f"a top-level line it cannot read: {line[:80]}")
        i += 1
    return items


def _body_hash(item: _Item) -> str:
    """The function's text without its name: equal for functions MergeFunctions folds
    (as far as their text shows)."""
    return hashlib.sha1(item.text.replace(f'@"{item.name}"', "@SELF", 1).encode()).hexdigest()


def split_module(text: str, parts: int, min_lines: int = 0) -> list[str]:
    """`text` cut into at most `parts` modules (see the module docstring); ``[text]``
    when `parts` is 1, when it has fewer than `min_lines` lines or too few functions to
    cut, or when it holds something the splitter does not handle."""
    if parts <= 1 or text.count("\n") < min_lines:
        return [text]
    try:
        items = _parse(text)
    except Unsplittable:
        return [text]
    return _assemble(items, parts) or [text]


def _assemble(items: list[_Item], parts: int) -> list[str] | None:
    by_name = {it.name: it for it in items if it.name}
    local = {n for n, it in by_name.items() if it.local}

    def reach(name: str, stop: set[str] | frozenset[str] = frozenset()) -> set[str]:
        """`name` and the local entities it reaches but `stop` (what a part holding it
        copies)."""
        seen, todo = {name}, [name]
        while todo:
            for r in by_name[todo.pop()].refs:
                if r in local and r not in seen and r not in stop:
                    seen.add(r)
                    todo.append(r)
        return seen

    roots = [it.name for it in items if it.kind == "define" and not it.local]
    if len(roots) < 2:
        return None
    closure = {r: reach(r) for r in roots}
    # roots whose closures hold functions with the same body stay together (union-find)
    parent = {r: r for r in roots}

    def find(r: str) -> str:
        while parent[r] != r:
            parent[r] = parent[parent[r]]
            r = parent[r]
        return r

    # (a helper several roots reach is one function, copied where needed: no reason to
    # keep them together; two functions of different names and one body are)
    first_of_body: dict[str, tuple[str, str]] = {}  # body -> (function, a root reaching it)
    for r in roots:
        for n in sorted(closure[r]):
            it = by_name[n]
            if it.kind != "define":
                continue
            name, owner = first_of_body.setdefault(_body_hash(it), (n, r))
            if name != n and find(owner) != find(r):
                parent[find(r)] = find(owner)
    grouped: dict[str, list[str]] = {}
    for r in roots:
        grouped.setdefault(find(r), []).append(r)
    if len(grouped) < 2:
        return None
    root_units = list(grouped.values())
    # large helpers (GEMM, thread pool) that several units reach are units of their own:
    # compiled once, in the part they are given, external there, called from the others
    reached = [set().union(*(closure[r] for r in rs)) for rs in root_units]
    shared_helpers = [n for n in by_name if _promotable(by_name[n])
                      and sum(n in names for names in reached) > 1]
    stop = set(shared_helpers)
    unit_defs = root_units + [[h] for h in shared_helpers]
    unit_names = ([set().union(*(reach(r, stop) for r in rs)) for rs in root_units] +
                  [reach(h, stop - {h}) for h in shared_helpers])
    cost = [sum(by_name[n].lines for n in ns) for ns in unit_names]
    order = sorted(range(len(unit_defs)), key=lambda u: -cost[u])
    nparts = min(parts, len(unit_defs))
    held: list[set[str]] = [set() for _ in range(nparts)]
    owned: list[set[str]] = [set() for _ in range(nparts)]
    load = [0] * nparts
    for u in order:  # largest first, to the part it adds least to (what it holds is free)
        extra = [sum(by_name[n].lines for n in unit_names[u] - held[p]) for p in range(nparts)]
        p = min(range(nparts), key=lambda q: (load[q] + extra[q], q))
        load[p] += extra[p]
        held[p] |= unit_names[u]
        owned[p].update(unit_defs[u])
    # a mutable local global more than one part uses lives in the first of them
    shared_state = {}
    for n, it in by_name.items():
        if it.kind == "global" and it.mutable and it.local:
            users = [p for p in range(nparts) if n in held[p]]
            if len(users) > 1:
                shared_state[n] = users[0]
    out = []
    for p in range(nparts):
        lines = []
        for it in items:
            if it.kind == "shared":
                lines.append(it.text)
            elif it.kind == "define" and (not it.local or it.name in stop):
                if it.name not in owned[p]:
                    lines.append(it.declaration)
                else:  # (a shared helper is made external in its part)
                    lines.append(_DEFINE_LOCAL.sub("define ", it.text, 1))
            elif it.name in shared_state:
                if it.name not in held[p]:
                    continue
                if shared_state[it.name] == p:  # defined here, visible to the others
                    lines.append(it.text.replace(" = internal global ", " = global ", 1)
                                 .replace(" = private global ", " = global ", 1))
                else:
                    lines.append(it.declaration)
            elif it.name in held[p]:
                lines.append(it.text)
        out.append("\n".join(lines))
    return out


def _promotable(it: _Item) -> bool:
    """A local function large enough to be compiled once and shared between parts."""
    return (it.kind == "define" and it.local and it.lines >= PROMOTE_MIN_LINES
            and "alwaysinline" not in it.declaration)
