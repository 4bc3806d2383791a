"""Record TensorFlow 2.21's results for tests/test_sparse_more.py (CI has no TensorFlow):
run with a TensorFlow interpreter from the repository root,

    python tests/data/tf_fixtures/record_sparse_more.py

and it rewrites tests/data/tf_fixtures/sparse_more.npz. Inputs are in canonical
(row-major) order, which TensorFlow's kernels assume."""

import os

import numpy as np
import tensorflow as tf

OUT = os.path.join(os.path.dirname(__file__), "sparse_more.npz")
rng = np.random.default_rng(20260103)
arrays = {}


def random_sparse(shape, density, dtype=np.float64):
    dense = rng.standard_normal(shape)
    mask = rng.random(shape) < density
    idx = np.argwhere(mask)                      # row-major order
    return idx.astype(np.int64), dense[mask].astype(dtype), np.array(shape, np.int64)


def put(key, st_or_tuple):
    if isinstance(st_or_tuple, tf.SparseTensor):
        st_or_tuple = (st_or_tuple.indices.numpy(), st_or_tuple.values.numpy(),
                       st_or_tuple.dense_shape.numpy())
    for name, part in zip(("indices", "values", "dense_shape"), st_or_tuple):
        arrays[f"{key}/{name}"] = np.asarray(part)


def sp(key):
    return tf.SparseTensor(arrays[f"{key}/indices"], arrays[f"{key}/values"],
                           arrays[f"{key}/dense_shape"])


# transpose
put("t/in", random_sparse((3, 4, 5), 0.3))
for k, perm in enumerate([None, [1, 0, 2], [2, 0, 1]]):
    put(f"t/{k}/out", tf.sparse.transpose(sp("t/in"), perm))

# concat: same shapes but the axis, and (expand) different shapes
put("c/a", random_sparse((2, 3, 4), 0.4))
put("c/b", random_sparse((2, 5, 4), 0.4))
put("c/c", random_sparse((2, 1, 4), 0.9))
put("c/same_axis1", tf.sparse.concat(1, [sp("c/a"), sp("c/b"), sp("c/c")]))
put("c/same_axis-2", tf.sparse.concat(-2, [sp("c/a"), sp("c/b")]))
put("c/d", random_sparse((3, 2, 4), 0.5))
put("c/e", random_sparse((1, 4, 6), 0.5))
put("c/expand0", tf.sparse.concat(0, [sp("c/d"), sp("c/e")], expand_nonconcat_dims=True))
put("c/expand2", tf.sparse.concat(2, [sp("c/d"), sp("c/e")], expand_nonconcat_dims=True))

# fill_empty_rows, with the gradients of sum(w * values) in the values and the default
put("f/in", random_sparse((6, 3, 2), 0.15))
with tf.GradientTape(persistent=True) as tape:
    v = tf.constant(arrays["f/in/values"])
    d = tf.constant(-2.5, tf.float64)
    tape.watch([v, d])
    out, empty = tf.sparse.fill_empty_rows(
        tf.SparseTensor(arrays["f/in/indices"], v, arrays["f/in/dense_shape"]), d)
    w = tf.constant(rng.standard_normal(out.values.shape))
    loss = tf.reduce_sum(w * out.values)
put("f/out", out)
arrays["f/empty"] = empty.numpy()
arrays["f/w"] = w.numpy()
arrays["f/grad_values"] = tape.gradient(loss, v).numpy()
arrays["f/grad_default"] = tape.gradient(loss, d).numpy()

# maximum / minimum: overlapping and disjoint entries, negative values
put("m/a", random_sparse((4, 5), 0.5))
put("m/b", random_sparse((4, 5), 0.5))
put("m/max", tf.sparse.maximum(sp("m/a"), sp("m/b")))
put("m/min", tf.sparse.minimum(sp("m/a"), sp("m/b")))

# softmax over the last dim, rank 2 and 3, with its gradient
for k, shape in enumerate([(4, 6), (2, 3, 5)]):
    put(f"s/{k}/in", random_sparse(shape, 0.5))
    v = tf.constant(arrays[f"s/{k}/in/values"])
    with tf.GradientTape() as tape:
        tape.watch(v)
        out = tf.sparse.softmax(tf.SparseTensor(arrays[f"s/{k}/in/indices"], v,
                                                arrays[f"s/{k}/in/dense_shape"]))
        w = tf.constant(rng.standard_normal(out.values.shape))
        loss = tf.reduce_sum(w * out.values)
    put(f"s/{k}/out", out)
    arrays[f"s/{k}/w"] = w.numpy()
    arrays[f"s/{k}/grad"] = tape.gradient(loss, v).numpy()

# sparse segment reductions, with and without num_segments, and their data gradients
data = rng.standard_normal((6, 3))
arrays["g/data"] = data
arrays["g/indices"] = np.array([0, 5, 2, 2, 3, 1, 4], np.int32)
arrays["g/ids"] = np.array([0, 0, 1, 3, 3, 3, 6], np.int32)
for fn in ("segment_sum", "segment_mean", "segment_sqrt_n"):
    for num in (None, 9):
        x = tf.constant(data)
        with tf.GradientTape() as tape:
            tape.watch(x)
            out = getattr(tf.sparse, fn)(x, arrays["g/indices"], arrays["g/ids"],
                                         num_segments=num)
            w = tf.constant(rng.standard_normal(out.shape))
            loss = tf.reduce_sum(w * out)
        arrays[f"g/{fn}/{num}/out"] = out.numpy()
        arrays[f"g/{fn}/{num}/w"] = w.numpy()
        arrays[f"g/{fn}/{num}/grad"] = tf.convert_to_tensor(tape.gradient(loss, x)).numpy()

# sparse_to_dense (TF1's), with a default value
arrays["d/out"] = tf.compat.v1.sparse_to_dense([[0, 1], [2, 0], [2, 3]], [3, 4],
                                                [5.0, 6.0, 7.0], default_value=-1.0).numpy()

np.savez_compressed(OUT, **arrays)
print(f"wrote {OUT}: {len(arrays)} arrays, TensorFlow {tf.__version__}")
