"""A sharded embedding_lookup with an out-of-range int64 id is an error, as
docs/sparse.md promises, not a row of another id. The shard of an id was computed in
int64 and cast to int32 for DynamicPartition, so a shard number of 2**32 or more (or a
negative one) wrapped into [0, shards): with 'div' over shards of [1, 1, 0] rows, id
2**32 returned row 0, and with 'div' over two shards of 5 rows, id -6 * 2**32 returned
row 0 too (TensorFlow casts the same way)."""

import numpy as np
import pytest

import tensorweave as tw
from tensorweave.errors import InvalidArgumentError
from tests.helpers import TARGETS

TABLE = np.arange(20, dtype=np.float32).reshape(10, 2)
LAYOUTS = {
    "div, 2 shards": ("div", [TABLE[:5], TABLE[5:]]),
    "div, more shards than rows": ("div", [TABLE[:1], TABLE[1:2], TABLE[2:2]]),
    "mod, 2 shards": ("mod", [TABLE[0::2], TABLE[1::2]]),
}
BAD_IDS = [2**32, 6 * 2**32, -6 * 2**32, 2**62, -(2**63)]


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("layout", sorted(LAYOUTS))
@pytest.mark.parametrize("bad", BAD_IDS)
def test_out_of_range_int64_ids_fail(target, layout, bad):
    strategy, shards = LAYOUTS[layout]
    fn = tw.compile(lambda ids, *s: tw.nn.embedding_lookup(list(s), ids, strategy),
                    target=target)
    with pytest.raises(InvalidArgumentError):
        fn(np.array([1, bad], np.int64), *shards)


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_in_range_int64_ids_still_look_up_their_rows(layout):
    strategy, shards = LAYOUTS[layout]
    rows = sum(len(s) for s in shards)
    ids = np.array([[rows - 1, 0], [1, rows - 1]], np.int64)
    if strategy == "mod":
        table = np.empty((rows, 2), np.float32)
        for k, s in enumerate(shards):
            table[k::len(shards)] = s
    else:
        table = np.concatenate(shards)
    got = tw.compile(lambda i, *s: tw.nn.embedding_lookup(list(s), i, strategy))(ids, *shards)
    np.testing.assert_array_equal(got, table[ids])
