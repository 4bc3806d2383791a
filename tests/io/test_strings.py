"""The string dtype: host values (object arrays of bytes) that constants, arguments,
datasets and v1 feeds take; no numeric op or code generator sees one (a clear error,
or the step runs on the host's kernels); the IR prints and parses them back."""

import numpy as np
import pytest

import tensorweave as tw
import tensorweave.compat.v1 as tf
from tensorweave.compiler import parse_graph, print_graph
from tensorweave.compiler.dtypes import string_array


def test_the_dtype_is_tensorflows():
    assert tw.string.name == "string" and str(tw.string) == "<dtype: 'string'>"
    assert tw.string.as_datatype_enum == 7 and tw.string.as_numpy_dtype is np.object_
    for spelled in ("string", np.object_, np.dtype("S3"), np.dtype("U2"), np.bytes_, np.str_):
        assert tw.as_dtype(spelled) is tw.string
    assert not (tw.string.is_floating or tw.string.is_integer or tw.string.is_bool)
    with pytest.raises(TypeError, match="Cannot find minimum"):
        tw.string.min  # noqa: B018


def test_text_becomes_bytes_and_keeps_its_nul_bytes():
    t = tw.constant([b"a\x00", "é"])
    assert t.dtype is tw.string and t.numpy().tolist() == [b"a\x00", "é".encode()]
    assert tw.constant("x").numpy() == b"x"  # a scalar's numpy() is bytes, as TensorFlow's
    assert string_array(np.array(["ab", "c"])).tolist() == [b"ab", b"c"]
    with pytest.raises(tw.errors.DTypeError, match="element \\[1\\] is the int 3"):
        string_array(np.array([b"a", 3], object))


@pytest.mark.parametrize("make, message", [
    (lambda: tw.constant(1, tw.string), "strings and numbers do not convert"),
    (lambda: tw.constant("1.5", tw.float32), "strings and numbers do not convert"),
    (lambda: tw.constant(np.array([b"1"], object), tw.float32), "strings and numbers"),
    (lambda: tw.constant([b"a", 1]), "mixes strings with the Python int 1"),
    (lambda: tw.constant([[b"a"], [b"b", b"c"]]), "nested lists differ in length"),
    (lambda: tw.constant(1.0) + "a", "strings and numbers do not convert"),
    (lambda: tw.constant(["a"]) + tw.constant(["b"]), "string"),
    (lambda: tw.constant([1, None]), "contains None"),
    (lambda: tw.cast(tw.constant([b"1.5"]), tw.float32), "Cast does not convert"),
    (lambda: tw.cast(tw.constant([1.5]), tw.string), "Cast does not convert"),
])
def test_strings_and_numbers_never_convert_silently(make, message):
    with pytest.raises(tw.errors.TensorWeaveError, match=message):
        make()


@pytest.mark.parametrize("target", ["reference", "cpu"])
def test_compiled_functions_take_and_return_strings(target):
    @tw.compile(target=target)
    def f(s, x):
        return tw.reshape(s, [-1]), tw.size(s), x * 2.0

    s = np.array([[b"a\x00"], [b""]], object)
    flat, size, y = f(s, np.float32([1.0, 2.0]))
    assert flat.dtype == object and flat.tolist() == [b"a\x00", b""]
    assert size == 2 and y.tolist() == [2.0, 4.0]
    flat, _, _ = f(np.array([["é"], ["b"]]), np.float32([1.0, 2.0]))  # NumPy 'U': encoded
    assert flat.tolist() == ["é".encode(), b"b"]
    with pytest.raises(tw.errors.InvalidArgumentError, match="must match|expects"):
        tw.compile(lambda s: s, input_signature=[tw.TensorSpec([2], tw.string)],
                   target=target)(np.zeros(2))


def test_the_cpu_step_refuses_strings_and_says_so():
    f = tw.compile(lambda s, x: (tw.identity(s), x + 1.0), target="cpu")
    args = [np.array([b"a"], object), np.float32([1.0])]
    exe = f.get_concrete_function(*args).executable
    assert exe.native_step(args) is None and "string tensor" in exe.native_reason
    assert f(*args)[1].tolist() == [2.0]


def test_the_gpu_placement_keeps_string_ops_on_the_host():
    from tensorweave.passes.placement import kernel_reason
    g = tw.compile(lambda s: tw.io.decode_raw(s, tw.uint8)).get_concrete_function(
        tw.TensorSpec([2], tw.string)).graph
    node = next(n for n in g.nodes if n.op == "DecodeRaw")
    assert "no GPU" in kernel_reason(node, "GPU") and kernel_reason(node, "CPU") is None


def test_the_ir_prints_and_parses_strings_back():
    weird = [b"a\xff\x00\"\\", "é\n".encode(), b"", b"\xed\xb3\xbf"]

    @tw.compile
    def f(x):
        return tw.constant(np.array(weird, object).reshape(2, 2)), tw.constant("same"), x

    g = f.get_concrete_function(tw.TensorSpec([0], tw.string)).graph
    text = print_graph(g)
    assert "tensor<0xstring>" in text and 'dense<"same"> : tensor<string>' in text
    back = parse_graph(text)
    assert print_graph(back) == text
    consts = [n.attrs["value"] for n in back.nodes if n.op == "Const"]
    assert consts[0].reshape(-1).tolist() == weird and consts[1][()] == b"same"
    with pytest.raises(tw.errors.ParseError, match="expected a quoted string"):
        parse_graph(text.replace('dense<"same">', "dense<1>"))


def test_v1_sessions_feed_and_fetch_strings():
    with tf.Graph().as_default():
        s = tf.placeholder(tf.string, [None])
        n = tf.io.decode_raw(s, tf.uint8)
        with tf.Session() as sess:
            raw, back = sess.run([n, s], {s: [b"ab", b"cd"]})
    assert raw.tolist() == [[97, 98], [99, 100]] and back.tolist() == [b"ab", b"cd"]


def test_datasets_of_strings():
    ds = tw.data.Dataset.from_tensor_slices(np.array([b"a", b"b\x00"], object))
    assert ds.element_spec == tw.TensorSpec([], tw.string)
    assert list(ds.as_numpy_iterator()) == [b"a", b"b\x00"]
    assert next(iter(ds.batch(2))).numpy().tolist() == [b"a", b"b\x00"]
