"""What the installed numba-cuda needs from NumPy that NumPy no longer has.

numba-cuda (0.30 at least) registers an overload for ``np.row_stack`` whenever NumPy is
2.0 or newer, when its CUDA target context first loads (at the first kernel compile or
launch). NumPy 2.5 removed that alias of ``np.vstack``, so on a machine with NumPy 2.5
every kernel failed with ``AttributeError: module 'numpy' has no attribute 'row_stack'``
(seen on a lent H200 with NumPy 2.5.2, with the image's numba-cuda and with 0.30.4).
`ensure` puts the alias back before the gpu target compiles anything; it is the same
function NumPy gave under that name.
"""

from __future__ import annotations

import numpy as np


def ensure() -> None:
    """Give NumPy the aliases numba-cuda looks up at import (idempotent)."""
    if not hasattr(np, "row_stack"):
        np.row_stack = np.vstack
