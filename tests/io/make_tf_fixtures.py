"""Write the TensorFlow fixtures of tests/io (run with TensorFlow 2.21; CI has none).

    python tests/io/make_tf_fixtures.py     # in an environment with tensorflow

Writes tests/io/fixtures/: TFRecord files TensorFlow wrote (plain, GZIP, ZLIB), a file
of serialized Examples, and tf_results.json: what TensorFlow's parse_example,
decode_csv, decode_raw, TextLineDataset and TFRecordDataset(num_parallel_reads) give on
the inputs listed there. The tests compare tensorweave's results with these.
"""

import base64
import json
import os
import sys

import numpy as np
import tensorflow as tf

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fixture_inputs import (  # noqa: E402
    CSV_CASES,
    EXAMPLE_SPECS,
    RAW_CASES,
    TEXT_FILE,
    example_features,
    records,
    wire_examples,
)


def b64(b: bytes) -> str:
    return base64.b64encode(b).decode()


def encode(value):
    """A TF result as JSON: {"dtype", "shape", "values"} (bytes as base64)."""
    if isinstance(value, tf.sparse.SparseTensor):
        return {"sparse": [encode(value.indices), encode(value.values), encode(value.dense_shape)]}
    arr = value.numpy() if hasattr(value, "numpy") else value
    if isinstance(arr, bytes):  # (a string scalar's numpy())
        return {"dtype": "string", "shape": [], "values": [b64(arr)]}
    arr = np.asarray(arr)
    if arr.dtype == object:
        values = [b64(x) for x in arr.reshape(-1)]
        dtype = "string"
    else:
        dtype = arr.dtype.name
        values = [float(x) if arr.dtype.kind == "f" else int(x) for x in arr.reshape(-1)]
    return {"dtype": dtype, "shape": list(arr.shape), "values": values}


def tf_feature_spec(spec):
    out = {}
    for key, (kind, *rest) in spec.items():
        dtype = {"float32": tf.float32, "int64": tf.int64, "string": tf.string}[rest[0]]
        if kind == "fixed":
            default = rest[2] if len(rest) > 2 else None
            out[key] = tf.io.FixedLenFeature(rest[1], dtype, default_value=default)
        else:
            out[key] = tf.io.VarLenFeature(dtype)
    return out


def error_text(e):
    return str(e).split(" [Op:")[0].split("}} ")[-1]


def main():
    os.makedirs(HERE, exist_ok=True)
    recs = records()
    for name, options in [("records.tfrecord", None), ("records.tfrecord.gz", "GZIP"),
                          ("records.tfrecord.zlib", "ZLIB")]:
        with tf.io.TFRecordWriter(os.path.join(HERE, name), options) as w:
            for r in recs:
                w.write(r)
    serialized = [tf.train.Example(features=tf.train.Features(feature={
        k: (tf.train.Feature(float_list=tf.train.FloatList(value=v)) if kind == "float" else
            tf.train.Feature(int64_list=tf.train.Int64List(value=v)) if kind == "int64" else
            tf.train.Feature(bytes_list=tf.train.BytesList(value=v)) if kind == "bytes" else
            tf.train.Feature())
        for k, (kind, v) in feats.items()})).SerializeToString(deterministic=True)
        for feats in example_features()]
    serialized += wire_examples()
    with tf.io.TFRecordWriter(os.path.join(HERE, "examples.tfrecord")) as w:
        for s in serialized:
            w.write(s)
    results = {"examples": [], "csv": [], "raw": [], "text": None, "interleave": None}
    for spec_name, spec in EXAMPLE_SPECS.items():
        for i, s in enumerate(serialized):
            try:
                got = tf.io.parse_single_example(s, tf_feature_spec(spec))
                out = {k: encode(v) for k, v in got.items()}
            except Exception as e:  # noqa: BLE001
                out = {"error": type(e).__name__, "message": error_text(e)}
            results["examples"].append({"spec": spec_name, "index": i, "result": out})
        try:
            got = tf.io.parse_example(serialized[:6], tf_feature_spec(spec))
            out = {k: encode(v) for k, v in got.items()}
        except Exception as e:  # noqa: BLE001
            out = {"error": type(e).__name__, "message": error_text(e)}
        results["examples"].append({"spec": spec_name, "index": "batch", "result": out})
    for case in CSV_CASES:
        records_, defaults, kwargs = case
        tf_defaults = [tf.constant(d[1], {"float32": tf.float32, "float64": tf.float64,
                                           "int32": tf.int32, "int64": tf.int64,
                                           "string": tf.string}[d[0]]) for d in defaults]
        try:
            got = tf.io.decode_csv(records_, tf_defaults, **kwargs)
            out = [encode(g) for g in got]
        except Exception as e:  # noqa: BLE001
            out = {"error": type(e).__name__, "message": error_text(e)}
        results["csv"].append(out)
    for data, dtype, kwargs in RAW_CASES:
        try:
            got = tf.io.decode_raw(tf.constant(data, tf.string), getattr(tf, dtype), **kwargs)
            out = encode(got)
        except Exception as e:  # noqa: BLE001
            out = {"error": type(e).__name__, "message": error_text(e)}
        results["raw"].append(out)
    text_path = os.path.join(HERE, "lines.txt")
    with open(text_path, "wb") as f:
        f.write(TEXT_FILE)
    results["text"] = [b64(x.numpy()) for x in tf.data.TextLineDataset(text_path)]
    paths = []
    for k, n in enumerate([3, 1, 4, 0, 2]):
        p = os.path.join(HERE, f"part{k}.tfrecord")
        paths.append(p)
        with tf.io.TFRecordWriter(p) as w:
            for i in range(n):
                w.write(f"{k}:{i}".encode())
    results["interleave"] = {
        str(reads): [x.numpy().decode() for x in tf.data.TFRecordDataset(paths, num_parallel_reads=reads)]
        for reads in (1, 2, 3)}
    with open(os.path.join(HERE, "tf_results.json"), "w") as f:
        json.dump(results, f, indent=0, sort_keys=True)
    print("wrote", HERE, "tf", tf.__version__)


if __name__ == "__main__":
    main()
