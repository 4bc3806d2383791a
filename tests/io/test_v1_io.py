"""TensorFlow 1's names of the io functions (tf.gfile, tf.python_io, tf.compat.v1.io,
tf.parse_example, tf.decode_raw, ...) in graph mode with a Session, and string feeds."""

import numpy as np
import pytest

import tensorweave as tw
import tensorweave.compat.v1 as tf

pytestmark = pytest.mark.usefixtures("fresh_default_graph")


def test_the_v1_namespaces_have_tensorflows_names(tmp_path):
    assert tf.string is tw.string
    assert tf.gfile.Exists(str(tmp_path)) and tf.gfile.IsDirectory(str(tmp_path))
    tf.gfile.MakeDirs(str(tmp_path / "a" / "b"))
    with tf.gfile.GFile(str(tmp_path / "a" / "f.txt"), "w") as f:
        f.write("x")
    assert tf.gfile.Glob(str(tmp_path / "a" / "*.txt")) == [str(tmp_path / "a" / "f.txt")]
    assert sorted(tf.gfile.ListDirectory(str(tmp_path / "a"))) == ["b", "f.txt"]
    assert tf.gfile.FastGFile(str(tmp_path / "a" / "f.txt"), "rb").read() == b"x"
    tf.gfile.DeleteRecursively(str(tmp_path / "a"))
    assert not tf.gfile.Exists(str(tmp_path / "a"))
    p = str(tmp_path / "r.tfrecord")
    with tf.python_io.TFRecordWriter(p) as w:
        w.write(b"one")
    assert list(tf.python_io.tf_record_iterator(p)) == [b"one"]
    assert list(tf.io.tf_record_iterator(p)) == [b"one"]
    assert tf.FixedLenFeature is tw.io.FixedLenFeature and tf.io.VarLenFeature is tw.io.VarLenFeature


def test_graph_mode_parsing_with_a_session(tmp_path):
    ex = tw.train.Example()
    ex.features.feature["x"].float_list.value.extend([1.0, 2.0])
    ex.features.feature["w"].bytes_list.value.append(b"\x01\x00\x02\x00")
    p = str(tmp_path / "v.bin")
    with open(p, "wb") as f:
        f.write(b"7,8.5")
    serialized = tf.placeholder(tf.string, [])
    parsed = tf.parse_single_example(serialized, {"x": tf.FixedLenFeature([2], tf.float32),
                                                  "w": tf.io.FixedLenFeature([], tf.string)})
    doubled = parsed["x"] * 2.0
    ints = tf.decode_raw(parsed["w"], tf.int16)
    old_name = tf.decode_raw(bytes=parsed["w"], out_type=tf.uint8)
    csv = tf.decode_csv(tf.read_file(p), [[0], [0.0]])
    batch = tf.io.parse_example(tf.placeholder_with_default(
        np.array([ex.SerializeToString()] * 2, object), [None]),
        {"x": tf.io.VarLenFeature(tf.float32)})
    with tf.Session() as sess:
        d, i, o, c, b = sess.run([doubled, ints, old_name, csv, batch],
                                 {serialized: ex.SerializeToString()})
    assert d.tolist() == [2.0, 4.0] and i.tolist() == [1, 2] and o.tolist() == [1, 0, 2, 0]
    assert c[0] == 7 and c[1] == np.float32(8.5)
    assert b["x"].values.tolist() == [1.0, 2.0, 1.0, 2.0] and b["x"].dense_shape.tolist() == [2, 2]


def test_string_feeds_are_checked():
    s = tf.placeholder(tf.string, [None])
    x = tf.placeholder(tf.float32, [None])
    with tf.Session() as sess:
        assert sess.run(tf.identity(s), {s: [b"a\x00", "é"]}).tolist() == [b"a\x00", "é".encode()]
        with pytest.raises(tw.errors.InvalidArgumentError, match="strings and numbers"):
            sess.run(tf.identity(s), {s: [1, 2]})
        with pytest.raises(tw.errors.InvalidArgumentError, match="strings and numbers"):
            sess.run(tf.identity(x), {x: ["1.5"]})  # (never parsed into a number)
        with pytest.raises(tw.errors.InvalidArgumentError, match="shape"):
            sess.run(tf.identity(s), {s: [[b"a"]]})


def _run_pipeline(fetches, limit=50):
    """Run the default graph's queue runners and `fetches` until OutOfRangeError."""
    out = []
    with tf.Session() as sess:
        sess.run(tf.local_variables_initializer())
        coord = tf.train.Coordinator()
        threads = tf.train.start_queue_runners(sess, coord)
        try:
            while len(out) < limit:
                out.append(sess.run(fetches))
        except tw.errors.OutOfRangeError:
            pass
        finally:
            coord.request_stop()
            coord.join(threads)
    return out


def test_tfrecord_reader_reads_the_files_a_string_queue_names(tmp_path):
    # TensorFlow 2.21 on these files: keys b"FILE:0", b"FILE:19", b"FILE:38" (checked by
    # hand), read_up_to stops at the end of the names with fewer records
    paths = []
    for k in range(2):
        p = str(tmp_path / f"r{k}.tfrecord")
        paths.append(p)
        with tw.io.TFRecordWriter(p) as w:
            for i in range(3):
                w.write(f"{k}-{i}".encode())
    queue = tf.train.string_input_producer(paths, num_epochs=1, shuffle=False)
    reader = tf.TFRecordReader()
    key, value = reader.read(queue)
    parsed = tf.decode_raw(value, tf.uint8)
    got = _run_pipeline([key, value, parsed])
    assert [(k[()], v[()]) for k, v, _ in got] == [
        (f"{p}:{off}".encode(), f"{n}-{i}".encode())
        for n, p in enumerate(paths) for i, off in enumerate((0, 19, 38))]
    assert got[0][2].tolist() == list(b"0-0")


def test_read_up_to_and_the_record_count(tmp_path):
    p = str(tmp_path / "r.tfrecord")
    with tw.io.TFRecordWriter(p) as w:
        for i in range(5):
            w.write(bytes([i]))
    queue = tf.train.string_input_producer([p], num_epochs=1, shuffle=False)
    reader = tf.TFRecordReader()
    keys, values = reader.read_up_to(queue, 2)
    with tf.control_dependencies([values]):  # (the count of the same run: after the read)
        count = reader.num_records_produced()
    got = _run_pipeline([values, count])
    assert [v.tolist() for v, _ in got] == [[b"\x00", b"\x01"], [b"\x02", b"\x03"], [b"\x04"]]
    assert [int(c) for _, c in got] == [2, 4, 5]


def test_a_reader_needs_a_queue_of_names():
    queue = tf.FIFOQueue(4, [tf.int32], shapes=[[]])
    _, value = tf.TFRecordReader().read(queue)
    with tf.Session() as sess:
        sess.run(queue.enqueue(1))
        with pytest.raises(tw.errors.InvalidArgumentError, match="queue of file names"):
            sess.run(value)
