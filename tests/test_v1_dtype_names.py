"""`DType.name` is TensorFlow's name ('float32'), so user code that branches on it takes
TensorFlow's branch; the IR keeps its short spelling (`ir_name`, 'f32') in its text.

TensorFlow 2.21 printed: tf.float32.name float32, tf.int64.name int64, tf.bool.name
bool, tf.bfloat16.name bfloat16, tf.float16.name float16, tf.uint8.name uint8."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

import tensorweave as tw
import tensorweave.compat.v1 as tf
from tensorweave.compiler.dtypes import ALL_DTYPES, as_dtype
from tensorweave.compiler.parser import parse_graph
from tensorweave.compiler.printer import print_graph

TF_NAMES = {tw.float16: "float16", tw.bfloat16: "bfloat16", tw.float32: "float32",
            tw.float64: "float64", tw.int8: "int8", tw.int16: "int16", tw.int32: "int32",
            tw.int64: "int64", tw.uint8: "uint8", tw.bool: "bool"}
IR_NAMES = {tw.float16: "f16", tw.bfloat16: "bf16", tw.float32: "f32", tw.float64: "f64",
            tw.int8: "i8", tw.int16: "i16", tw.int32: "i32", tw.int64: "i64", tw.uint8: "u8",
            tw.bool: "i1"}


pytestmark = pytest.mark.usefixtures("fresh_default_graph")


def test_names_are_tensorflows_and_ir_names_stay():
    assert {d: d.name for d in ALL_DTYPES} == TF_NAMES
    assert {d: d.ir_name for d in ALL_DTYPES} == IR_NAMES
    for d in ALL_DTYPES:
        assert d.tf_name == d.name and str(d) == f"<dtype: '{d.name}'>"  # (TF's str)
        assert as_dtype(d.name) is d and as_dtype(d.ir_name) is d
        assert pickle.loads(pickle.dumps(d)) is d
        assert tf.as_dtype(d.name) is d


def test_user_code_branching_on_the_name_takes_tensorflows_branch():
    """The silent wrong answer this fixes: 'f32' == 'float32' was False."""
    x = tf.placeholder(tf.float32, [None, 3])
    i = tf.placeholder(tf.int64, [None])
    v = tf.Variable(np.zeros(2, np.float64))
    e = tw.constant(np.array([True]))
    assert x.dtype.name == "float32" and i.dtype.name == "int64"
    assert v.dtype.name == "float64" and e.dtype.name == "bool"
    assert tf.cast(x, tf.float16).dtype.name == "float16"
    scale = 2.0 if x.dtype.name == "float32" else 0.0
    with tf.Session() as sess:
        assert sess.run(x * scale, {x: np.ones((1, 3))}).tolist() == [[2.0, 2.0, 2.0]]


def test_ir_text_keeps_the_short_names():
    x = tf.placeholder(tf.float32, [2])
    tf.cast(tf.cast(x, tf.int64) > 1, tf.uint8, name="out")
    text = print_graph(tf.get_default_graph().ir)
    assert "f32" in text and "i64" in text and "ui8" in text and "i1" in text
    assert "float32" not in text and "int64" not in text
    assert print_graph(parse_graph(text)) == text
    # and a dtype attribute parses back to the same DType object
    for node in parse_graph(text).nodes:
        for value in node.attrs.values():
            if isinstance(value, tw.DType):
                assert value in IR_NAMES


def test_no_code_compares_a_dtype_name_with_an_ir_spelling():
    """A guard for code written against the old meaning of `name`: comparing
    ``dtype.name`` with 'f32' or indexing a table of IR spellings with it is now always a
    miss (a silent wrong branch); such code must use ``ir_name``."""
    import pathlib
    import re

    import tensorweave
    short = r"(?:f16|bf16|f32|f64|i8|i16|i32|i64|u8|i1)"
    compare = re.compile(rf"\.name\s*(?:==|!=|not in|in)\s*\(?\s*[\"']{short}[\"']")
    lookup = re.compile(r"(?:_GEMM|UNIFORM_BITS|_C_TYPES|_ELEMENT_SPELLING)(?:\.get)?[\[(]"
                        r"[\w.]*\.name\b")
    root = pathlib.Path(tensorweave.__file__).parent
    hits = [f"{p.relative_to(root)}:{i}: {line.strip()}"
            for p in sorted(root.rglob("*.py"))
            for i, line in enumerate(p.read_text().splitlines(), 1)
            if compare.search(line) or lookup.search(line)]
    assert hits == []


def test_the_rest_of_tensorflows_dtype_api():
    # TF 2.21: name, repr(min), repr(max), size, is_unsigned, as_datatype_enum
    expected = {
        tw.float16: ("np.float16(-6.55e+04)", "np.float16(6.55e+04)", 2, False, 19),
        tw.bfloat16: ("-3.38953e+38", "3.38953e+38", 2, False, 14),
        tw.float32: ("np.float32(-3.4028235e+38)", "np.float32(3.4028235e+38)", 4, False, 1),
        tw.float64: ("np.float64(-1.7976931348623157e+308)",
                     "np.float64(1.7976931348623157e+308)", 8, False, 2),
        tw.int8: ("-128", "127", 1, False, 6),
        tw.int16: ("-32768", "32767", 2, False, 5),
        tw.int32: ("-2147483648", "2147483647", 4, False, 3),
        tw.int64: ("-9223372036854775808", "9223372036854775807", 8, False, 9),
        tw.uint8: ("0", "255", 1, True, 4),
    }
    for d, (lo, hi, size, unsigned, enum) in expected.items():
        assert (repr(d.min), repr(d.max), d.size, d.is_unsigned, d.as_datatype_enum) == \
            (lo, hi, size, unsigned, enum), d
        assert d.base_dtype is d and d.real_dtype is d and not d.is_complex
        assert d.is_compatible_with(d.name) and not d.is_compatible_with(tw.bool)
    assert tw.bool.as_datatype_enum == 10
    # TF: TypeError Cannot find minimum value of <dtype: 'bool'> ...
    with pytest.raises(TypeError, match="Cannot find minimum value"):
        tw.bool.min
    x = tf.placeholder(tf.float32, [2])
    assert tf.cast(tf.constant([1, 2]), x.dtype.base_dtype).dtype is tf.float32
