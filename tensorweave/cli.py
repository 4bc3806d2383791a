"""The ``tensorweave`` command line.

    tensorweave dump model.py:predict                  # IR after the last stage
    tensorweave dump model.py:predict --stage traced   # IR as traced
    tensorweave dump model.py:f --signature 'x:f32[?,784]' 'w:f32[784,10]'
    tensorweave dump graph.mlir --stage optimized      # read IR text, run passes, print
    tensorweave dump --list-stages
    tensorweave dump model.py:f --format tensorboard --logdir logs   # graph for TensorBoard
    tensorweave dump model.py:f --format dot -o f.dot  # Graphviz DOT
    tensorweave dump model.py:f --target gpu --stage kernels   # generated CUDA kernels
    tensorweave dump model.py:f --target gpu --stage kernels --ptx-dir ptx/  # + NAME.ptx
    tensorweave aot model.py:predict -o build/         # libpredict.so + predict.h
    tensorweave server --cluster '{"ps": ["127.0.0.1:2222"]}' --job ps --task 0
    tensorweave launch --ps 1 --workers 2 train.py -- --steps 100
    tensorweave profile model.py:train_step --steps 20  # per-op times, trace.json

Errors are one line on stderr and a non-zero exit status.
"""

from __future__ import annotations

import argparse
import importlib.util
import inspect
import os
import re
import sys
from collections.abc import Sequence
from typing import Any

from .errors import TensorWeaveError
from .runtime import atomic_files

_SPEC_RE = re.compile(r"^(?:(?P<name>[A-Za-z_]\w*):)?(?P<dtype>[A-Za-z0-9]+)\[(?P<dims>[^\]]*)\]$")


class CliError(Exception):
    """A user error reported as one line."""


# what --signature accepts (TensorFlow's and NumPy's long names work too)
SIGNATURE_DTYPES = ("f16", "bf16", "f32", "f64", "i8", "i16", "i32", "i64", "u8", "bool")


def split_signature(items: Sequence[str]) -> list[str]:
    """``--signature`` entries, given one per argument or several in one string separated
    by commas outside brackets: ``'x:f32[1,784],w:f32[784,10]'``."""
    entries = []
    for item in items:
        depth, start = 0, 0
        for i, ch in enumerate(item):
            if ch == "[":
                depth += 1
            elif ch == "]":
                depth -= 1
                if depth < 0:
                    raise CliError(f"bad --signature entry {item!r}: ']' without '['")
            elif ch == "," and depth == 0:
                entries.append(item[start:i])
                start = i + 1
        if depth:
            raise CliError(f"bad --signature entry {item!r}: '[' without ']'")
        entries.append(item[start:])
    for e in entries:
        if not e.strip():
            raise CliError(f"empty --signature entry in {' '.join(map(repr, items))}: separate "
                           f"entries with one comma, e.g. 'x:f32[1,784],w:f32[784,10]'")
    return entries


def parse_signature(items: Sequence[str]) -> list[tuple[str | None, Any]]:
    """``'x:f32[?,784]'`` to ``("x", TensorSpec([None, 784], float32))``; several entries
    may share one string, separated by commas (``'x:f32[1,784],w:f32[784,10]'``)."""
    from .compiler.dtypes import as_dtype
    from .frontend.function import TensorSpec

    specs = []
    for item in split_signature(items):
        m = _SPEC_RE.match(item.strip())
        if not m:
            raise CliError(f"bad --signature entry {item!r}: expected NAME:DTYPE[DIMS], "
                           f"e.g. 'x:f32[?,784]' (use [] for a scalar)")
        dims = [d.strip() for d in m["dims"].split(",")] if m["dims"].strip() else []
        shape = []
        for d in dims:
            if d in ("?", "None", "-1"):
                shape.append(None)
            elif d.isdigit():
                shape.append(int(d))
            else:
                raise CliError(f"bad dimension {d!r} in {item!r}: use an integer or ?")
        try:
            dtype = as_dtype(m["dtype"])
        except (TensorWeaveError, TypeError, ValueError, KeyError):
            raise CliError(f"bad dtype {m['dtype']!r} in {item!r}: expected one of "
                           f"{', '.join(SIGNATURE_DTYPES)}") from None
        if m["name"] is not None and any(n == m["name"] for n, _ in specs):
            raise CliError(f"--signature gives {m['name']!r} twice")
        specs.append((m["name"], TensorSpec(shape, dtype)))
    if len({n is None for n, _ in specs}) > 1:
        raise CliError("--signature entries must all be named (x:f32[2]) or all unnamed "
                       "(f32[2])")
    return specs


def load_function(target: str) -> Any:
    """Import ``FILE.py:NAME`` and return the object called NAME."""
    path, sep, name = target.rpartition(":")
    if not sep or not path or not name:
        if target.endswith(".py") and not sep:
            raise CliError(missing_function_message(target))
        raise CliError(f"expected FILE.py:FUNCTION, got {target!r}")
    module = _import_file(path)
    if not hasattr(module, name):
        public = [n for n, v in vars(module).items() if callable(v) and not n.startswith("_")
                  and getattr(v, "__module__", module.__name__) == module.__name__]
        raise CliError(f"{path} has no function {name!r}"
                       + (f" (it defines: {', '.join(sorted(public))})" if public else ""))
    return getattr(module, name)


def compiled_functions(path: str) -> list[str]:
    """The names of the ``@tw.compile`` functions a Python file defines at top level."""
    from .frontend.function import Function
    module = _import_file(path)
    return sorted(n for n, v in vars(module).items() if isinstance(v, Function))


def missing_function_message(path: str) -> str:
    """What to say for ``FILE.py`` given without ``:FUNCTION``: which functions it offers."""
    if not os.path.exists(path):
        return f"no such file: {path}"
    names = compiled_functions(path)
    if names:
        return (f"{path}: name the function to compile as {path}:FUNCTION; its @tw.compile "
                f"functions: {', '.join(names)}")
    return (f"{path}: name the function to compile as {path}:FUNCTION ({path} defines no "
            f"@tw.compile function at top level; any function of it can be named)")


def _import_file(path: str) -> Any:
    """Run the Python file `path` as a fresh module and return it."""
    if not os.path.exists(path):
        raise CliError(f"no such file: {path}")
    module_name = "_tw_cli_" + re.sub(r"\W", "_", os.path.splitext(os.path.basename(path))[0])
    spec = importlib.util.spec_from_file_location(module_name, path)
    if spec is None or spec.loader is None:
        raise CliError(f"cannot import {path}: not a Python file")
    module = importlib.util.module_from_spec(spec)
    sys.path.insert(0, os.path.dirname(os.path.abspath(path)))
    try:
        spec.loader.exec_module(module)
    except SyntaxError as e:
        raise CliError(f"{path}:{e.lineno}: syntax error: {e.msg}") from None
    finally:
        sys.path.pop(0)
    return module


def concrete_function(fn: Any, signature: list[tuple[str | None, Any]]) -> Any:
    """Trace `fn` (a ``@tw.compile`` function or a plain one) for the given signature."""
    from .frontend.function import Function, compile

    if not isinstance(fn, Function):
        if not callable(fn):
            raise CliError(f"{fn!r} is not a function")
        fn = compile(fn)
    if signature:
        params = list(inspect.signature(fn.python_function).parameters)
        by_name = {n: s for n, s in signature if n is not None}
        unknown = set(by_name) - set(params)
        if unknown:
            raise CliError(f"--signature names {', '.join(sorted(unknown))}, but "
                           f"{fn.name}() takes ({', '.join(params)})")
        if by_name:
            specs = [by_name.get(p) for p in params]
            missing = [p for p, s in zip(params, specs) if s is None]
            if missing:
                raise CliError(f"--signature gives no type for {', '.join(missing)}")
        else:
            specs = [s for _, s in signature]
            try:  # (checked here: a TypeError of tracing may be the user's own)
                inspect.signature(fn.python_function).bind(*specs)
            except TypeError as e:
                raise CliError(f"--signature gives {len(specs)} types, but {fn.name}() takes "
                               f"({', '.join(params)}): {e}") from None
        if fn.input_signature is not None:
            _check_declared_signature(fn, params, specs)
        return fn.get_concrete_function(*specs)
    if fn.input_signature is None:
        raise CliError(f"{fn.name}() declares no input_signature: pass --signature, e.g. "
                       f"--signature 'x:f32[?,784]'")
    return fn.get_concrete_function()


def _check_declared_signature(fn: Any, params: list[str], specs: list[Any]) -> None:
    """A CliError unless `specs` (from --signature) are the types `fn`'s input_signature
    declares: tracing keeps to the declared ones, so a library built for ``x:f32[5]``
    of a function declaring ``[2]`` would take two floats while the caller passes five."""
    from .compiler.types import format_shape
    from .frontend import nest

    def spell(spec_list: list[Any]) -> str:
        return ",".join(f"{n}:{s.dtype.ir_name}{format_shape(s.shape)}"
                        for n, s in zip(params, spec_list))

    declared = nest.flatten(fn.input_signature)[0]
    same = len(declared) == len(specs) and all(
        d.dtype == s.dtype and tuple(d.shape) == tuple(s.shape) for d, s in zip(declared, specs))
    if not same:
        raise CliError(f"{fn.name}() declares the input_signature {spell(declared)}, but "
                       f"--signature gives {spell(specs)}: leave --signature out, or change "
                       f"the input_signature")


def _dump(args: argparse.Namespace) -> str:
    from .compiler.parser import parse_module
    from .compiler.pipeline import run_pipeline, stage_names
    from .compiler.printer import print_graph

    stages = stage_names()
    if args.list_stages:
        return "\n".join(stages)
    if not args.target:
        raise CliError("dump needs FILE.py:FUNCTION or an IR file (see --help)")
    if args.stage == "kernels" or args.ptx_dir:
        return _dump_kernels(args)
    stage = args.stage or stages[-1]
    if stage not in stages:
        raise CliError(f"unknown stage {stage!r}; stages are: {', '.join(stages)}")
    if args.target.endswith(".py"):  # FILE.py without :FUNCTION
        raise CliError(missing_function_message(args.target))
    if ":" not in args.target or args.target.endswith((".mlir", ".tw")):
        if not os.path.exists(args.target):
            raise CliError(f"no such file: {args.target}")
        graphs = parse_module(_read_text(args.target), source_name=args.target)
        # (--target picks the stages, as for FILE.py:FN; without it, every stage runs)
        graphs = [run_pipeline(g, stage, target=args.codegen) for g in graphs]
        if args.format != "mlir":
            return _export(args, graphs)
        return "\n".join(print_graph(g) for g in graphs)
    cf = concrete_function(load_function(args.target), parse_signature(args.signature or []))
    if args.format != "mlir":
        g = cf.graph if stage == "traced" and not args.codegen else \
            run_pipeline(cf.graph, stage, target=args.codegen)
        return _export(args, [g])
    if args.codegen:
        return print_graph(run_pipeline(cf.graph, stage, target=args.codegen))
    return cf.ir(stage)


def _read_text(path: str) -> str:
    """The text of IR file `path` (a CliError for a directory, an unreadable or a
    non-UTF-8 file)."""
    try:
        with open(path, encoding="utf-8") as f:
            return f.read()
    except UnicodeDecodeError as e:
        raise CliError(f"{path} is not UTF-8 text (byte {e.start}): expected IR text") from None
    except OSError as e:
        raise CliError(f"cannot read {path}: {e.strerror or e}") from None


def _export(args: argparse.Namespace, graphs: list[Any]) -> str:
    """``--format dot`` (DOT text) or ``--format tensorboard`` (an event file in
    ``--logdir`` holding each graph as a GraphDef)."""
    from . import graph_export

    if args.format == "dot":
        return "\n".join(graph_export.to_dot(g) for g in graphs)
    if not args.logdir:
        raise CliError("--format tensorboard needs --logdir DIR")
    paths = [graph_export.write_graph(args.logdir, g) for g in graphs]
    return "".join(f"wrote {p}\n" for p in paths) + \
        f"view it with: tensorboard --logdir {args.logdir}"


def _dump_kernels(args: argparse.Namespace) -> str:
    """``--stage kernels``: the generated kernels of the gpu target (and their PTX)."""
    if args.codegen != "gpu":
        raise CliError("--stage kernels and --ptx-dir need --target gpu")
    from .compiler.pipeline import run_pipeline
    from .targets.gpu.listing import kernel_listing, plan_for_listing, write_ptx

    cf = concrete_function(load_function(args.target), parse_signature(args.signature or []))
    plan = plan_for_listing(run_pipeline(cf.graph, target="gpu"))
    text = kernel_listing(plan)
    if args.ptx_dir:
        m = re.fullmatch(r"sm_(\d)(\d)", args.arch)
        if not m:
            raise CliError(f"bad --arch {args.arch!r}: expected e.g. sm_90")
        paths = write_ptx(plan, args.ptx_dir, (int(m[1]), int(m[2])))
        text += "".join(f"# wrote {p}\n" for p in paths)
    return text


def _aot(args: argparse.Namespace) -> str:
    from .targets.cpu.aot import build_library

    cf = concrete_function(load_function(args.target), parse_signature(args.signature or []))
    try:
        lib = build_library(cf, args.output_dir, name=args.name, cpu=args.cpu,
                            source=args.target)
    except OSError as e:
        raise CliError(f"cannot write the library into {args.output_dir}: {e}") from None
    return f"wrote {lib.library}\nwrote {lib.header}"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="tensorweave", description="tensorweave: a TensorFlow-style graph compiler.")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    dump = sub.add_parser(
        "dump", help="print the IR of a compiled function at a pipeline stage",
        description="Print the IR (MLIR generic syntax) of a @tw.compile function after a "
                    "pipeline stage, or parse an IR file, run the pipeline and print it.")
    dump.add_argument("target", nargs="?",
                      help="FILE.py:FUNCTION, or an IR text file (.mlir)")
    dump.add_argument("--stage", help="pipeline stage to print (default: the last)")
    dump.add_argument("--list-stages", action="store_true",
                      help="print the pipeline's stage names, one per line")
    dump.add_argument("--signature", nargs="+", metavar="NAME:DTYPE[DIMS]",
                      help="argument types for a function without input_signature, "
                           "e.g. 'x:f32[?,784],w:f32[784,10]' ('?' is a dimension of any "
                           "size; dtypes: " + ", ".join(SIGNATURE_DTYPES) + ")")
    dump.add_argument("--target", dest="codegen", choices=["reference", "cpu", "gpu"],
                      help="run only the stages of this target; with gpu, '--stage kernels' "
                           "prints the generated CUDA kernels")
    dump.add_argument("--ptx-dir", metavar="DIR",
                      help="(--target gpu) write each kernel's PTX to DIR/NAME.ptx")
    dump.add_argument("--arch", default="sm_90",
                      help="(--ptx-dir) the GPU architecture of the PTX (default sm_90)")
    dump.add_argument("--format", choices=["mlir", "tensorboard", "dot"], default="mlir",
                      help="mlir: IR text (default); tensorboard: write the graph as a "
                           "GraphDef event file to --logdir; dot: Graphviz DOT text")
    dump.add_argument("--logdir", metavar="DIR",
                      help="(--format tensorboard) the log directory to write to")
    dump.add_argument("-o", "--output", help="write to this file instead of stdout")
    dump.set_defaults(run=_dump)
    aot = sub.add_parser(
        "aot", help="compile a function ahead of time into a shared library callable from C",
        description="Compile a @tw.compile function (fixed shapes; variables frozen) into "
                    "DIR/libNAME.so and DIR/NAME.h declaring "
                    "int NAME_run(const void *const *args, void *const *results).")
    aot.add_argument("target", help="FILE.py:FUNCTION")
    aot.add_argument("-o", "--output-dir", required=True, metavar="DIR",
                     help="directory for libNAME.so and NAME.h")
    aot.add_argument("--name", help="C name of the library (default: the function's)")
    aot.add_argument("--signature", nargs="+", metavar="NAME:DTYPE[DIMS]",
                     help="argument types (fixed shapes) for a function without "
                          "input_signature, e.g. 'x:f32[1,784],w:f32[784,10]' (dtypes: "
                          + ", ".join(SIGNATURE_DTYPES) + ")")
    aot.add_argument("--cpu", default="host",
                     help="CPU to generate code for: 'host' (default) or an LLVM CPU name "
                          "such as x86-64-v3 for machines other than this one")
    aot.set_defaults(run=_aot)
    from .distribute.cli import add_commands  # server, launch
    from .profile_command import add_command as add_profile
    add_commands(sub)
    add_profile(sub)
    return parser


def _write_output(path: str, text: str) -> None:
    """Write `-o`'s file atomically and durably, or straight into what is not a regular
    file (``-o /dev/stdout``, a pipe), which cannot be renamed over."""
    if os.path.exists(path) and not os.path.isfile(path):
        with open(path, "w") as f:
            f.write(text)
        return
    directory = os.path.dirname(os.path.abspath(path))
    atomic_files.sweep_temporaries(directory, only_for=[os.path.basename(path)])
    atomic_files.write_bytes(path, text.encode())


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``tensorweave`` console script; returns the exit status."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "command", None):
        parser.print_help()
        return 2
    try:
        text = args.run(args)
    except CliError as e:
        print(f"tensorweave: error: {e}", file=sys.stderr)
        return 2
    except TensorWeaveError as e:
        print(f"tensorweave: error: {type(e).__name__}: {e}", file=sys.stderr)
        return 1
    if getattr(args, "output", None):
        try:
            _write_output(args.output, text + "\n")
        except OSError as e:
            print(f"tensorweave: error: cannot write {args.output}: {e}", file=sys.stderr)
            return 1
    else:
        try:
            print(text)
        except BrokenPipeError:  # e.g. `tensorweave dump ... | head`
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return 0


if __name__ == "__main__":
    sys.exit(main())
