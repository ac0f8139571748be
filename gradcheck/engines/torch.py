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
        tensor = tensor.detach()
        held = _WIDER_FOR_NUMPY.get(tensor.dtype, tensor.dtype)
        if tensor._is_zerotensor():  # an exact zero (sgn's vjp) that refuses .numpy()
            return np.zeros(tuple(tensor.shape), torch.empty(0, dtype=held).numpy().dtype)
        tensor = tensor.cpu().resolve_conj().resolve_neg().to(held)
        return np.array(tensor.numpy(), copy=True)

    def epsilon(self, tensor) -> float:
        return float(torch.finfo(tensor.dtype).eps)

    def layout_of(self, tensor) -> str | None:
        return None if tensor.layout == torch.strided else str(tensor.layout)

    def from_numpy_like(self, array: np.ndarray, template, requires_grad: bool = False):
        """``array`` in a tensor laid out as ``template``: a copy of its whole
        storage, viewed with its sizes, strides and offset, holding ``array``.

        An op that reads storage (``as_strided``) computes another function of
        a contiguous copy; torch's gradcheck perturbs the input itself. Plain
        contiguous inputs, and those with overlapping elements or a conj/neg
        bit, are made by ``from_numpy``.
        """
        plain = (template.is_contiguous() and template.storage_offset() == 0
                 and template.untyped_storage().nbytes() == template.numel()
                 * template.element_size())
        if plain or template.layout != torch.strided or template.is_conj() \
                or template.is_neg() or torch._debug_has_internal_overlap(template) != 0:
            return self.from_numpy(array, requires_grad, dtype=template.dtype)
        storage = template.detach().untyped_storage()
        flat = torch.empty(storage.nbytes() // template.element_size(), dtype=template.dtype)
        flat.untyped_storage().copy_(storage)
        view = flat.as_strided(template.size(), template.stride(), template.storage_offset())
        view.copy_(torch.from_numpy(np.array(array, copy=True)))  # to template's dtype
        return view.requires_grad_(requires_grad)

    def batched_jvp(self, func, primals, in_idx, tangents):
        from torch._vmap_internals import _vmap  # the batching forward AD supports
        return _vmap(lambda t: self.jvp_outputs(func, primals, in_idx, t))(tangents)

    def undefined_grad(self, tensor):
        return torch._C._functions.UndefinedGrad()(tensor)
