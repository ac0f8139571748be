"""The torch adapter. Imported only when the inputs are torch tensors."""
from __future__ import annotations

import numpy as np
import torch
from torch.autograd import forward_ad

from gradcheck.engines import Engine


class TorchEngine(Engine):
    """Adapter for ``torch`` tensors (CPU)."""

    name = "torch"
    module = torch
    supports_batched_grad = True
    supports_batched_forward_grad = True

    def is_tensor(self, value) -> bool:
        return isinstance(value, torch.Tensor)

    def to_numpy(self, tensor) -> np.ndarray:
        tensor = tensor.detach().cpu().resolve_conj().resolve_neg()
        return np.array(tensor.numpy(), copy=True)

    def batched_jvp(self, func, primals, in_idx, tangents):
        def one(tangent):
            with forward_ad.dual_level():
                args = [p.detach() if isinstance(p, torch.Tensor) else p for p in primals]
                args[in_idx] = forward_ad.make_dual(args[in_idx], tangent)
                outs = func(*args)
                outs = outs if isinstance(outs, tuple) else (outs,)
                result = []
                for out in outs:
                    t = forward_ad.unpack_dual(out).tangent if isinstance(out, torch.Tensor) else None
                    result.append(torch.zeros_like(out) if t is None else t)
                return tuple(result)
        from torch._vmap_internals import _vmap  # the batching forward AD supports
        return _vmap(one)(tangents)

    def undefined_grad(self, tensor):
        return torch._C._functions.UndefinedGrad()(tensor)
