"""``tw.linalg``: linear algebra with TensorFlow's names and semantics (``tf.linalg``).

Every function works on the last two axes and treats leading axes as a batch:
`matmul` (``tw.matmul``), `inv`, `solve`, `triangular_solve`, `cholesky`, `det`,
`slogdet`, `logdet`, `qr`, `svd` (returns ``s, u, v``: v, not its transpose), `eigh`,
`eigvalsh`, `norm`, `diag_part`, `diag`, `set_diag`, `trace`, `band_part`, `transpose`
(``tf.linalg.matrix_transpose``, also `matrix_transpose`) and `adjoint`. The
factorizations and solvers run LAPACK through numpy.linalg on every target; see
docs/api.md ("tw.linalg") for the gradients and their restrictions.
"""

from .frontend.ops.linalg import *  # noqa: F403
from .frontend.ops.linalg import __all__ as _linalg_all
from .frontend.ops.linalg import matrix_transpose as transpose
from .frontend.ops.math import matmul

__all__ = [*_linalg_all, "transpose", "matmul"]


def __dir__() -> list[str]:
    return sorted(__all__)
