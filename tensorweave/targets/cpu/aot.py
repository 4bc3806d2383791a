"""Ahead-of-time compilation: a compiled function as a shared library callable from C.

`build_library(cf, out_dir)` freezes the variables the function reads into constants,
runs the pipeline for the cpu target, plans the step (`step.plan_step`) with fixed
shapes, and emits one LLVM module with the step, every node function, the constants, and
the C entry point

    int NAME_run(const void *const *args, void *const *results);

(dense row-major buffers in signature order; returns 0 on success, or the failing
node's status). Matrix products use the generated GEMM (`lowering.gemm_function` in
"generated" mode), so the library needs only libc and libm: no BLAS, no Python. The
object code is position independent, linked with the system C compiler (``$CC``, else
``cc``) into ``libNAME.so``; ``NAME.h`` declares the entry point and the argument and
result shapes and dtypes as constants.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from typing import Any

import llvmlite.binding as llvm
import llvmlite.ir as ir
import numpy as np

from ...compiler.ir import Graph
from ...compiler.types import TensorType, format_shape
from ...errors import CompileError, UnimplementedError
from ...runtime import atomic_files
from . import jit
from .aot_errors import OVERLAP_STATUS, emit_error_lookup
from .lowering import I8, I8P, I8PP, I32, I64
from .step import ALIGN, CALLBACK_TYPE, STEP_NAME, Ineligible, StepPlan, emit_step, plan_step

_C_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
# the C type of each IR dtype's elements, as the header describes buffers (keyed by
# `DType.ir_name`: a bool is "i1", one byte per element; C has no standard 16-bit floats)
_C_TYPES = {"f32": "float", "f64": "double", "i8": "int8_t", "i16": "int16_t",
            "i32": "int32_t", "i64": "int64_t", "u8": "uint8_t", "i1": "uint8_t, 0 or 1",
            "f16": "uint16_t, float16 bits", "bf16": "uint16_t, bfloat16 bits"}


@dataclass
class Library:
    """What `build_library` wrote."""

    library: str
    header: str
    name: str
    plan: StepPlan


def freeze_variables(graph: Graph, resources: Any) -> Graph:
    """A copy of `graph` where each variable read (``ReadVariable``, and ``ResourceGather``
    which reads rows) is a constant holding the variable's current value, in the graph and
    in its regions. A graph that changes a variable anywhere cannot be frozen
    (CompileError)."""
    g = graph.copy()
    _freeze(g, resources)
    return g


def _changes_variable(op: str) -> bool:
    return (op.startswith("Assign") and op.endswith("Variable")) or op.startswith("ResourceScatter")


def _freeze(g: Graph, resources: Any) -> None:
    from ...passes._rewrite import frozen
    replace, dead = {}, []
    for node in list(g.nodes):
        for region in node.regions:  # a branch or loop body reads (or assigns) variables too
            _freeze(region, resources)
        if _changes_variable(node.op):
            raise CompileError(f"{node.op} '{node.name}' changes a variable; an ahead-of-time "
                               f"library holds frozen variables: compile a function that "
                               f"only reads them", **node.error_context())
        if node.op not in ("ReadVariable", "ResourceGather"):
            continue
        handle = node.inputs[0].producer
        if handle is None or handle.op != "VarHandle":
            raise CompileError(f"{node.op} '{node.name}' reads a variable whose handle is not "
                               f"a VarHandle: it cannot be frozen into an ahead-of-time "
                               f"library", **node.error_context())
        name = handle.attrs.get("shared_name") or handle.name
        value = g.add_node("Const", [], {"value": frozen(resources.variable(name).read())},
                           name=f"frozen/{name}", loc=node.loc).outputs[0]
        if node.op == "ResourceGather":  # = Gather(ReadVariable(v), ids) on axis 0
            value = g.add_node("Gather", [value, node.inputs[1]], {}, name=f"{node.name}/frozen",
                               loc=node.loc).outputs[0]
        replace[node.outputs[0]] = value
        dead.append(node)
    g.replace_all_uses(replace)
    g.remove_nodes(dead)
    g.sort()  # the constants were appended after their readers


def c_identifier(name: str) -> str:
    """`name` as a C identifier (or an error saying why it cannot be one)."""
    if not _C_NAME.match(name):
        raise CompileError(f"{name!r} is not a valid C identifier: pass --name")
    return name


def _fixed_dims(t: TensorType) -> str:
    # the dims a user must fix: known ones as they are, N where one is unknown
    return ",".join("N" if d is None else str(d) for d in (t.shape or ()))


def _static_graph(cf: Any, resources: Any) -> Graph:
    from ...compiler.pipeline import run_pipeline
    for v, n in zip(cf.graph.args, cf.graph.arg_names):
        if not (isinstance(v.type, TensorType) and v.type.is_fully_defined):
            raise CompileError(f"argument '{n}' has type {v.type}: an ahead-of-time library "
                               f"needs fixed shapes (give them in the input signature, "
                               f"or with the command line's --signature "
                               f"'{n}:{v.type.dtype.ir_name}[{_fixed_dims(v.type)}]')")
    from ...passes.placement import placement_scope
    from ...runtime.devices import default_device_manager
    frozen = freeze_variables(cf.graph, resources)
    # The library runs the whole function on one CPU: device requests do not apply, and
    # placement may use no other device (were nodes placed on two, the graph would be
    # cut into partitions and a library of one of them would lose the others' results).
    for node in frozen.walk():
        node.device = None
    cpu0 = default_device_manager().default_device
    with placement_scope([cpu0], cpu0.name):
        graph = run_pipeline(frozen, target="cpu")
    devices = {n.assigned_device for n in graph.walk()} - {None}
    if len(devices) > 1:
        raise CompileError(f"cannot compile '{graph.name}' ahead of time: it was placed on "
                           f"{len(devices)} devices ({', '.join(sorted(devices))}), a "
                           f"library runs on one")
    return graph


def _plan(graph: Graph) -> StepPlan:
    try:
        plan = plan_step(graph)
    except Ineligible as e:
        raise CompileError(f"cannot compile '{graph.name}' ahead of time: {e}") from None
    if plan.var_names:  # (the library passes no variable table: freezing missed a use)
        raise CompileError(f"cannot compile '{graph.name}' ahead of time: it still uses the "
                           f"variables {', '.join(plan.var_names)}, which the library cannot "
                           f"hold")
    missing = sorted({_callback_name(n) for n in plan.callback_nodes.values()})
    if missing:
        python = sorted({op for n in plan.callback_nodes.values() for op in _ops_in(n)
                         if op in PYTHON_OPS})
        names = ", ".join(f"{op} ({PYTHON_OPS[op]})" for op in python)
        why = (f": {names} run{'s' if len(python) == 1 else ''} Python code, which a C "
               f"library cannot call") if python else ""
        raise UnimplementedError(f"cannot compile '{graph.name}' ahead of time: no native "
                                 f"lowering for {', '.join(missing)}{why}")
    return plan


def _callback_name(node: Any) -> str:
    """How the refusal names a node the step would run in Python: its op, and for a fused
    cluster the ops inside and why (an empty one runs in Python, whose kernels raise
    the errors of ops whose operands are not empty)."""
    if node.op != "Fusion" or not node.regions:
        return node.op
    inner = sorted({n.op for n in node.regions[0].nodes})
    empty = [v.type for v in node.outputs
             if isinstance(v.type, TensorType) and v.type.num_elements == 0]
    why = f", whose result {empty[0]} is empty" if empty else ""
    return f"Fusion (of {', '.join(inner)}{why})"


PYTHON_OPS = {"PyFunc": "tf.py_func", "Print": "tf.Print", "PrintV2": "tw.print"}
"""Ops whose kernels are Python (the step calls back into it), with what made them."""


def _ops_in(node: Any) -> set[str]:
    """The ops of `node` and of the nodes of its regions, at any depth."""
    return {node.op} | {op for r in node.regions for n in r.nodes for op in _ops_in(n)}


def emit_library_module(plan: StepPlan, name: str) -> ir.Module:
    """The step module plus the constants, ``<name>_run`` and ``<name>_run_with_error``."""
    module = emit_step(plan, gemm_mode="generated", allow_callbacks=False)
    step = module.globals[STEP_NAME]
    step.linkage = "internal"
    # constants as read-only globals, and a table of pointers to them
    pointers = []
    for k, value in enumerate(plan.consts):
        data = bytearray(np.ascontiguousarray(value).tobytes()) or bytearray(1)
        gv = ir.GlobalVariable(module, ir.ArrayType(I8, len(data)), f"tw_const_{k}")
        gv.global_constant = True
        gv.linkage = "internal"
        gv.align = ALIGN
        gv.initializer = ir.Constant(ir.ArrayType(I8, len(data)), data)
        pointers.append(gv.bitcast(I8P))
    table_t = ir.ArrayType(I8P, max(1, len(pointers)))
    table = ir.GlobalVariable(module, table_t, "tw_consts")
    table.global_constant = True
    table.linkage = "internal"
    table.initializer = ir.Constant(table_t, pointers or [ir.Constant(I8P, None)])

    malloc = ir.Function(module, ir.FunctionType(I8P, [I64, I64]), "aligned_alloc")
    free = ir.Function(module, ir.FunctionType(ir.VoidType(), [I8P]), "free")
    # tw_run(args, results, failed): one call with its own scratch memory; the status,
    # and the failing action's id in *failed
    run = ir.Function(module, ir.FunctionType(I32, [I8PP, I8PP, ir.PointerType(I32)]),
                      "tw.run")
    args, results, failed = run.args
    b = ir.IRBuilder(run.append_basic_block("entry"))
    b.store(I32(-1), failed)
    _emit_overlap_check(b, module, plan, args, results, failed)
    size = -(-max(1, plan.workspace_bytes) // ALIGN) * ALIGN
    ws = b.call(malloc, [I64(ALIGN), I64(size)])
    ok = b.append_basic_block("run")
    oom = b.append_basic_block("oom")
    b.cbranch(b.icmp_unsigned("==", ws, ir.Constant(I8P, None)), oom, ok)
    b.position_at_end(oom)
    b.ret(I32(-1))
    b.position_at_end(ok)
    no_vars = b.alloca(I8P)
    status = b.call(step, [args, results, no_vars, b.gep(table, [I64(0), I64(0)]), ws, failed,
                           ir.Constant(I8P, None),
                           ir.Constant(ir.PointerType(CALLBACK_TYPE), None)])
    b.call(free, [ws])
    b.ret(status)

    fn = ir.Function(module, ir.FunctionType(I32, [I8PP, I8PP]), f"{name}_run")
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    b.ret(b.call(run, [*fn.args, b.alloca(I32)]))

    lookup = emit_error_lookup(module, plan, "tw.error_message")
    verbose = ir.Function(module, ir.FunctionType(I32, [I8PP, I8PP, ir.PointerType(I8P)]),
                          f"{name}_run_with_error")
    args, results, error = verbose.args
    b = ir.IRBuilder(verbose.append_basic_block("entry"))
    failed = b.alloca(I32)
    status = b.call(run, [args, results, failed])
    with b.if_then(b.icmp_unsigned("!=", error, ir.Constant(ir.PointerType(I8P), None))):
        b.store(b.call(lookup, [status, b.load(failed)]), error)
    b.ret(status)
    exported = {fn, verbose}
    # Only the entry points are exported. A program may link several libraries, whose node
    # functions share names ("n0.Fusion"); exported, the dynamic linker would bind every
    # library's calls to the first library's definitions.
    for gv in module.global_values:
        defined = (not gv.is_declaration if isinstance(gv, ir.Function)
                   else getattr(gv, "initializer", None) is not None)
        if defined and gv not in exported:
            gv.linkage = "internal"
    return module


def _nbytes(t: TensorType) -> int:
    return int(t.num_elements) * t.dtype.itemsize


def _emit_overlap_check(b: ir.IRBuilder, module: ir.Module, plan: StepPlan, args: ir.Value,
                        results: ir.Value, failed: ir.Value) -> None:
    """Return `OVERLAP_STATUS` (``*failed`` = the result's index) when a result buffer
    overlaps an argument's or an earlier result's: results are written while arguments
    are still read, so an in-place call (``results[0] == args[0]``) computed garbage
    and returned 0. Buffers of no bytes overlap nothing."""
    from .loops import counted_loop

    def sizes(name: str, types: list[TensorType]) -> ir.Value:
        t = ir.ArrayType(I64, max(1, len(types)))
        gv = ir.GlobalVariable(module, t, name)
        gv.global_constant = True
        gv.linkage = "internal"
        gv.initializer = ir.Constant(t, [_nbytes(x) for x in types] or [0])
        return gv

    g = plan.graph
    if not g.results:
        return
    arg_sizes = sizes("tw.arg_bytes", [v.type for v in g.args])
    res_sizes = sizes("tw.result_bytes", [v.type for v in g.results])

    def buffer(table: ir.Value, size_table: ir.Value, k: ir.Value) -> tuple[ir.Value, ir.Value]:
        start = b.ptrtoint(b.load(b.gep(table, [k])), I64)
        return start, b.add(start, b.load(b.gep(size_table, [I64(0), k])))

    def refuse_if_overlapping(j: ir.Value, r: tuple, o: tuple) -> None:
        overlap = b.and_(b.icmp_unsigned("<", o[0], r[1]), b.icmp_unsigned("<", r[0], o[1]))
        nonempty = b.and_(b.icmp_unsigned("<", r[0], r[1]), b.icmp_unsigned("<", o[0], o[1]))
        with b.if_then(b.and_(overlap, nonempty), likely=False):
            b.store(b.trunc(j, I32), failed)
            b.ret(I32(OVERLAP_STATUS))

    with counted_loop(b, 0, len(g.results), name="result") as j:
        r = buffer(results, res_sizes, j)
        with counted_loop(b, 0, len(g.args), name="arg") as i:
            refuse_if_overlapping(j, r, buffer(args, arg_sizes, i))
        with counted_loop(b, 0, j, name="earlier") as k:
            refuse_if_overlapping(j, r, buffer(results, res_sizes, k))


_CPU_CHECK = """
import sys
import llvmlite.binding as llvm
llvm.initialize_native_target()
llvm.initialize_native_asmprinter()
tm = llvm.Target.from_triple(sys.argv[1]).create_target_machine(cpu=sys.argv[2], reloc="pic")
tm.emit_object(llvm.parse_assembly("define i32 @f() {\\n  ret i32 0\\n}"))
"""


def check_cpu_name(cpu: str, triple: str) -> None:
    """A CompileError unless LLVM knows CPU `cpu` for `triple`. LLVM only warns about an
    unknown name, then may abort the whole process when it emits code for it, so a child
    process tries it."""
    import sys
    proc = subprocess.run([sys.executable, "-c", _CPU_CHECK, triple, cpu],
                          capture_output=True, text=True)
    if proc.returncode != 0 or "not a recognized processor" in proc.stderr:
        raise CompileError(f"unknown CPU {cpu!r} for {triple}: give an LLVM CPU name such as "
                           f"x86-64-v3 (or 'host' for this machine)")


def _object_code(module: ir.Module, cpu: str) -> bytes:
    info = jit.host_info()
    if cpu != "host":
        check_cpu_name(cpu, info.triple)
    ref = jit.parse_and_optimize(str(module), loop_vectorize=True)
    # every LLVM call holds the JIT's lock: LLVM's global state is shared with other threads
    with jit.LLVM_LOCK:
        target = llvm.Target.from_triple(info.triple)
        if cpu == "host":
            tm = target.create_target_machine(cpu=info.cpu, features=info.features, opt=3,
                                              reloc="pic", codemodel="default")
        else:
            tm = target.create_target_machine(cpu=cpu, opt=3, reloc="pic",
                                              codemodel="default")
        return tm.emit_object(ref)


def result_paths(cf: Any) -> dict[int, str]:
    """Where each result of concrete function `cf` sits in what the Python function
    returns (``['probs']``, ``[1][0]``, ``.logits``), by result index; nothing for a
    function that returns one tensor. A C caller gets the results flat, in this order."""
    paths: list[str] = []

    def walk(tree: Any, path: str) -> None:
        kind = tree[0]
        if kind == "leaf":
            paths.append(path)
        elif kind == "dict":
            for key, sub in zip(tree[1], tree[2]):
                walk(sub, f"{path}[{key!r}]")
        elif kind == "namedtuple":
            for field, sub in zip(tree[1]._fields, tree[2]):
                walk(sub, f"{path}.{field}")
        else:  # tuple, list
            for i, sub in enumerate(tree[1]):
                walk(sub, f"{path}[{i}]")

    walk(cf._output_tree, "")
    out: dict[int, str] = {}
    for path, (is_result, index) in zip(paths, cf._output_leaves):
        if is_result and path:
            out[index] = f"{out[index]} and {path}" if index in out else path
    return out


def _comment(text: str) -> str:
    """`text` safe inside a C comment."""
    return text.replace("*/", "*\\/")


def _header(plan: StepPlan, name: str, source: str,
            paths: dict[int, str] | None = None) -> str:
    g = plan.graph
    paths = paths or {}
    guard = f"TW_{name.upper()}_H"
    lines = [f"/* {name}.h: generated by `tensorweave aot` from {_comment(source)}. */",
             f"#ifndef {guard}", f"#define {guard}", "", "#include <stdint.h>", "",
             "#ifdef __cplusplus", 'extern "C" {', "#endif", "",
             "/* Buffers are dense and row-major, in the order below; dtypes as C types.",
             " * The library needs only libc and libm (no BLAS, no OpenMP, no Python):",
             f" *   cc main.c -I DIR -L DIR -l{name} -lm -Wl,-rpath,DIR",
             " * Each call allocates its own scratch memory, so calls may run concurrently.",
             " * Result buffers must not overlap argument buffers or each other (results are",
             " * written as the arguments are still being read): such a call returns -2.",
             " * Variables the function read were frozen into the library when it was built.",
             " */", "",
             f"#define {name.upper()}_NUM_ARGS {len(g.args)}",
             f"#define {name.upper()}_NUM_RESULTS {len(g.results)}", ""]

    def describe(kind: str, k: int, label: str, t: TensorType, path: str = "") -> None:
        p = f"{name.upper()}_{kind}{k}"
        dims = ", ".join(str(d) for d in t.shape) or "1"
        where = _comment(f", returned as {path}") if path else ""
        lines.append(f"/* {kind.lower()} {k} '{label}'{where}: {t.dtype.ir_name}"
                     f"{format_shape(t.shape)} ({_C_TYPES[t.dtype.ir_name]}) */")
        lines.append(f"#define {p}_RANK {t.rank}")
        lines.append(f"#define {p}_SIZE {int(t.num_elements)} /* elements */")
        lines.append(f'#define {p}_DTYPE "{t.dtype.ir_name}"')
        lines.append(f"static const int64_t {p}_SHAPE[] = {{{dims}}};")
        lines.append("")

    for k, (v, label) in enumerate(zip(g.args, g.arg_names)):
        describe("ARG", k, label, v.type)
    for k, v in enumerate(g.results):
        describe("RESULT", k, g.result_names[k] if k < len(g.result_names) else f"output{k}",
                 v.type, paths.get(k, ""))
    lines += ["/* Runs the function: args[i] points to argument i, results[j] to a buffer for",
              " * result j. Returns 0 on success, -1 if scratch memory cannot be allocated,",
              " * -2 (computing nothing) if a result buffer overlaps an argument's or another",
              " * result's, or a positive status from the op that failed (e.g. an index out",
              " * of range). */",
              f"int {name}_run(const void *const *args, void *const *results);", "",
              f"/* {name}_run, and when it fails, *error points to a static message saying",
              " * why (the op, its name and the source line it was built from); NULL when",
              " * it succeeds. error may be NULL. */",
              f"int {name}_run_with_error(const void *const *args, void *const *results,",
              " " * len(f"int {name}_run_with_error(") + "const char **error);", "",
              "#ifdef __cplusplus", "}", "#endif", "", f"#endif /* {guard} */", ""]
    return "\n".join(lines)


def c_compiler() -> str:
    """The C compiler used to link libraries: ``$CC``, else cc or gcc on the PATH, else
    the Zig toolchain's ``zig cc`` when the ``ziglang`` package is installed (pip
    installs it with the test extra, so machines without gcc can build libraries)."""
    for cc in (os.environ.get("CC"), "cc", "gcc"):
        if cc and shutil.which(cc.split()[0]):
            return cc
    import importlib.util
    import sys
    if importlib.util.find_spec("ziglang") is not None:
        return f"{sys.executable} -m ziglang cc"
    raise CompileError("no C compiler found to link the library: install gcc, set $CC, or "
                       "pip install ziglang")


def build_library(cf: Any, out_dir: str, name: str | None = None, cpu: str = "host",
                  resources: Any = None, source: str = "") -> Library:
    """Write ``lib<name>.so`` and ``<name>.h`` for concrete function `cf` into `out_dir`."""
    from ...runtime.resources import default_resource_manager
    graph = _static_graph(cf, resources or default_resource_manager())
    name = c_identifier(name or cf.graph.name)
    plan = _plan(graph)
    obj = _object_code(emit_library_module(plan, name), cpu)
    lib = os.path.join(out_dir, f"lib{name}.so")
    header = os.path.join(out_dir, f"{name}.h")
    atomic_files.make_directory(out_dir)
    # out_dir is the user's: only temporaries of the files written here are swept
    atomic_files.sweep_temporaries(out_dir, only_for=[os.path.basename(lib),
                                                       os.path.basename(header)])
    # The linker writes in a private temporary directory (it replaces its output file,
    # so it cannot write into our locked temporary); the result is copied into place.
    with tempfile.TemporaryDirectory() as tmp:
        obj_path = os.path.join(tmp, f"{name}.o")
        with open(obj_path, "wb") as f:
            f.write(obj)
        linked = os.path.join(tmp, os.path.basename(lib))
        # -lpthread: big GEMMs run on threads (libc has them from glibc 2.34; older ones need it)
        cmd = c_compiler().split() + ["-shared", "-o", linked, obj_path, "-lm", "-lpthread"]
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode != 0:
            raise CompileError(f"linking {lib} failed: {' '.join(cmd)}\n{proc.stderr.strip()}")
        with open(linked, "rb") as f:
            atomic_files.write_bytes(lib, f.read(), mode=0o777)
    atomic_files.write_bytes(header, _header(plan, name, source or cf.graph.name,
                                             result_paths(cf)).encode())
    return Library(lib, header, name, plan)
