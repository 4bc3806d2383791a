"""Record TensorFlow 2.21's results for tests/test_bitcast.py and
tests/test_random_gamma_poisson.py (CI has no TensorFlow): run with a TensorFlow
interpreter from the repository root,

    python tests/data/tf_fixtures/record_bitcast_random.py

and it rewrites tests/data/tf_fixtures/bitcast_random.npz."""

import os

import numpy as np
import tensorflow as tf

OUT = os.path.join(os.path.dirname(__file__), "bitcast_random.npz")
rng = np.random.default_rng(20260101)
arrays = {}

# bitcast: every pair of the dtypes both have (bool refused by both), from random bytes
DTYPES = ["float16", "bfloat16", "float32", "float64", "int8", "int16", "int32", "int64",
          "uint8"]
for src in DTYPES:
    for dst in DTYPES:
        s, d = tf.as_dtype(src).size, tf.as_dtype(dst).size
        shape = [3, max(d // s, 1)] if d > s else [3, 2]
        raw = rng.integers(0, 256, size=int(np.prod(shape)) * s, dtype=np.uint8)
        x = tf.bitcast(tf.constant(raw.reshape(-1, s)), tf.as_dtype(src))  # [n] of src
        x = tf.reshape(x, shape)
        y = tf.bitcast(x, tf.as_dtype(dst))
        arrays[f"bitcast/{src}/{dst}/in"] = np.frombuffer(x.numpy().tobytes(), np.uint8)
        arrays[f"bitcast/{src}/{dst}/in_shape"] = np.array(shape)
        arrays[f"bitcast/{src}/{dst}/out"] = np.frombuffer(y.numpy().tobytes(), np.uint8)
        arrays[f"bitcast/{src}/{dst}/out_shape"] = np.array(y.shape)

# RandomGammaGrad on a grid of (alpha, sample): the series and the continued-fraction
# branches, tails, tiny and huge values
alpha = np.array([1e-3, 0.05, 0.3, 0.5, 0.9, 1.0, 1.5, 2.5, 7.0, 30.0, 150.0, 1e3])
sample = np.array([1e-20, 1e-6, 1e-3, 0.05, 0.4, 1.0, 1.7, 4.0, 12.0, 40.0, 180.0, 1.2e3])
a, x = np.meshgrid(alpha, sample, indexing="ij")
for name, dt in (("float32", np.float32), ("float64", np.float64)):
    arrays[f"gamma_grad/{name}/alpha"] = a.astype(dt)
    arrays[f"gamma_grad/{name}/sample"] = x.astype(dt)
    arrays[f"gamma_grad/{name}/out"] = tf.raw_ops.RandomGammaGrad(
        alpha=a.astype(dt), sample=x.astype(dt)).numpy()

np.savez_compressed(OUT, **arrays)
print(f"wrote {OUT}: {len(arrays)} arrays, TensorFlow {tf.__version__}")
