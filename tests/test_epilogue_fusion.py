"""Epilogue fusion on the cpu target (stage ``epilogue``, `passes/epilogue.py`,
`targets/cpu/epilogue.py`): a Conv2D or MatMul and the elementwise cluster after it
(bias, activation, relu's mask, a residual) become one FusedConv2D / FusedMatMul node
whose lowering computes the cluster on the product's register tiles or on each GEMM
chunk. Results are bitwise those of the unfused step (``TW_EPILOGUE_FUSION=0``), on any
thread count, and within tolerance of the reference target; gradients go through it
unchanged."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tensorweave as tw
from tensorweave.compiler.pipeline import run_pipeline, stage_names, stage_targets
from tensorweave.compiler.types import TensorType
from tensorweave.passes.epilogue import ENV, fuse_epilogues, operand_kind
from tensorweave.targets.cpu import parallel
from tensorweave.targets.cpu.kernels import native_kernel
from tensorweave.targets.cpu.lowerings.nn import BLOCK_TERMS, VECTOR_BYTES
from tests.helpers import assert_same, check_gradients
from tests.test_parallel import _same_bits

ACTIVATIONS = {
    "none": lambda h: h,
    "relu": tw.nn.relu,
    "relu6": tw.nn.relu6,
    "sigmoid": tw.sigmoid,
    "tanh": tw.tanh,
    "elu": tw.nn.elu,
    "leaky_relu": lambda h: tw.nn.leaky_relu(h, 0.1),
    "gelu": tw.nn.gelu,
    "gelu_tanh": lambda h: tw.nn.gelu(h, approximate=True),
    # a training step's forward cluster: relu and its gradient's mask (a bool output)
    "relu_and_mask": lambda h: (tw.nn.relu(h), h > 0),
}


def _run(monkeypatch, fn, args, fusion: bool):
    """`fn` compiled for the cpu target with epilogue fusion on or off, run on `args`:
    its results and the ops of its native step (every node native)."""
    monkeypatch.setenv(ENV, "1" if fusion else "0")
    f = tw.compile(fn, target="cpu")
    out = f(*args)
    step = f.get_concrete_function(*args).executable.native_step(list(args))
    assert step is not None and not step.plan.callback_nodes
    return out, [a.node.op for a in step.plan.actions if a.node is not None]


def _fused_and_unfused(monkeypatch, fn, *args, op: str):
    """Both builds of `fn` on `args`: bitwise equal, the fused one with an `op` node
    (and the unfused one without); returns the fused results."""
    plain, plain_ops = _run(monkeypatch, fn, args, False)
    fused, fused_ops = _run(monkeypatch, fn, args, True)
    assert op in fused_ops and op not in plain_ops, fused_ops
    _same_bits(fused, plain)
    return fused


def _check_reference(fn, args, got) -> None:
    want = tw.compile(fn, target="reference")(*args)
    for g, w in zip(*(list(x) if isinstance(x, (list, tuple)) else [x] for x in (got, want))):
        w = np.asarray(w)
        tol = {"rtol": 1e-4, "atol": 1e-4} if w.dtype == np.float32 else {}
        assert_same(g, w, **tol)


# ------------------------------------------------------------------ convolutions

@st.composite
def conv_cases(draw):
    """A Conv2D + bias (+ activation) of random geometry: batch 1 or 2, channels not a
    multiple of the vector width, strides, SAME/VALID, dilation (the im2col path), 1x1
    filters (one GEMM) and sums longer than `BLOCK_TERMS` (blocked direct kernel)."""
    n = draw(st.integers(1, 2))
    h, w = draw(st.integers(1, 7)), draw(st.integers(1, 7))
    kind = draw(st.sampled_from(["direct", "direct", "long", "pointwise", "dilated"]))
    c = draw(st.integers(1, 4)) if kind != "long" else BLOCK_TERMS // 9 + 1
    kh, kw = (1, 1) if kind == "pointwise" else (draw(st.integers(1, 3)), draw(st.integers(1, 3)))
    if kind == "long":
        kh = kw = 3
    stride = 1 if kind in ("pointwise", "dilated") else draw(st.integers(1, 2))
    padding = "VALID" if kind == "pointwise" else draw(st.sampled_from(["SAME", "VALID"]))
    dilation = 2 if kind == "dilated" else 1
    if padding == "VALID":
        h, w = max(h, dilation * (kh - 1) + 1), max(w, dilation * (kw - 1) + 1)
    o = draw(st.integers(1, 2 * VECTOR_BYTES // 4 + 3))
    return dict(n=n, h=h, w=w, c=c, kh=kh, kw=kw, o=o, stride=stride, padding=padding,
                dilation=dilation, act=draw(st.sampled_from(sorted(ACTIVATIONS))),
                dtype=draw(st.sampled_from([np.float32, np.float64])),
                bias=draw(st.sampled_from(["bias_add", "add"])), seed=draw(st.integers(0, 99)))


def _conv_fn(case):
    def f(x, w, b):
        y = tw.nn.conv2d(x, w, strides=case["stride"], padding=case["padding"],
                         dilations=case["dilation"])
        y = tw.nn.bias_add(y, b) if case["bias"] == "bias_add" else y + b
        return ACTIVATIONS[case["act"]](y)
    return f


def _conv_args(case):
    rng = np.random.default_rng(case["seed"])
    dt = case["dtype"]
    return (rng.standard_normal((case["n"], case["h"], case["w"], case["c"])).astype(dt),
            rng.standard_normal((case["kh"], case["kw"], case["c"], case["o"])).astype(dt),
            rng.standard_normal(case["o"]).astype(dt))


def _check_case(fn, args, op: str) -> None:
    """`_fused_and_unfused` (in a hypothesis example: its own monkeypatch), then the
    reference target."""
    with pytest.MonkeyPatch.context() as mp:
        got = _fused_and_unfused(mp, fn, *args, op=op)
    _check_reference(fn, args, got)


@settings(max_examples=8)
@given(conv_cases())
def test_conv_epilogue_is_bitwise_the_unfused_step(case):
    _check_case(_conv_fn(case), _conv_args(case), "FusedConv2D")


@pytest.mark.parametrize("kind", ["direct", "long", "pointwise", "dilated"])
def test_each_convolution_path_takes_the_epilogue(monkeypatch, kind):
    """Every path of the Conv2D lowering (register tiles, blocked long sums, one GEMM,
    im2col blocks + GEMM) with gelu after the bias, f32, batch 1."""
    case = dict(n=1, h=6, w=5, c=3 if kind != "long" else 32, kh=3, kw=3, o=21, stride=1,
                padding="SAME", dilation=2 if kind == "dilated" else 1, act="gelu",
                dtype=np.float32, bias="bias_add", seed=1)
    if kind == "pointwise":
        case.update(kh=1, kw=1, padding="VALID")
    args = _conv_args(case)
    got = _fused_and_unfused(monkeypatch, _conv_fn(case), *args, op="FusedConv2D")
    _check_reference(_conv_fn(case), args, got)


# ------------------------------------------------------------------------ MatMul

@st.composite
def matmul_cases(draw):
    m, k, n = draw(st.integers(1, 9)), draw(st.integers(1, 9)), draw(st.integers(1, 40))
    return dict(m=m, k=k, n=n, ta=draw(st.booleans()), tb=draw(st.booleans()),
                batch=draw(st.sampled_from([(), (2,)])),
                act=draw(st.sampled_from(sorted(ACTIVATIONS))),
                dtype=draw(st.sampled_from([np.float32, np.float64])),
                seed=draw(st.integers(0, 99)))


def _matmul_fn(case):
    def f(a, w, b):
        return ACTIVATIONS[case["act"]](tw.matmul(a, w, transpose_a=case["ta"],
                                                  transpose_b=case["tb"]) + b)
    return f


def _matmul_args(case):
    rng = np.random.default_rng(case["seed"])
    m, k, n, dt = case["m"], case["k"], case["n"], case["dtype"]
    a = rng.standard_normal(case["batch"] + ((k, m) if case["ta"] else (m, k))).astype(dt)
    w = rng.standard_normal((n, k) if case["tb"] else (k, n)).astype(dt)
    return a, w, rng.standard_normal(n).astype(dt)


@settings(max_examples=8)
@given(matmul_cases())
def test_matmul_epilogue_is_bitwise_the_unfused_step(case):
    _check_case(_matmul_fn(case), _matmul_args(case), "FusedMatMul")


@pytest.mark.parametrize("shape", [(256, 300, 520), (1030, 200, 60)], ids=["cols", "rows"])
def test_split_gemm_runs_the_epilogue_per_chunk_on_any_thread_count(monkeypatch, shape):
    """Products big enough to be cut over threads (by columns, by rows): the epilogue
    runs in each thread's chunk function, and 1 and 2 threads give the same bits, which
    are the unfused step's."""
    m, k, n = shape
    assert m * n * k >= parallel.MIN_GEMM_FLOPS
    rng = np.random.default_rng(2)
    args = (rng.standard_normal((m, k)).astype(np.float32),
            rng.standard_normal((k, n)).astype(np.float32),
            rng.standard_normal(n).astype(np.float32))

    def f(a, w, b):
        return tw.nn.relu(tw.matmul(a, w) + b)
    outs = []
    for threads in (1, 2):
        monkeypatch.setenv("TW_NUM_THREADS", str(threads))
        outs.append(_fused_and_unfused(monkeypatch, f, *args, op="FusedMatMul"))
    _same_bits(outs[0], outs[1])


def test_conv_epilogue_is_identical_on_two_threads(monkeypatch):
    case = dict(n=3, h=20, w=20, c=8, kh=5, kw=5, o=19, stride=1, padding="SAME",
                dilation=1, act="relu_and_mask", dtype=np.float32, bias="bias_add", seed=3)
    args = _conv_args(case)
    outs = []
    for threads in (1, 2):
        monkeypatch.setenv("TW_NUM_THREADS", str(threads))
        outs.append(_fused_and_unfused(monkeypatch, _conv_fn(case), *args, op="FusedConv2D"))
    _same_bits(outs[0], outs[1])


# ------------------------------------------------------------- other operands

def test_scale_shift_and_residual_operands(monkeypatch):
    """A folded batch norm (channel scale and shift) and a residual of the product's
    shape are read per element of the tile."""
    rng = np.random.default_rng(4)
    x = rng.standard_normal((2, 6, 6, 5)).astype(np.float32)
    w = rng.standard_normal((3, 3, 5, 10)).astype(np.float32)
    scale, shift = rng.standard_normal(10).astype(np.float32), rng.standard_normal(10).astype(
        np.float32)
    skip = rng.standard_normal((2, 6, 6, 10)).astype(np.float32)

    def f(x, w, scale, shift, skip):
        y = tw.nn.conv2d(x, w, strides=1, padding="SAME") * scale + shift
        return tw.nn.relu(y + skip)
    args = (x, w, scale, shift, skip)
    got = _fused_and_unfused(monkeypatch, f, *args, op="FusedConv2D")
    _check_reference(f, args, got)


def test_operand_kinds():
    product = TensorType("f32", (2, 4, 4, 8))
    kinds = {shape: operand_kind(TensorType("f32", shape), product) for shape in
             [(), (1,), (8,), (1, 1, 8), (1, 1, 1, 1), (2, 4, 4, 8), (4, 4, 8), (2, 1, 1, 8),
              (None,), (3,)]}
    assert kinds == {(): "scalar", (1,): "scalar", (8,): "channel", (1, 1, 8): "channel",
                     (1, 1, 1, 1): "scalar", (2, 4, 4, 8): "full", (4, 4, 8): None,
                     (2, 1, 1, 8): None, (None,): "channel", (3,): None}


# ------------------------------------------------------------- what is not fused

def _epilogue_ops(fn, *args) -> list[str]:
    graph = tw.compile(fn).get_concrete_function(*args).graph
    return [n.op for n in run_pipeline(graph, target="cpu").nodes if n.op != "Const"]


def test_intermediates_needed_elsewhere_keep_the_product_unfused(monkeypatch):
    monkeypatch.setenv(ENV, "1")
    rng = np.random.default_rng(5)
    a, w = rng.standard_normal((4, 6)).astype(np.float32), rng.standard_normal(
        (6, 3)).astype(np.float32)
    b = np.ones(3, np.float32)
    # the product itself is returned: it must exist in memory
    assert "FusedMatMul" not in _epilogue_ops(lambda a, w, b: (tw.matmul(a, w),
                                                               tw.nn.relu(tw.matmul(a, w) + b)),
                                              a, w, b)
    # the product read by two clusters (a reduction in between)
    assert "FusedMatMul" not in _epilogue_ops(
        lambda a, w, b: tw.reduce_sum(tw.matmul(a, w), axis=1) + tw.nn.relu(
            tw.matmul(a, w) + b)[:, 0], a, w, b)
    # an operand that is neither a channel vector nor of the product's shape
    assert "FusedMatMul" not in _epilogue_ops(
        lambda a, w, c: tw.matmul(a, w) + c, a, w, np.ones((4, 1), np.float32))
    # the bias-added value is returned too: it becomes an output of the fused node
    ops = _epilogue_ops(lambda a, w, b: (tw.matmul(a, w) + b, tw.nn.relu(tw.matmul(a, w) + b)),
                        a, w, b)
    assert ops.count("FusedMatMul") == 1 and "MatMul" not in ops


def test_loop_accumulators_and_scaled_updates_stay_with_the_step_planner(monkeypatch):
    """``acc + a^T @ g`` in a loop (the step sums the outer products after the loop) and
    ``var -= lr * a^T @ g`` (the step multiplies in the update) are left alone."""
    monkeypatch.setenv(ENV, "1")
    rng = np.random.default_rng(6)
    a, g = rng.standard_normal((5, 4, 3)), rng.standard_normal((5, 4, 2))

    def loop(a, g):
        def body(i, acc):
            return i + 1, acc + tw.matmul(tw.gather(a, i), tw.gather(g, i), transpose_a=True)
        return tw.while_loop(lambda i, acc: i < 5, body, [tw.constant(0), tw.zeros([3, 2],
                                                                                 "float64")],
                             maximum_iterations=5)[1]
    graph = run_pipeline(tw.compile(loop).get_concrete_function(a, g).graph, target="cpu")
    body = next(n for n in graph.walk() if n.op == "While").regions[1]
    assert "MatMul" in [n.op for n in body.nodes]
    np.testing.assert_allclose(tw.compile(loop, target="cpu")(a, g),
                               np.einsum("tki,tkj->ij", a, g), rtol=1e-12)
    v = tw.Variable(np.zeros((3, 2)))

    def update(a, g):
        v.assign_sub(0.5 * tw.matmul(a[0], g[0], transpose_a=True))
        return v.read_value()
    assert "FusedMatMul" not in _epilogue_ops(update, a, g)


# ---------------------------------------------------------------- the stage

def test_the_stage_and_its_switch(monkeypatch, capsys, tmp_path):
    """Stage ``epilogue`` follows ``fused``, for the cpu and gpu targets; the dump of that
    stage shows the product and its cluster in one node; ``TW_EPILOGUE_FUSION=0``
    leaves it out when compiling."""
    from tensorweave.cli import main
    assert stage_names()[-1] == "epilogue" and stage_targets("epilogue") == frozenset({"cpu", "gpu"})
    args = _conv_args(dict(n=1, h=5, w=5, c=2, kh=3, kw=3, o=4, dtype=np.float32, seed=0))
    conv = _conv_fn(dict(stride=1, padding="SAME", dilation=1, bias="bias_add", act="relu"))
    graph = tw.compile(conv).get_concrete_function(*args).graph
    assert "FusedConv2D" not in [n.op for n in run_pipeline(graph, target="reference").nodes]
    monkeypatch.setenv(ENV, "0")
    assert "FusedConv2D" not in [n.op for n in run_pipeline(graph, target="cpu").nodes]
    monkeypatch.setenv(ENV, "1")
    fused = run_pipeline(graph, target="cpu")
    (node,) = [n for n in fused.nodes if n.op == "FusedConv2D"]
    assert [n.op for n in node.regions[0].nodes] == ["Conv2D", "BiasAdd", "Relu"]
    fuse_epilogues(fused)  # fusing again changes nothing
    assert [n.op for n in fused.nodes] == [n.op for n in run_pipeline(graph, target="cpu").nodes]
    src = tmp_path / "m.py"
    src.write_text("import tensorweave as tw\n\n@tw.compile\ndef f(x, w, b):\n"
                   "    y = tw.nn.conv2d(x, w, strides=1, padding='SAME')\n"
                   "    return tw.nn.relu(tw.nn.bias_add(y, b))\n")
    assert main(["dump", f"{src}:f", "--stage", "epilogue", "--signature",
                 "x:f32[1,5,5,2]", "w:f32[3,3,2,4]", "b:f32[4]"]) == 0
    out = capsys.readouterr().out
    region = out[out.index('"tw.FusedConv2D"'):]
    assert region.index('"tw.Conv2D"') < region.index('"tw.BiasAdd"') < region.index('"tw.Relu"')


def test_profile_shows_no_separate_bias_and_relu_pass(monkeypatch, tmp_path):
    """The native profiler's per-node table: one FusedConv2D(BiasAdd+Relu) row, no
    Fusion(BiasAdd+Relu) row (with the switch off: Conv2D and the Fusion)."""
    case = dict(n=2, h=8, w=8, c=3, kh=3, kw=3, o=16, stride=1, padding="SAME", dilation=1,
                act="relu", dtype=np.float32, bias="bias_add", seed=8)
    args = _conv_args(case)
    rows = {}
    for flag in ("0", "1"):
        monkeypatch.setenv(ENV, flag)
        f = tw.compile(_conv_fn(case), target="cpu")
        f(*args)
        with tw.profiler.trace(str(tmp_path / flag)):
            f(*args)
        rows[flag] = (tmp_path / flag / "summary.txt").read_text()
    assert "FusedConv2D(BiasAdd+Relu)" in rows["1"] and "Fusion(" not in rows["1"]
    assert "Fusion(BiasAdd+Relu)" in rows["0"] and "Conv2D" in rows["0"]


def test_dataflow_kernel_of_a_fused_node(monkeypatch):
    """On the dataflow executor (graphs a native step cannot run) a fused node with
    static shapes runs its lowering compiled on its own."""
    monkeypatch.setenv(ENV, "1")
    case = dict(n=1, h=5, w=4, c=2, kh=3, kw=3, o=5, stride=1, padding="SAME", dilation=1,
                act="tanh", dtype=np.float64, bias="add", seed=9)
    args = _conv_args(case)
    graph = run_pipeline(tw.compile(_conv_fn(case)).get_concrete_function(*args).graph,
                         target="cpu")
    (node,) = [n for n in graph.nodes if n.op == "FusedConv2D"]
    assert list(node.inputs) == list(graph.args)  # (x, w, b: no constants to feed)
    kernel = native_kernel(node)
    assert kernel is not None
    _same_bits(kernel(list(args)), tw.compile(_conv_fn(case), target="cpu")(*args))


# ------------------------------------------------------------------- gradients

def test_gradients_through_fused_nodes(monkeypatch):
    """A small CNN's gradients (conv + bias + gelu, dense + bias + tanh, dense: the
    forward clusters hold what the gradients need) against finite differences in
    float64 on the cpu target, with the fused nodes in the gradient's step."""
    monkeypatch.setenv(ENV, "1")
    rng = np.random.default_rng(10)
    x = rng.standard_normal((2, 4, 4, 2))
    w = rng.standard_normal((3, 3, 2, 3)) * 0.5
    b = rng.standard_normal(3) * 0.5
    v = rng.standard_normal((48, 2)) * 0.3
    c = rng.standard_normal(2) * 0.3
    u = rng.standard_normal((2, 3))

    def net(x, w, b, v, c):
        h = tw.nn.gelu(tw.nn.bias_add(tw.nn.conv2d(x, w, strides=1, padding="SAME"), b))
        return tw.matmul(tw.tanh(tw.matmul(tw.reshape(h, [2, 48]), v) + c), u)
    check_gradients(net, x, w, b, v, c, target="cpu", rtol=1e-6, atol=1e-8)
    grad = tw.compile(tw.grad(lambda *a: tw.reduce_sum(net(*a)), argnums=(0, 1, 2, 3, 4)),
                      target="cpu")
    grads = grad(x, w, b, v, c)
    ops = {a.node.op for a in grad.get_concrete_function(x, w, b, v, c).executable
           .native_step([x, w, b, v, c]).plan.actions if a.node is not None}
    assert {"FusedConv2D", "FusedMatMul"} <= ops
    monkeypatch.setenv(ENV, "0")
    plain = tw.compile(tw.grad(lambda *a: tw.reduce_sum(net(*a)), argnums=(0, 1, 2, 3, 4)),
                       target="cpu")(x, w, b, v, c)
    _same_bits(grads, plain)


def test_cnn_training_steps_are_bitwise_the_unfused_ones(monkeypatch):
    """A small W3-like CNN (conv + bias + relu + pool twice, dense + relu, dense, softmax
    cross entropy, SGD): three steps, losses and variables bitwise the unfused ones."""
    rng = np.random.default_rng(11)
    x = rng.standard_normal((3, 12, 12, 1)).astype(np.float32)
    y = np.eye(10, dtype=np.float32)[rng.integers(0, 10, 3)]
    init = [rng.standard_normal(s).astype(np.float32) * 0.3 for s in
            [(5, 5, 1, 8), (8,), (5, 5, 8, 12), (12,), (108, 20), (20,), (20, 10), (10,)]]

    def make():
        vs = [tw.Variable(p) for p in init]
        opt = tw.optimizers.SGD(0.05)

        @tw.compile(target="cpu")
        def step(x, y):
            w1, b1, w2, b2, w3, b3, w4, b4 = vs
            pool = dict(ksize=[1, 2, 2, 1], strides=[1, 2, 2, 1], padding="SAME")
            h = tw.nn.relu(tw.nn.bias_add(tw.nn.conv2d(x, w1, strides=1, padding="SAME"), b1))
            h = tw.nn.max_pool(h, **pool)
            h = tw.nn.relu(tw.nn.bias_add(tw.nn.conv2d(h, w2, strides=1, padding="SAME"), b2))
            h = tw.nn.max_pool(h, **pool)
            h = tw.nn.relu(tw.matmul(tw.reshape(h, [-1, 108]), w3) + b3)
            logits = tw.matmul(h, w4) + b4
            loss = tw.reduce_mean(tw.nn.softmax_cross_entropy_with_logits(labels=y,
                                                                          logits=logits))
            opt.minimize(loss, var_list=vs)
            return loss
        return step, vs

    runs = {}
    for fusion in (False, True):
        monkeypatch.setenv(ENV, "1" if fusion else "0")
        step, vs = make()
        losses = [step(x, y) for _ in range(3)]
        runs[fusion] = losses + [v.numpy() for v in vs]
        plan = step.get_concrete_function(x, y).executable.native_step([x, y]).plan
        ops = [a.node.op for a in plan.actions if a.node is not None]
        assert (ops.count("FusedConv2D"), ops.count("FusedMatMul") >= 2) == \
            ((2, True) if fusion else (0, False)) and not plan.callback_nodes, ops
        # the fused nodes keep the clusters' places in the schedule: the backward
        # product that reads w4 still runs before w4's update (no snapshot of w4)
        assert not [a for a in plan.actions if a.kind == "snapshot"], ops
    _same_bits(runs[False], runs[True])
