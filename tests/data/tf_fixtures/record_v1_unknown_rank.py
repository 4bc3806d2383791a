"""Record TensorFlow 2.21's answers for tests/test_v1_unknown_rank.py (CI has no
TensorFlow): run with a TensorFlow interpreter from the repository root,

    python tests/data/tf_fixtures/record_v1_unknown_rank.py

and it rewrites tests/data/tf_fixtures/v1_unknown_rank.json: for each case of
tests/v1_unknown_rank_cases.py, the static shape of its fetch in graph mode
(tf.compat.v1) and each run's value or error kind."""

import json
import os
import sys

import tensorflow.compat.v1 as tf

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", ".."))  # tests/, for the shared cases

from v1_unknown_rank_cases import CASES, run_case  # noqa: E402

tf.disable_eager_execution()
records = {name: run_case(tf, name) for name in CASES}
with open(os.path.join(HERE, "v1_unknown_rank.json"), "w") as f:
    json.dump({"tensorflow": tf.__version__, "cases": records}, f, indent=1, sort_keys=True)
    f.write("\n")
print(f"recorded {len(records)} cases")
