"""The one prepared run for a lent GPU (issue 12): tests, interop, benchmarks and the
examples on a real device, in one call of the device tool, every result under $OUT.

    bash tools/gpu_device_check.sh                 # on the lent machine (OUT set by the tool)
    bash tools/gpu_device_check.sh --simulate      # here: the same run, tiny, under numba's
                                                   # CUDA simulator (checks the machinery)
    bash tools/gpu_device_check.sh --plan          # print the steps as JSON, run nothing
    bash tools/gpu_device_check.sh --prepare       # here, before the call: download the
                                                   # wheels the device image may lack

The device machine has no network, so what its image may lack (pytest for the tests,
scikit-learn for the examples' bundled digits, threadpoolctl, ml_dtypes) comes as a
wheelhouse, `build/gpu_wheels` (made by --prepare, carried with ``carry=["build/gpu_wheels"]``)
and is installed offline into a private directory only where an import fails.

Steps run in a fixed order, each with its own timeout, inside one overall budget
(`--budget`, 510 s by default: the device tool allows 600 s a call and the session's
device time is 15 minutes, so the run must not need a second try; the dry run gets
1200 s, the simulator being slow). A failing or timed
out step is recorded and the run goes on. After every step `results.json` and
`results.md` are rewritten, so a run cut short still leaves what it measured. Each
step's output is in `logs/STEP.log`, pytest's in `junit/STEP.xml`, under a work
directory: on the device that is outside $OUT (the device tool returns at most 8 files from
$OUT), and both folders travel back as one archive, `OUT/logs.tar.gz`, rewritten after every
step; with `--out` alone (tests, the dry run) the work directory is OUT itself.

The run uses the image's llvmlite, numba and numba-cuda when a smoke test (a cpu and a gpu
`tw.compile` of x * 2 + 1) passes with them; otherwise it unpacks the versions this
project is tested with from `build/gpu_fallback/stack.tar.xz` (`--prepare-stack` makes it;
carry ``build/gpu_fallback``) and uses those if their smoke test passes
(`logs/stack.log` says which).
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
import tarfile
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
WHEELHOUSE = "build/gpu_wheels"
DEVICE_BUDGET_S = 510  # the device tool's per-call limit is 600 s: leave room to copy $OUT
SIMULATE_BUDGET_S = 1200  # the dry run has no device clock to respect, only slow threads
# what the device image may lack, by import name -> wheel (project name) to install
OPTIONAL_WHEELS = {"pytest": "pytest", "sklearn": "scikit-learn", "threadpoolctl": "threadpoolctl",
                   "ml_dtypes": "ml_dtypes", "scipy": "scipy"}
# what those wheels need besides what the image has (numpy, scipy)
WHEEL_DEPS = {"pytest": ["pluggy", "iniconfig", "packaging"], "scikit-learn": ["joblib"]}
# the wheels --prepare downloads (pure-Python ones and cp312 manylinux builds: the image's
# Python is 3.12), dependencies of the above included
PREPARE_WHEELS = ["pytest", "pluggy", "iniconfig", "packaging", "scikit-learn", "joblib",
                  "threadpoolctl", "ml_dtypes"]
PIP_LIST = ("numba|llvmlite|numpy|scipy|torch|cupy|jax|hypothesis|pytest|networkx|grpcio|"
            "safetensors|ml.dtypes|threadpoolctl|scikit|cuda|nvidia")
TINY_MNIST = "build/gpu_check_tiny_mnist"  # the dry run's data set (written by the run)
FALLBACK_STACK = "build/gpu_fallback/stack.tar.xz"  # llvmlite, numba, numba-cuda (cp312)
STACK_PACKAGES = ["llvmlite", "numba", "numba-cuda"]
SMOKE = ("import numpy as np, tensorweave as tw, llvmlite, numba; "
         "from numba import cuda; "
         "print('llvmlite', llvmlite.__version__, 'numba', numba.__version__, "
         "'cuda available', cuda.is_available()); "
         "x = np.arange(5, dtype=np.float32); "
         "f = lambda v: v * 2 + 1; "
         "c = tw.compile(f)(x); g = tw.compile(f, target='gpu')(x); "
         "assert np.array_equal(c, x * 2 + 1) and np.array_equal(g, x * 2 + 1), (c, g); "
         "print('smoke passed')")
OP_SUITE_SHARDS = 6  # tests/ops files run in this many pytest processes at once (16 cores)


@dataclass
class Step:
    """One command of the run: `argv` run from the repository root with `env` added,
    stopped after `timeout` seconds; `group` steps of one name run at the same time."""

    name: str
    argv: list[str]
    timeout: int
    env: dict[str, str] = field(default_factory=dict)
    group: str = ""
    junit: bool = False
    about: str = ""
    # runs only on time the others left (not counted in the worst case; skipped when
    # less than a minute is left)
    optional: bool = False

    @property
    def command(self) -> str:
        env = " ".join(f"{k}={shlex.quote(v)}" for k, v in self.env.items())
        return (env + " " if env else "") + shlex.join(self.argv)


def _pytest(name: str, args: list[str], timeout: int, env: dict[str, str], group: str = "",
            about: str = "") -> Step:
    # -v: one line per test as it finishes, so a step stopped by its timeout (pytest then
    # writes no junit file) still shows which tests passed and which one was running
    return Step(name, [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-v",
                       "-W", "ignore::RuntimeWarning", "-o", "junit_family=xunit2", *args],
                timeout, env, group, True, about)


def _op_shards(simulate: bool) -> list[list[str]]:
    files = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "tests" / "ops").glob("test_*.py"))
    if simulate:  # one small file: the machinery, not the suite (CI runs the suite)
        return [["tests/ops/test_activations.py", "-k", "relu"]]
    shards: list[list[str]] = [[] for _ in range(min(OP_SUITE_SHARDS, len(files)))]
    for i, f in enumerate(files):  # round robin: the big files spread out
        shards[i % len(shards)].append(f)
    return shards


def plan(simulate: bool) -> list[Step]:
    """The steps of the run, in order (see the module docstring)."""
    py = sys.executable
    env = {"PYTHONPATH": str(ROOT)}
    if simulate:
        env["NUMBA_ENABLE_CUDASIM"] = "1"
    steps = [
        Step("environment", [py, str(ROOT / "tools" / "gpu_env_report.py")], 30, env,
             about="nvidia-smi, pip list of what we use, numba's view of the device"),
    ]
    device_tests = dict(env, TW_GPU_TESTS_ON_DEVICE="1")
    if simulate:
        gpu_args = ["tests/gpu/sim/test_cases.py", "-k", "add or matmul"]
    else:
        gpu_args = ["tests/gpu", "--ignore=tests/gpu/test_simulator.py",
                    "--ignore=tests/gpu/test_torch_interop.py"]
    steps.append(_pytest("gpu-tests", gpu_args, 170, device_tests, "tests",
                         "tests/gpu without the simulator (sim/ runs on the device too)"))
    for i, shard in enumerate(_op_shards(simulate)):
        steps.append(_pytest(f"op-suite-{i}", [*shard, "-p", "tests.gpu.op_suite_plugin"],
                             170, env, "tests", "tests/ops on the gpu target"))
    steps.append(_pytest("torch-interop", ["tests/gpu/test_torch_interop.py", "-rs"], 45, env,
                         about="DLPack / CUDA Array Interface with PyTorch"))
    bench = [py, "benchmarks/gpu.py"] + (["--smoke"] if simulate else [])
    steps.append(Step("benchmark", bench, 150, env,
                      about="benchmarks/gpu.py: W2-W6 beside PyTorch on the same card"))
    gpu_default = dict(env, TW_DEFAULT_TARGET="gpu")
    # the simulator runs a Python thread per GPU thread: the examples' test-set accuracy
    # over the bundled digits (360 images) would take minutes, so the dry run reads a
    # tiny IDX data set instead (`write_tiny_mnist`)
    tiny = ["--data", str(ROOT / TINY_MNIST)] if simulate else []
    mlp = ["--steps", "3", "--batch", "8", "--hidden", "8", *tiny] if simulate \
        else ["--steps", "300"]
    cnn = (["--steps", "2", "--batch", "2", "--filters", "2", "2", "--hidden", "8", *tiny]
           if simulate else ["--steps", "200"])
    slow = 2 if simulate else 1
    steps.append(Step("mnist-mlp", [py, "examples/mnist_mlp.py", *mlp], 45 * slow, gpu_default,
                      about="the MNIST MLP example, @tw.compile on the gpu target"))
    steps.append(Step("mnist-cnn", [py, "examples/mnist_cnn.py", *cnn], 55 * slow, gpu_default,
                      about="the MNIST CNN example, @tw.compile on the gpu target"))
    if not simulate:  # the other yardstick, on whatever time is left
        steps.append(Step("benchmark-torch-compile",
                          [py, "benchmarks/gpu.py", "--quick", "--compile", "--only",
                           "torch.compile"], 240, env, optional=True,
                          about="benchmarks/gpu.py's torch.compile rows (small sizes)"))
    return steps


OPTIONAL_MIN_S = 60


def select(steps: list[Step], names: str | None, timeouts: list[str]) -> list[Step]:
    """`steps` reordered and filtered by `names` (comma-separated names, a shard family
    such as op-suite standing for all its shards, in the order to run; None keeps the
    plan), with timeouts overridden by ``NAME=S`` items.
    An unknown name is an error: a typo must not silently drop a step."""
    def matches(step: Step, name: str) -> bool:
        rest = step.name[len(name) + 1:]  # op-suite matches op-suite-0, op-suite-1, ...
        return step.name == name or (step.name.startswith(name + "-") and rest.isdigit())
    for item in timeouts:
        name, _, seconds = item.partition("=")
        hits = [s for s in steps if matches(s, name)]
        if not hits or not seconds.isdigit():
            raise SystemExit(f"--timeout {item!r}: expected NAME=SECONDS with NAME one of "
                             f"{[s.name for s in steps]}")
        for s in hits:
            s.timeout = int(seconds)
    if names is None:
        return steps
    chosen: list[Step] = []
    for name in (n.strip() for n in names.split(",") if n.strip()):
        hits = [s for s in steps if matches(s, name) and s not in chosen]
        if not hits:
            raise SystemExit(f"--steps: no step {name!r}; the steps are "
                             f"{[s.name for s in steps]}")
        chosen += hits
    return chosen


def wall_time(steps: list[Step]) -> int:
    """Worst-case seconds of `steps` (a group costs its longest member; optional steps
    only use what is left, so they do not count)."""
    total, groups = 0, {}
    for s in steps:
        if s.optional:
            continue
        if s.group:
            groups[s.group] = max(groups.get(s.group, 0), s.timeout)
        else:
            total += s.timeout
    return total + sum(groups.values())


# ---------------------------------------------------------------------------- running

@dataclass
class Result:
    name: str
    command: str
    status: str  # passed, failed, timeout, skipped
    seconds: float
    rc: int | None
    tail: str


class Run:
    """Runs steps, writing `results.json`/`results.md` to `out` and each step's log (and
    pytest's junit file) under `work`; when `work` is not `out`, both folders are archived
    to `out/logs.tar.gz` after every step."""

    def __init__(self, out: Path, budget: float, work: Path | None = None) -> None:
        self.out = out
        self.work = work or out
        self.deadline = time.monotonic() + budget
        self.results: list[Result] = []
        self.extra_path = ""
        out.mkdir(parents=True, exist_ok=True)
        (self.work / "logs").mkdir(parents=True, exist_ok=True)
        (self.work / "junit").mkdir(parents=True, exist_ok=True)

    def _start(self, step: Step) -> tuple[subprocess.Popen, float, float]:
        env = dict(os.environ, **step.env)
        if self.extra_path:
            env["PYTHONPATH"] = env.get("PYTHONPATH", "") + os.pathsep + self.extra_path
        argv = list(step.argv)
        if step.junit:
            argv += [f"--junitxml={self.work / 'junit' / (step.name + '.xml')}"]
        log = open(self.work / "logs" / f"{step.name}.log", "w")  # noqa: SIM115 - closed in _finish
        log.write(f"$ {step.command}\n")
        log.flush()
        proc = subprocess.Popen(argv, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT,
                                start_new_session=True)
        proc._tw_log = log  # type: ignore[attr-defined]
        limit = min(step.timeout, self.deadline - time.monotonic())
        return proc, time.monotonic(), limit

    def _finish(self, step: Step, proc: subprocess.Popen, start: float, limit: float) -> None:
        try:
            rc = proc.wait(timeout=max(0.0, start + limit - time.monotonic()))
            status = "passed" if rc == 0 else "failed"
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, 9)  # the step's own process group (start_new_session)
            rc, status = proc.wait(), "timeout"
        proc._tw_log.close()  # type: ignore[attr-defined]
        text = (self.work / "logs" / f"{step.name}.log").read_text(errors="replace")
        self.results.append(Result(step.name, step.command, status,
                                   round(time.monotonic() - start, 1), rc, text[-1500:]))
        self.write()

    def skip(self, step: Step, why: str) -> None:
        self.results.append(Result(step.name, step.command, "skipped", 0.0, None, why))
        self.write()

    def run(self, steps: list[Step]) -> None:
        i = 0
        while i < len(steps):
            batch = [steps[i]]
            while steps[i].group and i + 1 < len(steps) and steps[i + 1].group == steps[i].group:
                i += 1
                batch.append(steps[i])
            i += 1
            left = self.deadline - time.monotonic()
            if left < 5 or (batch[0].optional and left < OPTIONAL_MIN_S):
                for s in batch:
                    self.skip(s, f"the run's time budget is spent ({left:.0f} s left)")
                continue
            started = [(s, *self._start(s)) for s in batch]
            for s, proc, start, limit in started:
                self._finish(s, proc, start, limit)

    def write(self) -> None:
        data = [asdict(r) for r in self.results]
        (self.out / "results.json").write_text(json.dumps(data, indent=1))
        lines = ["| step | status | seconds | command |", "| --- | --- | --- | --- |"]
        lines += [f"| {r.name} | {r.status} | {r.seconds} | `{r.command}` |" for r in self.results]
        for r in self.results:
            lines += ["", f"## {r.name}: {r.status}", "", "```", r.tail.rstrip(), "```"]
        (self.out / "results.md").write_text("\n".join(lines) + "\n")
        if self.work != self.out:
            with tarfile.open(self.out / "logs.tar.gz", "w:gz") as tar:
                for folder in ("logs", "junit"):
                    tar.add(self.work / folder, arcname=folder)


def write_tiny_mnist(directory: Path, train: int = 32, test: int = 8) -> None:
    """MNIST's four IDX files with a few random images, for the examples in the dry run
    (their shapes and dtypes are MNIST's; the values are noise)."""
    import numpy as np
    directory.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(0)

    def idx(name: str, array: np.ndarray) -> None:
        header = bytes([0, 0, 8, array.ndim]) + b"".join(
            int(d).to_bytes(4, "big") for d in array.shape)
        (directory / name).write_bytes(header + array.astype(np.uint8).tobytes())
    for prefix, n in (("train", train), ("t10k", test)):
        idx(f"{prefix}-images-idx3-ubyte", rng.integers(0, 256, (n, 28, 28)))
        idx(f"{prefix}-labels-idx1-ubyte", rng.integers(0, 10, n))


def install_missing(out: Path) -> str:
    """Install, offline from the wheelhouse, what this Python cannot import; returns the
    directory to add to PYTHONPATH ("" when nothing was needed or possible). A module
    with no wheel in the wheelhouse is reported and left out (the steps needing it fail
    with their own message), so one gap does not stop the others being installed."""
    def absent(module: str) -> bool:
        return subprocess.run([sys.executable, "-c", f"import {module}"],
                              capture_output=True).returncode != 0
    missing = [wheel for module, wheel in OPTIONAL_WHEELS.items() if absent(module)]
    report = out / "logs" / "wheels.log"
    house = ROOT / WHEELHOUSE
    if not missing:
        report.write_text("every optional module imports: nothing installed\n")
        return ""
    if not house.is_dir():
        report.write_text(f"missing {missing}, and no {WHEELHOUSE} (run --prepare here and "
                          f"carry it): steps that need them will fail\n")
        return ""
    have = {p.name.split("-")[0].lower().replace("_", "-") for p in house.glob("*.whl")}
    # dependencies only where the image lacks them too: the private directory comes
    # before site-packages on PYTHONPATH, so anything installed there shadows the image's
    wanted = missing + [dep for w in missing for dep in WHEEL_DEPS.get(w, []) if absent(dep)]
    installable = [w for w in wanted if w.lower().replace("_", "-") in have]
    lines = [f"missing {missing}; not in {WHEELHOUSE}: "
             f"{sorted(set(wanted) - set(installable)) or 'none'}"]
    target = Path(os.environ.get("TMPDIR", "/tmp")) / "tw_gpu_wheels"
    if installable:
        proc = subprocess.run([sys.executable, "-m", "pip", "install", "--no-index", "--no-deps",
                               "--find-links", str(house), "--target", str(target),
                               *installable], capture_output=True, text=True, timeout=120)
        lines += [proc.stdout, proc.stderr]
    report.write_text("\n".join(lines) + "\n")
    return str(target) if installable else ""


def _smoke(extra_path: str) -> tuple[bool, str]:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in (str(ROOT), extra_path) if p))
    try:
        proc = subprocess.run([sys.executable, "-c", SMOKE], capture_output=True, text=True,
                              timeout=90, cwd=ROOT, env=env)
    except subprocess.TimeoutExpired:
        return False, "the smoke test timed out (90 s)"
    text = (proc.stdout + proc.stderr)[-3000:]
    return proc.returncode == 0, text


def choose_stack(work: Path) -> tuple[str, bool]:
    """The llvmlite/numba/numba-cuda to run with, and whether its smoke test passed: ""
    for the image's own when its smoke test passes, else the directory the fallback
    archive was unpacked into when that one's passes (else "", and the steps fail with
    their own messages). Written to `work/logs/stack.log`."""
    report = work / "logs" / "stack.log"
    ok, text = _smoke("")
    lines = ["== the image's packages: " + ("passed" if ok else "FAILED"), text]
    chosen = ""
    archive = ROOT / FALLBACK_STACK
    if not ok and archive.is_file():
        target = Path(tempfile.gettempdir()) / "tw_gpu_stack"
        with tarfile.open(archive) as tar:
            tar.extractall(target, filter="data")
        ok, text = _smoke(str(target))
        lines += ["== the fallback " + FALLBACK_STACK + ": " + ("passed" if ok else "FAILED"),
                  text]
        chosen = str(target) if ok else ""
    elif not ok:
        lines.append(f"no {FALLBACK_STACK} carried: going on with the image's packages")
    report.write_text("\n".join(lines) + "\n")
    return chosen, ok


def prepare_stack() -> int:
    """Pack the llvmlite, numba and numba-cuda this machine runs, as cp312 manylinux
    builds, into FALLBACK_STACK (about 42 MiB with libllvmlite stripped: the device tool
    carries 64 MiB with the working tree)."""
    from importlib.metadata import version
    work = Path(tempfile.mkdtemp())
    pins = [f"{name}=={version(name)}" for name in STACK_PACKAGES]
    proc = subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps",
                           "--only-binary=:all:", "--python-version", "3.12",
                           "--implementation", "cp", "--platform", "manylinux_2_28_x86_64",
                           "--platform", "manylinux_2_27_x86_64", "--platform",
                           "manylinux_2_24_x86_64", "--platform", "manylinux_2_17_x86_64",
                           "--platform", "manylinux2014_x86_64", "-d", str(work / "w"), *pins])
    if proc.returncode:
        return proc.returncode
    site = work / "site"
    for wheel in (work / "w").glob("*.whl"):
        subprocess.run(["unzip", "-q", "-o", str(wheel), "-d", str(site)], check=True)
    for lib in site.glob("llvmlite/binding/*.so"):
        subprocess.run(["strip", "--strip-unneeded", str(lib)], check=False)
    archive = ROOT / FALLBACK_STACK
    archive.parent.mkdir(parents=True, exist_ok=True)
    with tarfile.open(archive, "w:xz", preset=6) as tar:
        for child in sorted(site.iterdir()):
            tar.add(child, arcname=child.name)
    print(f"{archive}: {', '.join(pins)}, {archive.stat().st_size / 2**20:.1f} MiB")
    return 0


def prepare() -> int:
    """Download the wheelhouse (on a machine with a registry, before the device call)."""
    house = ROOT / WHEELHOUSE
    house.mkdir(parents=True, exist_ok=True)
    argv = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
            "--python-version", "3.12", "--platform", "manylinux2014_x86_64",
            "--platform", "manylinux_2_17_x86_64", "--platform", "manylinux_2_28_x86_64",
            "-d", str(house), *PREPARE_WHEELS]
    proc = subprocess.run(argv)
    size = sum(p.stat().st_size for p in house.iterdir()) / 2**20
    print(f"{house}: {len(list(house.iterdir()))} wheels, {size:.1f} MiB "
          f"(the device tool carries at most 64 MiB)")
    return proc.returncode


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--simulate", action="store_true",
                        help="tiny sizes under numba's CUDA simulator (no GPU needed)")
    parser.add_argument("--plan", action="store_true", help="print the steps as JSON, run nothing")
    parser.add_argument("--prepare", action="store_true",
                        help=f"download the wheelhouse into {WHEELHOUSE}")
    parser.add_argument("--prepare-stack", action="store_true",
                        help=f"pack this machine's {', '.join(STACK_PACKAGES)} into "
                             f"{FALLBACK_STACK} (the device run's fallback)")
    parser.add_argument("--budget", type=float, default=None,
                        help=f"seconds for the whole run (default {DEVICE_BUDGET_S}; "
                             f"{SIMULATE_BUDGET_S} with --simulate)")
    parser.add_argument("--steps", default=None,
                        help="comma-separated step names (op-suite: all its shards) to run, "
                             "in this order: a shorter run on what device time is left")
    parser.add_argument("--timeout", action="append", default=[], metavar="NAME=S",
                        help="a step's timeout in seconds (names as for --steps; repeatable)")
    parser.add_argument("--out", default=os.environ.get("OUT"),
                        help="where results go (default: $OUT)")
    args = parser.parse_args(argv)
    if args.prepare:
        return prepare()
    if args.prepare_stack:
        return prepare_stack()
    steps = select(plan(args.simulate), args.steps, args.timeout)
    if args.budget is None:
        args.budget = SIMULATE_BUDGET_S if args.simulate else DEVICE_BUDGET_S
    if args.plan:
        print(json.dumps({"budget_s": args.budget, "worst_case_s": wall_time(steps),
                          "steps": [asdict(s) | {"command": s.command} for s in steps]},
                         indent=1))
        return 0
    if not args.out:
        parser.error("no output directory: set OUT or give --out")
    out = Path(args.out)
    if args.simulate:
        write_tiny_mnist(ROOT / TINY_MNIST)
    # on the device only 8 files come back from $OUT: logs go to a work directory there
    work = out if args.simulate or "OUT" not in os.environ else \
        Path(tempfile.mkdtemp(prefix="tw_gpu_check_"))
    run = Run(out, args.budget, work)  # the budget counts from here, smoke tests included
    if not args.simulate:  # the simulator needs no GPU stack to be chosen
        started = time.monotonic()
        stack, ok = choose_stack(work)
        run.extra_path = stack
        run.results.append(Result("stack", "choose_stack", "passed" if ok else "failed",
                                  round(time.monotonic() - started, 1), None,
                                  (work / "logs" / "stack.log").read_text()[-1500:]))
        run.write()
    run.extra_path = os.pathsep.join(p for p in (run.extra_path, install_missing(work)) if p)
    run.run(steps)
    failed = [r.name for r in run.results if r.status != "passed"]
    print((out / "results.md").read_text().split("\n## ")[0])
    print("not passed: " + (", ".join(failed) if failed else "none"))
    return 0  # every step is recorded; the run itself succeeded


if __name__ == "__main__":
    sys.exit(main())
