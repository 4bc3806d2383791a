"""The layers and models whose results tf_keras recorded in ``fixtures/`` (by
``record_fixtures.py``, run where tf_keras is installed) and ``tw.keras`` must reproduce.
Plain data, importable without tensorweave or TensorFlow: the recorder and the tests
read the same definitions."""

# (case id, layer class, constructor arguments, input shape, input dtype,
#  whether to also run it with training=True)
LAYER_CASES = [
    ("dense_relu", "Dense", {"units": 5, "activation": "relu"}, (4, 6), "float32", False),
    ("dense_rank3", "Dense", {"units": 3, "use_bias": False}, (2, 3, 4), "float32", False),
    ("dense_softmax", "Dense", {"units": 4, "activation": "softmax"}, (3, 5), "float32", False),
    ("conv2d_valid", "Conv2D", {"filters": 3, "kernel_size": 3}, (2, 7, 6, 2), "float32",
     False),
    ("conv2d_same_strided", "Conv2D", {"filters": 4, "kernel_size": (3, 2), "strides": 2,
                                       "padding": "same", "activation": "tanh"},
     (2, 7, 8, 3), "float32", False),
    ("conv2d_dilated", "Conv2D", {"filters": 2, "kernel_size": 3, "dilation_rate": 2,
                                  "padding": "same"}, (1, 9, 9, 2), "float32", False),
    ("conv1d_causal", "Conv1D", {"filters": 3, "kernel_size": 3, "padding": "causal",
                                 "dilation_rate": 2}, (2, 10, 4), "float32", False),
    ("maxpool2d", "MaxPooling2D", {"pool_size": 2}, (2, 7, 6, 3), "float32", False),
    ("maxpool2d_same", "MaxPooling2D", {"pool_size": 3, "strides": 2, "padding": "same"},
     (2, 7, 6, 3), "float32", False),
    ("avgpool2d_same", "AveragePooling2D", {"pool_size": 3, "strides": 2, "padding": "same"},
     (2, 7, 6, 3), "float32", False),
    ("avgpool2d", "AveragePooling2D", {"pool_size": (2, 3)}, (2, 6, 6, 2), "float32", False),
    ("gap2d", "GlobalAveragePooling2D", {}, (2, 5, 4, 3), "float32", False),
    ("gmp2d_keepdims", "GlobalMaxPooling2D", {"keepdims": True}, (2, 5, 4, 3), "float32",
     False),
    ("flatten", "Flatten", {}, (3, 2, 4, 5), "float32", False),
    ("reshape", "Reshape", {"target_shape": (4, -1)}, (3, 2, 4, 2), "float32", False),
    ("permute", "Permute", {"dims": (2, 1)}, (3, 2, 4), "float32", False),
    ("batchnorm_dense", "BatchNormalization", {"momentum": 0.8}, (6, 5), "float32", True),
    ("batchnorm_conv", "BatchNormalization", {"momentum": 0.7, "epsilon": 0.01},
     (3, 4, 5, 2), "float32", True),
    ("batchnorm_axis1", "BatchNormalization", {"axis": 1}, (4, 3, 5), "float32", True),
    ("layernorm", "LayerNormalization", {}, (3, 7), "float32", False),
    ("layernorm_axes", "LayerNormalization", {"axis": [1, 2], "epsilon": 0.01}, (2, 3, 4),
     "float32", False),
    ("embedding", "Embedding", {"input_dim": 10, "output_dim": 3}, (4, 5), "int32", False),
    ("activation_elu", "Activation", {"activation": "elu"}, (3, 4), "float32", False),
    ("activation_selu", "Activation", {"activation": "selu"}, (3, 4), "float32", False),
    ("activation_softplus", "Activation", {"activation": "softplus"}, (3, 4), "float32", False),
    ("activation_gelu", "Activation", {"activation": "gelu"}, (3, 4), "float32", False),
    ("activation_swish", "Activation", {"activation": "swish"}, (3, 4), "float32", False),
    ("activation_hard_sigmoid", "Activation", {"activation": "hard_sigmoid"}, (3, 4),
     "float32", False),
    ("lstm_last", "LSTM", {"units": 4}, (2, 5, 3), "float32", False),
    ("lstm_sequences_backwards", "LSTM", {"units": 3, "return_sequences": True,
                                          "go_backwards": True}, (2, 4, 3), "float32", False),
    ("gru_sequences", "GRU", {"units": 4, "return_sequences": True}, (2, 5, 3), "float32",
     False),
    ("gru_before", "GRU", {"units": 3, "reset_after": False}, (2, 4, 2), "float32", False),
    ("simple_rnn", "SimpleRNN", {"units": 3, "return_sequences": True}, (2, 4, 2), "float32",
     False),
]

# Merge layers take two inputs of these shapes.
MERGE_CASES = [
    ("add", "Add", {}, [(3, 4), (3, 4)]),
    ("subtract", "Subtract", {}, [(3, 4), (3, 4)]),
    ("multiply", "Multiply", {}, [(3, 4), (3, 4)]),
    ("average", "Average", {}, [(3, 4), (3, 4)]),
    ("maximum", "Maximum", {}, [(3, 4), (3, 4)]),
    ("concatenate", "Concatenate", {}, [(3, 4), (3, 2)]),
    ("concatenate_axis1", "Concatenate", {"axis": 1}, [(2, 3, 4), (2, 1, 4)]),
]

# Training runs. Each builds its model and compile arguments from a `keras` module (tf_keras
# when recording, tw.keras in the tests), so both sides run the same code; data come
# from `make_data` with a fixed seed.

def _mlp_sgd_softmax(keras):
    model = keras.Sequential([keras.layers.Dense(16, activation="relu", input_shape=(8,)),
                              keras.layers.Dense(3, activation="softmax")])
    return model, dict(optimizer=keras.optimizers.SGD(learning_rate=0.1),
                       loss="sparse_categorical_crossentropy", metrics=["accuracy"])


def _mlp_adam_logits(keras):
    model = keras.Sequential([keras.layers.Dense(12, activation="tanh", input_shape=(6,)),
                              keras.layers.Dense(4)])
    return model, dict(optimizer=keras.optimizers.Adam(learning_rate=0.02),
                       loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                       metrics=["accuracy"])


def _regression_nesterov_l2(keras):
    model = keras.Sequential([
        keras.layers.Dense(8, activation="relu", input_shape=(5,),
                           kernel_regularizer=keras.regularizers.L2(0.01)),
        keras.layers.Dense(1)])
    return model, dict(optimizer=keras.optimizers.SGD(learning_rate=0.05, momentum=0.9,
                                                      nesterov=True),
                       loss="mse", metrics=["mae"])


def _cnn_batchnorm_adam(keras):
    model = keras.Sequential([
        # no bias before the normalization: its gradient is rounding noise, which Adam
        # scales up to steps of the learning rate's size (on TF too), so its values
        # would be noise
        keras.layers.Conv2D(4, 3, padding="same", use_bias=False, input_shape=(6, 6, 2)),
        keras.layers.BatchNormalization(),
        keras.layers.Activation("relu"),
        keras.layers.MaxPooling2D(),
        keras.layers.Flatten(),
        keras.layers.Dense(3)])
    return model, dict(optimizer=keras.optimizers.Adam(learning_rate=0.01),
                       loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                       metrics=["accuracy"])


def _rmsprop_onehot_weighted(keras):
    model = keras.Sequential([keras.layers.Dense(10, activation="sigmoid", input_shape=(4,)),
                              keras.layers.Dense(3, activation="softmax")])
    return model, dict(optimizer=keras.optimizers.RMSprop(learning_rate=0.01),
                       loss="categorical_crossentropy", metrics=["accuracy"],
                       weighted_metrics=["accuracy"])


def _lstm_gru_embedding(keras):
    model = keras.Sequential([keras.layers.Embedding(12, 4, input_length=6),
                              keras.layers.LSTM(5, return_sequences=True),
                              keras.layers.GRU(4),
                              keras.layers.Dense(1, activation="sigmoid")])
    return model, dict(optimizer=keras.optimizers.Adam(learning_rate=0.01),
                       loss="binary_crossentropy", metrics=["accuracy"])


def _functional_two_inputs(keras):
    a = keras.Input(shape=(4,), name="a")
    b = keras.Input(shape=(3,), name="b")
    ha = keras.layers.Dense(5, activation="relu")(a)
    hb = keras.layers.Dense(5, activation="relu")(b)
    merged = keras.layers.Concatenate()([ha, hb])
    merged = keras.layers.Add()([keras.layers.Dense(6)(merged), keras.layers.Dense(6)(merged)])
    out = keras.layers.Dense(1, activation="sigmoid")(merged)
    model = keras.Model([a, b], out)
    return model, dict(optimizer=keras.optimizers.Adagrad(learning_rate=0.1),
                       loss="binary_crossentropy", metrics=["accuracy"])


# case id -> (builder, data description, fit arguments)
TRAIN_CASES = {
    "mlp_sgd_softmax": (_mlp_sgd_softmax, {"x": (64, 8), "y": ("classes", 3)},
                        {"batch_size": 16, "epochs": 3}),
    "mlp_adam_logits": (_mlp_adam_logits, {"x": (60, 6), "y": ("classes", 4)},
                        {"batch_size": 16, "epochs": 3}),
    "regression_nesterov_l2": (_regression_nesterov_l2, {"x": (48, 5), "y": ("regression", 1)},
                               {"batch_size": 12, "epochs": 3}),
    "cnn_batchnorm_adam": (_cnn_batchnorm_adam, {"x": (32, 6, 6, 2), "y": ("classes", 3)},
                           {"batch_size": 8, "epochs": 2}),
    "rmsprop_onehot_weighted": (_rmsprop_onehot_weighted,
                                {"x": (50, 4), "y": ("onehot", 3), "sample_weight": True},
                                {"batch_size": 10, "epochs": 3, "validation_split": 0.2}),
    "lstm_gru_embedding": (_lstm_gru_embedding, {"x": ("ids", (40, 6), 12),
                                                 "y": ("binary", 1)},
                           {"batch_size": 8, "epochs": 2}),
    "functional_two_inputs": (_functional_two_inputs, {"x": [(40, 4), (40, 3)],
                                                       "y": ("binary", 1)},
                              {"batch_size": 10, "epochs": 2}),
}


def make_data(np, spec, seed):
    """``(x, y, sample_weight)`` for a training case (`np` is NumPy)."""
    rng = np.random.RandomState(seed)
    xs = spec["x"]
    if isinstance(xs, tuple) and xs[0] == "ids":
        x = rng.randint(0, xs[2], size=xs[1]).astype("int32")
        n = xs[1][0]
    elif isinstance(xs, list):
        x = [rng.randn(*shape).astype("float32") for shape in xs]
        n = xs[0][0]
    else:
        x = rng.randn(*xs).astype("float32")
        n = xs[0]
    kind, k = spec["y"]
    if kind == "classes":
        y = rng.randint(0, k, size=n).astype("int64")
    elif kind == "onehot":
        y = np.eye(k, dtype="float32")[rng.randint(0, k, size=n)]
    elif kind == "binary":
        y = rng.randint(0, 2, size=(n, 1)).astype("float32")
    else:
        y = rng.randn(n, k).astype("float32")
    sw = rng.uniform(0.5, 2.0, size=n).astype("float32") if spec.get("sample_weight") else None
    return x, y, sw


# Losses and metrics: (case id, builder of the object from a `keras` module, kind of
# labels, kind of predictions). Kinds: "probs" (rows of a softmax), "logits", "sigmoid"
# (probabilities in (0, 1)), "classes" (integer labels), "onehot", "binary" (0/1
# floats), "real". Each is evaluated with and without sample weights.
LOSS_CASES = [
    ("mse", lambda keras: keras.losses.MeanSquaredError(), "real", "real"),
    ("mae", lambda keras: keras.losses.MeanAbsoluteError(), "real", "real"),
    ("mape", lambda keras: keras.losses.MeanAbsolutePercentageError(), "real", "real"),
    ("msle", lambda keras: keras.losses.MeanSquaredLogarithmicError(), "sigmoid", "sigmoid"),
    ("bce_probs", lambda keras: keras.losses.BinaryCrossentropy(), "binary", "sigmoid"),
    ("bce_logits_smooth", lambda keras: keras.losses.BinaryCrossentropy(
        from_logits=True, label_smoothing=0.2), "binary", "logits"),
    ("cce_probs", lambda keras: keras.losses.CategoricalCrossentropy(), "onehot", "probs"),
    ("cce_logits_smooth", lambda keras: keras.losses.CategoricalCrossentropy(
        from_logits=True, label_smoothing=0.1), "onehot", "logits"),
    ("scce_probs", lambda keras: keras.losses.SparseCategoricalCrossentropy(), "classes",
     "probs"),
    ("scce_logits", lambda keras: keras.losses.SparseCategoricalCrossentropy(
        from_logits=True), "classes", "logits"),
    ("hinge", lambda keras: keras.losses.Hinge(), "binary", "real"),
    ("squared_hinge", lambda keras: keras.losses.SquaredHinge(), "binary", "real"),
    ("categorical_hinge", lambda keras: keras.losses.CategoricalHinge(), "onehot", "real"),
    ("kld", lambda keras: keras.losses.KLDivergence(), "probs", "probs"),
    ("poisson", lambda keras: keras.losses.Poisson(), "sigmoid", "sigmoid"),
    ("log_cosh", lambda keras: keras.losses.LogCosh(), "real", "real"),
    ("huber", lambda keras: keras.losses.Huber(delta=0.7), "real", "real"),
    ("cosine", lambda keras: keras.losses.CosineSimilarity(), "real", "real"),
    ("mse_sum", lambda keras: keras.losses.MeanSquaredError(reduction="sum"), "real", "real"),
]

METRIC_CASES = [
    ("accuracy", lambda keras: keras.metrics.Accuracy(), "classes", "classes"),
    ("binary_accuracy", lambda keras: keras.metrics.BinaryAccuracy(threshold=0.4), "binary",
     "sigmoid"),
    ("categorical_accuracy", lambda keras: keras.metrics.CategoricalAccuracy(), "onehot",
     "probs"),
    ("sparse_categorical_accuracy", lambda keras: keras.metrics.SparseCategoricalAccuracy(),
     "classes", "probs"),
    ("top_k", lambda keras: keras.metrics.TopKCategoricalAccuracy(k=2), "onehot", "probs"),
    ("sparse_top_k", lambda keras: keras.metrics.SparseTopKCategoricalAccuracy(k=2),
     "classes", "probs"),
    ("mse_metric", lambda keras: keras.metrics.MeanSquaredError(), "real", "real"),
    ("rmse", lambda keras: keras.metrics.RootMeanSquaredError(), "real", "real"),
    ("precision", lambda keras: keras.metrics.Precision(), "binary", "sigmoid"),
    ("recall", lambda keras: keras.metrics.Recall(thresholds=0.3), "binary", "sigmoid"),
    ("scce_metric", lambda keras: keras.metrics.SparseCategoricalCrossentropy(), "classes",
     "probs"),
]


def make_values(np, kind, rng, n=6, k=4):
    """An array of kind `kind` (see LOSS_CASES) for `n` examples of `k` features."""
    if kind == "real":
        return rng.randn(n, k).astype("float32")
    if kind == "logits":
        return (3 * rng.randn(n, k)).astype("float32")
    if kind == "probs":
        z = np.exp(2 * rng.randn(n, k))
        return (z / z.sum(1, keepdims=True)).astype("float32")
    if kind == "sigmoid":
        return (1 / (1 + np.exp(-2 * rng.randn(n, k)))).astype("float32")
    if kind == "classes":
        return rng.randint(0, k, size=n).astype("int64")
    if kind == "onehot":
        return np.eye(k, dtype="float32")[rng.randint(0, k, size=n)]
    if kind == "binary":
        return rng.randint(0, 2, size=(n, k)).astype("float32")
    raise ValueError(kind)
