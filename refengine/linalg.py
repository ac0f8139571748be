"""``refengine.linalg``: PyTorch's ``torch.linalg`` on refengine tensors.

The operations are defined (forward, vjp, jvp) in ``refengine/ops/linalg.py``,
``refengine/ops/linalg_decompositions.py`` and ``refengine/ops/norms.py``;
this module is their public face.
"""
from .ops.linalg import cholesky, det, inv, pinv, slogdet, solve
from .ops.linalg_decompositions import eigh, eigvalsh, qr, svd, svdvals
from .ops.norms import matrix_norm, norm, vector_norm

__all__ = ["cholesky", "det", "eigh", "eigvalsh", "inv", "matrix_norm", "norm", "pinv", "qr",
           "slogdet", "solve", "svd", "svdvals", "vector_norm"]
