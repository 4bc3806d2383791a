"""Review: the object-code cache key covers the code the code generator runs outside
``targets/cpu``.

`jit.codegen_fingerprint` keys keyed object code (`jit.compile_keyed`: a step's code by
its printed graph, without making the IR on a hit) by the content of the cpu target's
own files. But the code generator also runs code elsewhere while it makes IR: the
epilogue fusion asks `passes.epilogue.operand_kind` how to read each operand (scalar,
per channel, full), and every lowering reads `compiler.dtypes` / `compiler.types` /
`compiler.ir`. A new tensorweave whose fix is in one of those files (and not in
``targets/cpu``) loaded the old version's object code from the disk cache: the same
key, the old (wrong) code.
"""

from __future__ import annotations

import ast
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tensorweave.targets.cpu import jit

PACKAGE = Path(jit.__file__).resolve().parents[2]  # .../tensorweave
CPU = PACKAGE / "targets" / "cpu"

# tensorweave modules the cpu target imports that do not shape the code it generates,
# and why (a new import must be added here or to jit.CODEGEN_DEPENDENCIES)
NOT_CODE_INPUTS = {
    "tensorweave._source": "the cache keys themselves",
    "tensorweave.errors": "error classes and messages",
    "tensorweave.config": "placement settings (step records key them)",
    "tensorweave.compiler.pipeline": "runs before the graph is printed into the key",
    "tensorweave.compiler.printer": "prints the graph text that is the key",
    "tensorweave.compiler.registry": "which ops are built in (step records)",
    "tensorweave.passes.shape_inference": "specializes the graph before it is printed",
    "tensorweave.passes.placement": "ahead-of-time compiles: placement before printing",
    "tensorweave.passes._rewrite": "ahead-of-time compiles: freezing before printing",
    "tensorweave.frontend": "the compile log (timing records)",
    "tensorweave.frontend.function": "result ownership of the dataflow path at run time",
    "tensorweave.runtime": "atomic files of the disk cache",
    "tensorweave.runtime.dataflow": "the dataflow executor (no generated code)",
    "tensorweave.runtime.devices": "device lists (placement, not code)",
    "tensorweave.runtime.kernel_context": "per-call state at run time",
    "tensorweave.runtime.profiler": "traces at run time",
    "tensorweave.runtime.resources": "variables at run time",
    "tensorweave.runtime.threads": "BLAS thread limits at run time",
    "tensorweave.targets.reference.executor": "reference kernels run as callbacks",
    "tensorweave.targets.step_cache": "the in-memory cache of steps",
}


def _module_path(name: str) -> str:
    return name.removeprefix("tensorweave.").replace(".", "/") + ".py"


def _imported_outside() -> set[str]:
    """The tensorweave modules outside targets/cpu that its files import (anywhere in
    them: imports inside functions too)."""
    found: set[str] = set()
    for path in sorted(CPU.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.level:
                base = ["tensorweave", "targets", "cpu"][:4 - node.level]
                if node.module is None:
                    found.update(".".join(base + [a.name]) for a in node.names)
                else:
                    found.add(".".join(base + [node.module]))
            elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith(
                    "tensorweave"):
                found.add(node.module)
    return {m for m in found if not m.startswith("tensorweave.targets.cpu")}


def test_every_module_the_code_generator_imports_is_keyed_or_explained():
    keyed = {m for m in _imported_outside() if _module_path(m) in jit.CODEGEN_DEPENDENCIES}
    unexplained = _imported_outside() - keyed - set(NOT_CODE_INPUTS)
    assert not unexplained, (f"add these to jit.CODEGEN_DEPENDENCIES (their code shapes "
                             f"the generated code) or to NOT_CODE_INPUTS: {unexplained}")
    for rel in jit.CODEGEN_DEPENDENCIES:
        assert (PACKAGE / rel).is_file(), rel


@pytest.mark.parametrize("rel", ["passes/epilogue.py", "compiler/dtypes.py"])
def test_an_edit_outside_the_cpu_target_that_shapes_its_code_changes_the_key(tmp_path, rel):
    # two copies of the package, one with `rel` edited: each process's fingerprint
    copies = {}
    for label in ("before", "after"):
        dest = tmp_path / label / "tensorweave"
        shutil.copytree(PACKAGE, dest, ignore=shutil.ignore_patterns("__pycache__"))
        if label == "after":
            with open(dest / rel, "a") as f:
                f.write("\n# a fix in the code the code generator runs\n")
        copies[label] = dest.parent
    prints = {}
    for label, root in copies.items():
        env = {**os.environ, "PYTHONPATH": str(root), "PYTHONDONTWRITEBYTECODE": "1"}
        out = subprocess.run(
            [sys.executable, "-c", "import tensorweave.targets.cpu.jit as j; "
             "print(j.__file__); print(j.codegen_fingerprint())"],
            cwd=root, env=env, capture_output=True, text=True, timeout=120)
        assert out.returncode == 0, out.stderr
        where, fingerprint = out.stdout.split()
        assert where.startswith(str(root))  # (the copy, not the checkout)
        prints[label] = fingerprint
    assert prints["before"] != prints["after"]


def test_an_edit_elsewhere_keeps_the_key(tmp_path):
    # (the point of keying by these files only: editing the frontend keeps the cache)
    dest = tmp_path / "tensorweave"
    shutil.copytree(PACKAGE, dest, ignore=shutil.ignore_patterns("__pycache__"))
    script = ("import tensorweave.targets.cpu.jit as j; print(j.codegen_fingerprint())")
    env = {**os.environ, "PYTHONPATH": str(tmp_path), "PYTHONDONTWRITEBYTECODE": "1"}
    runs = []
    for edit in (False, True):
        if edit:
            with open(dest / "frontend" / "nest.py", "a") as f:
                f.write("\n# an edit the code generator never runs\n")
        out = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, env=env,
                             capture_output=True, text=True, timeout=120)
        assert out.returncode == 0, out.stderr
        runs.append(out.stdout.strip())
    assert runs[0] == runs[1]
