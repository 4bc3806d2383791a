"""The error a ``tf.py_func`` raises when its Python function raises, as TensorFlow 1
maps them (TensorFlow 2.21's ``tf.compat.v1.py_func`` on the same programs):
ValueError and TypeError are InvalidArgumentError, StopIteration is OutOfRangeError,
NotImplementedError is UnimplementedError, anything else UnknownError.

StopIteration matters to input pipelines: a py_func that reads the next record from a
Python iterator ends the pipeline like the end of any input (the runner closes its queue,
the consumer gets the last, smaller batch, then OutOfRangeError); it was an UnknownError
that stopped the coordinator and failed ``coord.join``.
"""

from __future__ import annotations

import numpy as np
import pytest

import tensorweave as tw
import tensorweave.compat.v1 as tf
from tests.helpers import within

pytestmark = pytest.mark.usefixtures("fresh_default_graph")


@pytest.mark.parametrize("raised, expected", [
    (ValueError("bad value"), tw.errors.InvalidArgumentError),
    (TypeError("bad type"), tw.errors.InvalidArgumentError),
    (StopIteration(), tw.errors.OutOfRangeError),
    (NotImplementedError("later"), tw.errors.UnimplementedError),
    (IndexError("out of the list"), tw.errors.UnknownError),
    (KeyError("k"), tw.errors.UnknownError),
])
def test_the_python_error_maps_to_tensorflows_error(raised, expected):
    def fails(v):
        raise raised

    out = tf.py_func(fails, [tf.constant(1)], tf.int32)
    out.set_shape([])
    with tf.Session() as sess:
        with pytest.raises(expected) as info:
            sess.run(out)
    assert type(raised).__name__ in str(info.value)  # the message keeps the Python error
    if expected is not tw.errors.OutOfRangeError:
        assert not isinstance(info.value, tw.errors.OutOfRangeError)


def test_a_py_func_reading_an_iterator_ends_the_pipeline_at_stop_iteration():
    records = iter(range(7))
    value = tf.py_func(lambda: np.int32(next(records)), [], tf.int32)
    value.set_shape([])
    batch = tf.train.batch([value], 3, allow_smaller_final_batch=True)

    def body():
        out = []
        with tf.Session() as sess:
            coord = tf.train.Coordinator()
            threads = tf.train.start_queue_runners(sess, coord)
            try:
                while len(out) < 10:
                    out.append(sess.run(batch).tolist())
            except tw.errors.OutOfRangeError:
                out.append("end")
            finally:
                coord.request_stop()
                coord.join(threads)  # no error: the input ended
        return out

    assert within(120, body) == [[0, 1, 2], [3, 4, 5], [6], "end"]
