"""The dataflow executor: same results as the in-order reference evaluation, concurrent
steps on one executable, errors that cancel the whole step, timeouts, blocking ops that
cannot starve the pool, and the region hook.

Anything that could hang runs under `within(seconds)`, so a bug fails the test instead
of hanging the suite.
"""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import tensorweave as tw
from tensorweave.compiler.ir import Graph, Node
from tensorweave.compiler.registry import all_ops, def_op, get_op
from tensorweave.compiler.types import TensorType
from tensorweave.runtime import executor as rx
from tensorweave.runtime.dataflow import DataflowExecutable
from tensorweave.runtime.executor import ThreadPool
from tensorweave.runtime.resources import ResourceManager
from tensorweave.targets import compile_for_target
from tensorweave.targets.reference import ReferenceExecutable
from tests.helpers import within

CPU0 = "/job:localhost/replica:0/task:0/device:CPU:0"
CPU1 = "/job:localhost/replica:0/task:0/device:CPU:1"


def _test_op(name: str, **kwargs):
    """Declare an op used only by these tests (once per process)."""
    return get_op(name) if name in all_ops() else def_op(name, **kwargs)


# A pure op whose kernel always fails at run time.
Fails = _test_op("ExecutorTestFails", inputs=["x"], doc="Always raises.")
Fails.infer(lambda x: x)


@Fails.kernel("reference")
def _fails(x):
    raise tw.errors.InvalidArgumentError("ExecutorTestFails rejects every value")


# A kernel with a bug: raises an exception that is no TensorWeaveError.
Buggy = _test_op("ExecutorTestBuggy", inputs=["x"], doc="Raises RuntimeError.")
Buggy.infer(lambda x: x)


@Buggy.kernel("reference")
def _buggy(x):
    raise RuntimeError("kernel bug")


# Waits until the step is cancelled (a well-behaved blocking kernel), at most 30 s.
Hang = _test_op("ExecutorTestHang", inputs=["x"], stateful=True, tags=["blocking"],
                doc="Blocks until the step is cancelled.")
Hang.infer(lambda x: x)


@Hang.kernel("reference", context=True)
def _hang(ctx, x):
    woke = threading.Event()
    token = ctx.cancellation.add_callback(lambda err: woke.set())
    try:
        woke.wait(30)
    finally:
        ctx.cancellation.remove_callback(token)
    raise ctx.cancellation.cancelled_error()


# Sleeps without looking at cancellation (a badly behaved kernel).
Sleep = _test_op("ExecutorTestSleep", inputs=["x"], attrs={}, stateful=True,
                 doc="Sleeps 0.3 s, then returns x.")
Sleep.infer(lambda x: x)


@Sleep.kernel("reference")
def _sleep(x):
    time.sleep(0.3)
    return x


# A functional call: runs its region through the context hook.
Call = _test_op("ExecutorTestCall", inputs=["*args"], num_regions=1, doc="Calls its region.")


@Call.infer
def _call_infer(*args, regions):
    return [v.type for v in regions[0].results]


@Call.kernel("reference", context=True)
def _call_kernel(ctx, *args):
    return tuple(ctx.run_region(ctx.node.regions[0], args))


# Runs a nested compiled step from inside a kernel (a pool thread waiting on the pool).
Nested = _test_op("ExecutorTestNested", inputs=["x"], attrs={}, doc="Runs a nested step.")
Nested.infer(lambda x: x)
_nested_exe: list = []


@Nested.kernel("reference")
def _nested(x):
    return _nested_exe[0](x, timeout=20)[0]


def f32(*shape) -> TensorType:
    return TensorType("f32", shape)


def const(g: Graph, value) -> Node:
    return g.add_node("Const", [], {"value": np.asarray(value)})


def same_bits(got, expected) -> None:
    assert len(got) == len(expected)
    for a, b in zip(got, expected):
        a, b = np.asarray(a), np.asarray(b)
        assert a.dtype == b.dtype and a.shape == b.shape
        assert a.tobytes() == b.tobytes()


@pytest.fixture
def two_cpus():
    before = len(tw.config.list_logical_devices("CPU"))
    tw.config.set_logical_devices("CPU", 2)
    yield
    tw.config.set_logical_devices("CPU", before)


@pytest.fixture
def everything_expensive(monkeypatch):
    """Every op counts as expensive: fan-outs go through the inter-op pool."""
    monkeypatch.setattr(rx, "CHEAP_ELEMENTS", -1)


# ------------------------------------------------------------------- same results

def test_compile_for_target_returns_a_dataflow_executable():
    g = Graph("g")
    x = g.add_arg(f32(2))
    g.set_results([g.add_node("Neg", [x]).outputs[0]])
    exe = compile_for_target(g, "reference")
    assert isinstance(exe, DataflowExecutable)
    assert exe.devices == [CPU0]
    np.testing.assert_array_equal(exe(np.array([1, -2], np.float32))[0], [-1, 2])


def test_tw_compile_and_session_run_on_the_dataflow_executor():
    @tw.compile
    def f(x):
        return tw.tanh(x) * 2.0

    x = np.linspace(-1, 1, 5).astype(np.float32)
    assert isinstance(f.get_concrete_function(x).executable, DataflowExecutable)
    np.testing.assert_array_equal(f(x), (np.tanh(x) * np.float32(2)).astype(np.float32))


def test_independent_branches_match_the_reference_bitwise(everything_expensive):
    g = Graph("branches")
    a, b = g.add_arg(f32(16, 16)), g.add_arg(f32(16, 16))
    left = a
    right = b
    for _ in range(5):
        left = g.add_node("Tanh", [g.add_node("MatMul", [left, a]).outputs[0]]).outputs[0]
        right = g.add_node("Sin", [g.add_node("MatMul", [right, b]).outputs[0]]).outputs[0]
    g.set_results([g.add_node("Add", [left, right]).outputs[0], left, right])
    rng = np.random.default_rng(0)
    args = [rng.normal(size=(16, 16)).astype(np.float32) for _ in range(2)]
    expected = ReferenceExecutable(g, ResourceManager())(*args)
    exe = DataflowExecutable(g, resources=ResourceManager())
    for _ in range(3):
        same_bits(exe(*args), expected)


UNARY = ["Neg", "Tanh", "Sin", "Abs", "Square"]
BINARY = ["Add", "Sub", "Mul", "Maximum"]


@st.composite
def random_graphs(draw):
    """A random DAG of elementwise ops (and MatMul) over 1-3 arguments of one square
    shape, with random control edges and results."""
    n = draw(st.sampled_from([1, 3, 8]))
    g = Graph("random")
    values = [g.add_arg(f32(n, n), f"a{i}") for i in range(draw(st.integers(1, 3)))]
    nodes: list[Node] = []
    for _ in range(draw(st.integers(1, 25))):
        kind = draw(st.sampled_from(["unary", "binary", "matmul"]))
        pick = st.sampled_from(values)
        if kind == "unary":
            inputs = [draw(pick)]
            op = draw(st.sampled_from(UNARY))
        else:
            inputs = [draw(pick), draw(pick)]
            op = "MatMul" if kind == "matmul" else draw(st.sampled_from(BINARY))
        controls = draw(st.lists(st.sampled_from(nodes), max_size=2)) if nodes else []
        node = g.add_node(op, inputs, control_inputs=list(dict.fromkeys(controls)))
        nodes.append(node)
        values.append(node.outputs[0])
    results = draw(st.lists(st.sampled_from(values), min_size=1, max_size=4))
    g.set_results(results)
    return g


@pytest.mark.parametrize("cheap", ["default", "none"])
@given(graph=random_graphs(), seed=st.integers(0, 2**16))
def test_random_graphs_match_the_reference_bitwise(cheap, graph, seed):
    rng = np.random.default_rng(seed)
    args = [rng.normal(size=a.type.shape).astype(np.float32) for a in graph.args]
    expected = ReferenceExecutable(graph, ResourceManager())(*args)
    saved = rx.CHEAP_ELEMENTS
    rx.CHEAP_ELEMENTS = saved if cheap == "default" else -1
    try:
        exe = DataflowExecutable(graph, resources=ResourceManager())
    finally:
        rx.CHEAP_ELEMENTS = saved
    same_bits(within(20, lambda: exe(*args)), expected)


def test_results_that_are_arguments_or_repeated_and_empty_graphs():
    g = Graph("g")
    x, y = g.add_arg(f32(2)), g.add_arg(f32(2))
    s = g.add_node("Add", [x, y]).outputs[0]
    g.set_results([y, s, s, x])
    a, b = np.array([1, 2], np.float32), np.array([3, 4], np.float32)
    got = DataflowExecutable(g, resources=ResourceManager())(a, b)
    same_bits(got, [b, a + b, a + b, a])
    empty = Graph("empty")
    assert DataflowExecutable(empty)() == []


def test_arguments_are_checked():
    g = Graph("g")
    g.set_results([g.add_node("Neg", [g.add_arg(f32(2), "x")]).outputs[0]])
    exe = DataflowExecutable(g)
    with pytest.raises(tw.errors.InvalidArgumentError, match="argument 'x'"):
        exe(np.zeros(3, np.float32))
    with pytest.raises(tw.errors.InvalidArgumentError, match="takes 1 arguments"):
        exe()


def test_trace_records_every_node_with_its_device():
    g = Graph("g")
    x = g.add_arg(f32(2))
    g.set_results([g.add_node("Neg", [g.add_node("Abs", [x]).outputs[0]]).outputs[0]])
    trace: list = []
    DataflowExecutable(g).run([np.ones(2, np.float32)], trace=trace)
    assert [t.op for t in trace] == ["Abs", "Neg"]
    assert all(t.device == CPU0 and t.end >= t.start for t in trace)


# ------------------------------------------------------------------- concurrency

def test_eight_threads_share_a_variable_without_losing_updates():
    v = tw.Variable(np.zeros(4, np.float32), name="executor_counter")

    @tw.compile
    def step(x):
        v.assign_add(x)
        return tw.reduce_sum(x * 2.0)

    x = np.ones(4, np.float32)
    step(x)  # compile once before the threads race
    per_thread = 25
    errors: list = []

    def worker():
        try:
            for _ in range(per_thread):
                assert step(x) == np.float32(8)
        except BaseException as e:  # noqa: BLE001
            errors.append(e)

    def run_all():
        threads = [threading.Thread(target=worker, daemon=True) for _ in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()

    within(60, run_all)
    assert not errors, errors[0]
    np.testing.assert_array_equal(v.numpy(), np.full(4, 1 + 8 * per_thread, np.float32))


def test_eight_threads_share_a_session_and_its_variable():
    import tensorweave.compat.v1 as tf

    graph = tf.Graph()
    with graph.as_default():
        counter = tf.Variable(tf.zeros([3]), name="counter")
        delta = tf.placeholder(tf.float32, [3])
        bump = counter.assign_add(delta)
        init = tf.global_variables_initializer()
    per_thread = 20
    with tf.Session(graph=graph) as sess:
        sess.run(init)

        def worker():
            for _ in range(per_thread):
                sess.run(bump, {delta: np.ones(3, np.float32)})

        def run_all():
            threads = [threading.Thread(target=worker, daemon=True) for _ in range(8)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()

        within(60, run_all)
        np.testing.assert_array_equal(sess.run(counter), np.full(3, 8 * per_thread, np.float32))


def test_concurrent_steps_of_one_executable_keep_their_values_apart(everything_expensive):
    @tw.compile
    def f(x):
        a = tw.matmul(x, x)
        b = tw.tanh(x)
        return a + b, tw.reduce_sum(a)

    inputs = [np.full((8, 8), i / 10, np.float32) for i in range(8)]
    expected = [f(x) for x in inputs]
    out: dict[int, list] = {}

    def worker(i):
        out[i] = [f(inputs[i]) for _ in range(10)]

    def run_all():
        threads = [threading.Thread(target=worker, args=(i,), daemon=True) for i in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()

    within(60, run_all)
    for i, runs in out.items():
        for r in runs:
            same_bits(r, expected[i])


def test_many_blocking_ops_cannot_starve_the_ops_they_wait_for(everything_expensive):
    # 3 * pool-size Recvs wait for Sends whose producers need the inter-op pool: if a
    # waiting op held a pool thread, the producers could never run.
    count = 3 * rx.inter_op_pool().max_threads
    g = Graph("blocking")
    x = g.add_arg(f32(4))
    recvs = []
    for i in range(count):
        key = {"key": f"t{i}", "send_device": CPU0, "recv_device": CPU0}
        recvs.append(g.add_node("Recv", [], {**key, "dtype": "f32", "shape": (4,)}))
    for i in range(count):
        key = {"key": f"t{i}", "send_device": CPU0, "recv_device": CPU0}
        y = g.add_node("Mul", [g.add_node("Sin", [x]).outputs[0], x]).outputs[0]
        g.add_node("Send", [y], key)
    g.set_results([g.add_node("AddN", [r.outputs[0] for r in recvs]).outputs[0]])
    for n in g.nodes:
        n.assigned_device = CPU0
    exe = DataflowExecutable(g)
    a = np.arange(4, dtype=np.float32)
    got = within(30, lambda: exe(a))[0]
    np.testing.assert_allclose(got, count * np.sin(a) * a, rtol=1e-5)


def test_nested_steps_on_pool_threads_do_not_exhaust_the_pool(everything_expensive):
    inner = Graph("inner")
    y = inner.add_arg(f32(2))
    inner.set_results([inner.add_node("Neg", [inner.add_node("Abs", [y]).outputs[0]]).outputs[0]])
    _nested_exe[:] = [DataflowExecutable(inner)]
    outer = Graph("outer")
    x = outer.add_arg(f32(2))
    root = outer.add_node("Abs", [x]).outputs[0]
    # More nested calls at once than the pool has threads, all fanned out from one node.
    fan = [outer.add_node("ExecutorTestNested", [root]).outputs[0]
           for _ in range(2 * rx.inter_op_pool().max_threads)]
    outer.set_results([outer.add_node("AddN", fan).outputs[0]])
    exe = DataflowExecutable(outer)
    got = within(30, lambda: exe(np.array([1, -2], np.float32), timeout=25))[0]
    np.testing.assert_array_equal(got, -len(fan) * np.array([1, 2], np.float32))


def test_unbounded_pool_reuses_idle_threads():
    pool = ThreadPool("test-pool", None, idle_timeout=5)
    done = threading.Semaphore(0)
    for _ in range(20):
        pool.submit(done.release)
        assert done.acquire(timeout=5)
    assert pool.num_threads == 1


def test_bounded_pool_queues_work_beyond_its_size():
    pool = ThreadPool("test-bounded", 2)
    gate = threading.Event()
    finished = []
    lock = threading.Lock()

    def task(i):
        gate.wait(5)
        with lock:
            finished.append(i)

    for i in range(6):
        pool.submit(task, i)
    assert pool.num_threads == 2
    gate.set()
    deadline = time.monotonic() + 5
    while len(finished) < 6 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert sorted(finished) == list(range(6))


# ------------------------------------------------------------------- errors

def test_out_of_range_gather_names_the_op_and_line():
    @tw.compile
    def f(params, idx):
        return tw.gather(params, idx) * 2.0

    params = np.arange(6, dtype=np.float32).reshape(3, 2)
    with pytest.raises(tw.errors.InvalidArgumentError) as err:
        within(20, lambda: f(params, np.array([0, 7], np.int32)))
    assert "Gather" in str(err.value)
    assert "test_executor.py" in str(err.value)


def test_a_failing_op_skips_the_ops_after_it():
    v = tw.Variable(np.zeros(2, np.float32), name="executor_untouched")

    @tw.compile
    def f(x):
        bad = tw.frontend.building.apply_op1("ExecutorTestFails", [x])
        with tw.control_dependencies([bad]):
            v.assign_add(x)
        return bad

    with pytest.raises(tw.errors.InvalidArgumentError, match="rejects every value") as err:
        within(20, lambda: f(np.ones(2, np.float32)))
    assert "ExecutorTestFails" in str(err.value) and "test_executor.py" in str(err.value)
    np.testing.assert_array_equal(v.numpy(), [0, 0])


def test_other_exceptions_keep_their_type_and_say_which_node_raised_them():
    g = Graph("g")
    x = g.add_arg(f32(2))
    g.set_results([g.add_node("ExecutorTestBuggy", [x], name="buggy").outputs[0]])
    with pytest.raises(RuntimeError, match="kernel bug") as err:
        within(20, lambda: DataflowExecutable(g)(np.ones(2, np.float32)))
    assert any("ExecutorTestBuggy 'buggy'" in note for note in err.value.__notes__)


def _blocked_recv_graph(failing_op: str) -> Graph:
    """CPU:0 fails before it could send; CPU:1 waits in a Recv for that send."""
    g = Graph("two_devices")
    x = g.add_arg(f32(3))
    on0 = [g.add_node(failing_op, [x])]
    endpoints = {"key": "x_to_1", "send_device": CPU0, "recv_device": CPU1}
    on0.append(g.add_node("Send", [on0[0].outputs[0]], endpoints))
    recv = g.add_node("Recv", [], {**endpoints, "dtype": "f32", "shape": (3,)})
    on1 = [recv, g.add_node("Neg", [recv.outputs[0]])]
    for n in on0:
        n.assigned_device = CPU0
    for n in on1:
        n.assigned_device = CPU1
    g.set_results([on1[-1].outputs[0]])
    return g


def test_failing_op_releases_a_partition_blocked_in_recv(two_cpus):
    exe = DataflowExecutable(_blocked_recv_graph("ExecutorTestFails"))
    assert len(exe.partitions) == 2
    start = time.monotonic()
    with pytest.raises(tw.errors.InvalidArgumentError, match="rejects every value"):
        within(20, lambda: exe(np.ones(3, np.float32)))
    assert time.monotonic() - start < 10
    # The executable is still usable: the next step fails the same way, no leftovers.
    with pytest.raises(tw.errors.InvalidArgumentError):
        within(20, lambda: exe(np.ones(3, np.float32)))


def test_cancellation_wakes_a_blocked_op_on_another_device(two_cpus):
    # CPU:1 blocks in a cancellation-aware op; CPU:0's failure must wake it.
    g = Graph("g")
    x = g.add_arg(f32(3))
    bad = g.add_node("ExecutorTestFails", [g.add_node("Sin", [x]).outputs[0]])
    hang = g.add_node("ExecutorTestHang", [x])
    bad.assigned_device, bad.inputs[0].producer.assigned_device = CPU0, CPU0
    hang.assigned_device = CPU1
    g.set_results([bad.outputs[0], hang.outputs[0]])
    exe = DataflowExecutable(g)
    with pytest.raises(tw.errors.InvalidArgumentError, match="rejects every value"):
        within(20, lambda: exe(np.ones(3, np.float32)))


def test_the_partitioned_pipeline_cancels_across_devices(two_cpus):
    @tw.compile
    def f(params, idx):
        with tw.device("/cpu:0"):
            picked = tw.gather(params, idx)
        with tw.device("/cpu:1"):
            return tw.exp(picked) + 1.0

    params = np.arange(4, dtype=np.float32)
    exe = f.get_concrete_function(params, np.array([1], np.int32)).executable
    assert len(exe.partitions) == 2
    np.testing.assert_array_equal(f(params, np.array([1], np.int32)),
                                  np.exp(np.float32([1])) + np.float32(1))
    with pytest.raises(tw.errors.InvalidArgumentError) as err:
        within(20, lambda: f(params, np.array([9], np.int32)))
    assert "Gather" in str(err.value) and "test_executor.py" in str(err.value)


# ------------------------------------------------------------------- timeouts

def test_timeout_cancels_a_blocked_step():
    g = Graph("g")
    x = g.add_arg(f32(2))
    g.set_results([g.add_node("ExecutorTestHang", [x]).outputs[0]])
    exe = DataflowExecutable(g, timeout=0.2)
    start = time.monotonic()
    with pytest.raises(tw.errors.DeadlineExceededError, match="timeout of 0.2 s"):
        within(20, lambda: exe(np.ones(2, np.float32)))
    assert time.monotonic() - start < 5
    # A per-call timeout overrides the executable's.
    with pytest.raises(tw.errors.DeadlineExceededError, match="timeout of 0.1 s"):
        within(20, lambda: exe(np.ones(2, np.float32), timeout=0.1))


def test_timeout_with_a_kernel_that_ignores_cancellation():
    g = Graph("g")
    x = g.add_arg(f32(2))
    slow = g.add_node("ExecutorTestSleep", [x])
    after = g.add_node("Neg", [slow.outputs[0]])
    g.set_results([after.outputs[0]])
    exe = DataflowExecutable(g)
    with pytest.raises(tw.errors.DeadlineExceededError):
        within(20, lambda: exe(np.ones(2, np.float32), timeout=0.05))
    # Fast enough steps are unaffected by a timeout.
    np.testing.assert_array_equal(exe(np.ones(2, np.float32), timeout=10)[0], [-1, -1])


def test_timeout_must_be_positive():
    g = Graph("g")
    g.set_results([g.add_node("Neg", [g.add_arg(f32(2))]).outputs[0]])
    with pytest.raises(tw.errors.InvalidArgumentError, match="timeout"):
        DataflowExecutable(g)(np.ones(2, np.float32), timeout=0)


# ------------------------------------------------------------------- regions

def test_region_ops_run_their_region_through_the_context_hook():
    region = Graph("body")
    r = region.add_arg(f32(3))
    region.set_results([region.add_node("Mul", [r, r]).outputs[0]])
    g = Graph("g")
    x = g.add_arg(f32(3))
    call = g.add_node("ExecutorTestCall", [x], regions=[region])
    g.set_results([g.add_node("Neg", [call.outputs[0]]).outputs[0]])
    a = np.array([1, 2, 3], np.float32)
    same_bits(DataflowExecutable(g)(a), [-(a * a)])


def test_regions_read_captured_values_once_their_producers_ran():
    g = Graph("g")
    x = g.add_arg(f32(3))
    slow = g.add_node("ExecutorTestSleep", [x])  # the capture's producer takes a while
    region = Graph("body")
    r = region.add_arg(f32(3))
    inner = region.add_node("Mul", [slow.outputs[0], x]).outputs[0]  # captures
    region.set_results([region.add_node("Add", [inner, r]).outputs[0]])
    one = const(g, np.ones(3, np.float32))
    call = g.add_node("ExecutorTestCall", [one.outputs[0]], regions=[region])
    g.set_results([call.outputs[0]])
    a = np.array([1, 2, 3], np.float32)
    expected = ReferenceExecutable(g, ResourceManager())(a)
    same_bits(expected, [a * a + 1])
    same_bits(within(20, lambda: DataflowExecutable(g)(a)), expected)


def test_a_step_cancelled_from_outside_raises_the_cancelling_error():
    from tensorweave.runtime.cancellation import CancellationManager

    g = Graph("g")
    x = g.add_arg(f32(2))
    g.set_results([g.add_node("ExecutorTestHang", [x]).outputs[0]])
    exe = DataflowExecutable(g)
    cm = CancellationManager()
    threading.Timer(0.1, cm.cancel, [tw.errors.CancelledError("the session was closed")]).start()
    with pytest.raises(tw.errors.CancelledError, match="the session was closed"):
        within(20, lambda: exe.run([np.ones(2, np.float32)], cancellation=cm, step_id=10**9))
    # Already cancelled before it starts: no node runs, no partial results come back.
    with pytest.raises(tw.errors.CancelledError, match="the session was closed"):
        within(20, lambda: exe.run([np.ones(2, np.float32)], cancellation=cm))


def test_region_ops_holding_blocking_ops_count_as_blocking():
    region = Graph("body")
    r = region.add_arg(f32(2))
    region.set_results([region.add_node("ExecutorTestHang", [r]).outputs[0]])
    g = Graph("g")
    call = g.add_node("ExecutorTestCall", [g.add_arg(f32(2))], regions=[region])
    plain = g.add_node("ExecutorTestCall", [call.outputs[0]], regions=[Graph("empty")])
    assert rx.is_blocking(call) and not rx.is_blocking(plain)


def test_compiling_limits_blas_threads_so_kernels_do_not_oversubscribe():
    from threadpoolctl import threadpool_info

    tw.compile(lambda a: a @ a)(np.eye(4, dtype=np.float32))
    blas = [i for i in threadpool_info() if i["user_api"] == "blas"]
    assert blas and all(i["num_threads"] == 1 for i in blas)
