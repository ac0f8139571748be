"""The torch adapter. Imported only when the inputs are torch tensors."""
from __future__ import annotations

import numpy as np
import torch

from gradcheck.engines.base import Engine


#: torch dtypes NumPy lacks, and the NumPy-supported dtype that holds their values
_WIDER_FOR_NUMPY = {torch.bfloat16: torch.float32, torch.complex32: torch.complex64}


class TorchEngine(Engine):
    """Adapter for ``torch`` tensors (CPU)."""

    name = "torch"
    module = torch
    supports_batched_grad = True
    supports_batched_forward_grad = True
    supports_undefined_grad = True

    def is_tensor(self, value) -> bool:
        return isinstance(value, torch.Tensor)

    def to_numpy(self, tensor) -> np.ndarray:
        """A NumPy copy; bfloat16 as float32 and complex32 as complex64 (NumPy has
        neither; both hold every value exactly). ``from_numpy(array,
        dtype=tensor.dtype)`` gives the tensor back."""
        tensor = tensor.detach().cpu().resolve_conj().resolve_neg()
        if tensor.dtype in _WIDER_FOR_NUMPY:
            tensor = tensor.to(_WIDER_FOR_NUMPY[tensor.dtype])
        return np.array(tensor.numpy(), copy=True)

    def epsilon(self, tensor) -> float:
        return float(torch.finfo(tensor.dtype).eps)

    def batched_jvp(self, func, primals, in_idx, tangents):
        from torch._vmap_internals import _vmap  # the batching forward AD supports
        return _vmap(lambda t: self.jvp_outputs(func, primals, in_idx, t))(tangents)

    def undefined_grad(self, tensor):
        return torch._C._functions.UndefinedGrad()(tensor)
