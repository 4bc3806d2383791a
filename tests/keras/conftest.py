"""tw.keras tests: leave the process as it was (tw.keras.utils.set_random_seed sets
tensorweave's global seed, which other tests in the same worker would inherit)."""

import pytest

from tensorweave.frontend.ops import random as _random


@pytest.fixture(autouse=True)
def _restore_global_seed():
    saved = _random._global_seed
    yield
    _random.set_seed(saved)
