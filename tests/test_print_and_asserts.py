"""tw.print (TensorFlow's format, printed when the step runs, in program order) and the
tw.debugging assertions (InvalidArgumentError naming the message, the op and the user's
line), eagerly and on the reference and cpu targets."""

import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tensorweave as tw
from tensorweave.frontend.ops.debugging import format_tensor
from tests.helpers import TARGETS, check_gradients

MODES = ["eager", *TARGETS]


def run(mode, fn, *args):
    """`fn` eagerly (on constants) or compiled for a target."""
    if mode == "eager":
        out = fn(*[tw.constant(a) for a in args])
        return None if out is None else np.asarray(out)
    return tw.compile(fn, target=mode)(*args)


def _reference_vector(values, summarize):
    items = [str(v) for v in values]
    if summarize >= 0 and len(items) > 2 * summarize:
        items = items[:summarize] + ["..."] + items[len(items) - summarize:]
    return "[" + " ".join(items) + "]"


@settings(max_examples=20)
@given(n=st.integers(0, 12), summarize=st.sampled_from([-1, 1, 2, 3, 4]),
       seed=st.integers(0, 1000))
def test_vector_format_elides_the_middle(n, summarize, seed):
    values = np.random.default_rng(seed).integers(-50, 50, size=n).astype(np.int32)
    assert format_tensor(values, summarize) == _reference_vector(values, summarize)


def test_tensorflow_formats():
    assert format_tensor(np.arange(6, dtype=np.int32).reshape(2, 3)) == "[[0 1 2]\n [3 4 5]]"
    assert format_tensor(np.arange(8).reshape(2, 2, 2)) == \
        "[[[0 1]\n  [2 3]]\n\n [[4 5]\n  [6 7]]]"
    assert format_tensor(np.arange(10).reshape(10, 1), 2) == "[[0]\n [1]\n ...\n [8]\n [9]]"
    assert format_tensor(np.array([1.5, 2.0, -0.0], np.float32)) == "[1.5 2 -0]"
    # float32 values that 6 digits do not round-trip get 9, as TensorFlow's StrCat
    assert format_tensor(np.float32(1 / 3)) == "0.333333343"
    assert format_tensor(np.float64(0.1)) == "0.1"
    assert format_tensor(np.array([np.nan, np.inf, -np.inf])) == "[nan inf -inf]"
    assert format_tensor(np.array([True, False])) == "[1 0]"


@pytest.mark.parametrize("mode", MODES)
def test_print_runs_with_the_step_in_program_order(mode, capsys):
    v = tw.Variable(np.float32(1.0))

    def step(x):
        tw.print("x:", x, {"twice": x * 2.0, "n": 3}, [x[0], "s"])
        v.assign_add(1.0)
        tw.print("v:", v.read_value(), sep="|", end="!\n", output_stream=sys.stdout)
        tw.print("last", summarize=-1)
        return x + 1.0

    x = np.array([1.0, 2.5], np.float32)
    for _ in range(2):
        np.testing.assert_allclose(run(mode, step, x) if mode != "eager" else
                                   step(tw.constant(x)).numpy(), x + 1.0)
    v_now = v.numpy()
    captured = capsys.readouterr()
    once = "x: [1 2.5] {'twice': [2 5], 'n': 3} [1, 's']\nlast\n"
    assert captured.err == once * 2
    assert captured.out == f"v:|{v_now - 1:g}!\nv:|{v_now:g}!\n"


def test_print_to_a_file(tmp_path):
    path = tmp_path / "log.txt"
    def f(x):
        tw.print("got", x, output_stream=f"file://{path}")

    f = tw.compile(f, target="cpu")
    f(np.arange(3, dtype=np.int64))
    f(np.arange(2, dtype=np.int64))
    assert path.read_text() == "got [0 1 2]\ngot [0 1]\n"
    with pytest.raises(ValueError, match="output_stream"):
        tw.print("x", output_stream=object())


ASSERTS = [
    ("assert_equal", lambda x, y, m: tw.debugging.assert_equal(x, y, message=m), np.equal),
    ("assert_less", lambda x, y, m: tw.debugging.assert_less(x, y, message=m), np.less),
    ("assert_greater", lambda x, y, m: tw.debugging.assert_greater(x, y, message=m),
     np.greater),
    ("assert_non_negative", lambda x, y, m: tw.debugging.assert_non_negative(x, message=m),
     lambda x, y: x >= 0),
    ("assert_positive", lambda x, y, m: tw.debugging.assert_positive(x, message=m),
     lambda x, y: x > 0),
    ("assert_near", lambda x, y, m: tw.debugging.assert_near(x, y, rtol=1e-3, atol=1e-2,
                                                             message=m),
     lambda x, y: np.abs(x - y) <= 1e-2 + 1e-3 * np.abs(y)),
]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name,check,holds", ASSERTS, ids=[a[0] for a in ASSERTS])
@settings(max_examples=4)
@given(seed=st.integers(0, 2**16))
def test_assertions_agree_with_numpy(mode, name, check, holds, seed):
    rng = np.random.default_rng(seed)
    x = rng.integers(-2, 3, size=(3,)).astype(np.float64)
    y = x + rng.choice([0.0, 0.005, 1.0, -1.0], size=(3,)) if rng.random() < 0.7 else x
    message = f"{name} failed"

    def f(x, y):
        check(x, y, message)
        return x * 1.0

    if np.all(holds(x, y)):
        np.testing.assert_array_equal(run(mode, f, x, y), x)
        return
    with pytest.raises(tw.errors.InvalidArgumentError) as err:
        run(mode, f, x, y)
    text = str(err.value)
    # the op, the user's line (where the assertion was called) and the message
    line = check.__code__.co_firstlineno
    assert text.startswith("Assert '") and f"test_print_and_asserts.py:{line})" in text, text
    assert f"): {message}: " in text and ("did not hold" in text or "tolerance" in text), text


@pytest.mark.parametrize("mode", MODES)
def test_failed_assertions_show_their_values(mode):
    """As TensorFlow's: the first `summarize` values (default 3, -1: all) of x and y, from
    arguments, computed values and variables; on the cpu target also when the failing
    call runs through the native dispatcher (a call after one that passed)."""
    v = tw.Variable(np.array([2.0, -1.0], np.float32))

    def f(x):
        tw.debugging.assert_less(x, 3.0)
        tw.debugging.assert_non_negative(tw.exp(x) - 2.0, summarize=-1)
        tw.debugging.assert_positive(v, summarize=1)
        return x * 2.0

    fn = f if mode == "eager" else tw.compile(f, target=mode)
    arg = (lambda a: tw.constant(a)) if mode == "eager" else (lambda a: a)
    cases = [(np.array([1.0, 5.0, 2.0, 7.0], np.float32),
              ["x (shape=[4], dtype=float32) = [1. 5. 2. ...]",
               "y (shape=[], dtype=float32) = 3.0"]),
             (np.array([1.0, 0.0, 2.0, 0.5], np.float32),
              ["x (shape=[4], dtype=float32) = [ 0.71828"]),  # all 4 values: checked below
             (np.array([1.0, 1.0, 1.0, 1.0], np.float32),
              ["x (shape=[2], dtype=float32) = [2. ...]"])]
    for x, shown in cases:
        if mode != "eager":  # a passing call first: the next one is a dispatcher hit
            v.assign(np.array([2.0, 1.0], np.float32))
            fn(np.full(4, 1.0, np.float32))
            v.assign(np.array([2.0, -1.0], np.float32))
        with pytest.raises(tw.errors.InvalidArgumentError) as err:
            fn(arg(x))
        for text in shown:
            assert text in str(err.value), str(err.value)
        if x[1] == 0.0:  # summarize=-1: every value, none elided
            listed = str(err.value).split("= [")[-1].split("]")[0].split()
            np.testing.assert_allclose([float(t) for t in listed], np.exp(x) - 2.0, rtol=1e-5)


@pytest.mark.parametrize("mode", MODES)
def test_check_numerics_names_nan_and_inf(mode):
    def f(x):
        return tw.debugging.check_numerics(x * 2.0, "loss blew up") + 1.0

    np.testing.assert_allclose(run(mode, f, np.array([1.0, 2.0])), [3.0, 5.0])
    with pytest.raises(tw.errors.InvalidArgumentError, match="loss blew up : Tensor had NaN"):
        run(mode, f, np.array([1.0, np.nan]))
    with pytest.raises(tw.errors.InvalidArgumentError, match="loss blew up : Tensor had Inf"):
        run(mode, f, np.array([-np.inf, 0.0]))
    with pytest.raises(tw.errors.InvalidArgumentError, match="bad values"):
        run(mode, lambda x: tw.debugging.assert_all_finite(x, "bad values"),
            np.array([np.inf]))


def test_check_numerics_passes_gradients_through():
    x = np.random.default_rng(3).normal(size=(2, 3))
    check_gradients(lambda x: tw.debugging.check_numerics(tw.sin(x) * x, "m"), x)


def test_assert_shapes_static_and_at_run_time():
    x, y = np.zeros((2, 3)), np.zeros((3, 4))
    tw.debugging.assert_shapes([(tw.constant(x), ("N", "K")), (tw.constant(y), ("K", 4))])
    with pytest.raises(ValueError, match="'K' is 3"):
        tw.debugging.assert_shapes([(tw.constant(x), ("N", "K")), (tw.constant(x), ("K", "."))])
    with pytest.raises(ValueError, match="rank"):
        tw.debugging.assert_shapes([(tw.constant(x), ("...", "A", "B", "C"))])

    spec = [tw.TensorSpec([None, 3], tw.float64), tw.TensorSpec([None], tw.float64)]

    @tw.compile(input_signature=spec, target="cpu")
    def f(a, b):
        tw.debugging.assert_shapes({a: ("N", 3), b: ("N",)}, message="rows")
        return a * 1.0

    f(np.zeros((5, 3)), np.zeros(5))
    with pytest.raises(tw.errors.InvalidArgumentError, match="rows: .*differs from 'N'"):
        f(np.zeros((5, 3)), np.zeros(4))


def test_side_effects_are_ordered_in_program_order():
    v = tw.Variable(np.float64(0.0))

    def step(x):
        v.assign_add(x)
        tw.print("after add", v.read_value())
        tw.debugging.assert_non_negative(x)
        v.assign(x * 2.0)
        return x

    graph = tw.compile(step).get_concrete_function(np.float64(1.0)).graph
    nodes = {n.op: n for n in graph.nodes if n.op in ("AssignAddVariable", "PrintV2",
                                                       "Assert", "AssignVariable")}
    assert _runs_after(nodes["PrintV2"], nodes["AssignAddVariable"])
    assert _runs_after(nodes["Assert"], nodes["PrintV2"])
    assert _runs_after(nodes["AssignVariable"], nodes["Assert"])
    assert not _runs_after(nodes["PrintV2"], nodes["AssignVariable"])


def _runs_after(node, earlier) -> bool:
    """Whether `earlier` is among the data or control inputs of `node`, transitively."""
    stack, seen = [node], set()
    while stack:
        n = stack.pop()
        if id(n) in seen:
            continue
        seen.add(id(n))
        preds = [v.producer for v in n.inputs if v.producer is not None] + n.control_inputs
        if any(p is earlier for p in preds):
            return True
        stack.extend(preds)
    return False


@pytest.mark.parametrize("mode", MODES)
def test_print_and_assert_inside_a_loop_body(mode, capsys):
    def count(n):
        def body(i):
            tw.print("i =", i)
            tw.debugging.assert_less(i, 3, message="too many iterations")
            return i + 1
        return tw.while_loop(lambda i: i < n, body, [tw.constant(np.int32(0))])[0]

    assert int(run(mode, count, np.int32(3))) == 3
    assert capsys.readouterr().err == "i = 0\ni = 1\ni = 2\n"
    with pytest.raises(tw.errors.InvalidArgumentError, match="too many iterations"):
        run(mode, count, np.int32(5))
