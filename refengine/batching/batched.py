"""``BatchedTensor``: a tensor seen without its batch dimension.

Inside ``vmap`` a function sees tensors of the per-example (logical) shape.
Each is a ``BatchedTensor`` wrapping a physical tensor whose dimension 0 is
the batch, tagged with the vmap level that owns that dimension. Ops on a
``BatchedTensor`` go to the op's batching rule (``refengine/batching/runtime.py``),
which computes the physical result in one call; autograd records the
physical ops, so gradients flow to the physical inputs.

Nested ``vmap``: the physical tensor of a level-2 ``BatchedTensor`` may itself
be a level-1 ``BatchedTensor``; each level unwraps one dimension.
"""
from __future__ import annotations

from ..tensor import Size, Tensor


class NotBatchable(RuntimeError):
    """An operation that cannot run on a ``BatchedTensor`` as a whole.

    The dispatcher answers it by running the op once per batch element
    (the loop fallback); outside an op it reaches the user, naming the cause.
    """


class BatchedTensor(Tensor):
    """A tensor with a hidden leading batch dimension (see ``refengine.vmap``)."""

    def __init__(self, value: Tensor, level: int):
        # Not Tensor.__init__: a BatchedTensor has no array of its own. The
        # autograd attributes that generic code reads (_base, _grad_fn,
        # _requires_grad, _wrapped_number...) are Tensor's class defaults
        # (no view, no history, no grad; one is made for every op under vmap);
        # the graph itself lives on the physical tensor.
        self._value = value
        self._level = level
        self._fw_grads = {}
        self._is_inference = value._is_inference

    @property
    def _data(self):
        raise NotBatchable(
            "vmap: this operation reads the values of a batched tensor directly, so it has no "
            "batching rule; write it with refengine operations, or call it outside vmap")

    @_data.setter
    def _data(self, value):
        raise NotBatchable("vmap: a batched tensor's data cannot be replaced")

    @property
    def _storage(self):
        return self._value._storage

    @_storage.setter
    def _storage(self, value):
        raise NotBatchable("vmap: a batched tensor's storage cannot be replaced")

    @property
    def batch_size(self) -> int:
        return self._value.shape[0]

    @property
    def dtype(self):
        return self._value.dtype

    @property
    def shape(self) -> Size:
        return Size(self._value.shape[1:])

    def size(self, dim: int | None = None):
        return self.shape if dim is None else self.shape[dim]

    @property
    def ndim(self) -> int:
        return self._value.ndim - 1

    def dim(self) -> int:
        return self._value.ndim - 1

    def numel(self) -> int:
        n = 1
        for s in self.shape:
            n *= s
        return n

    def __len__(self) -> int:
        if self.ndim == 0:
            raise TypeError("len() of a 0-d tensor")
        return self.shape[0]

    @property
    def requires_grad(self) -> bool:
        return self._value.requires_grad

    @requires_grad.setter
    def requires_grad(self, value: bool) -> None:
        self.requires_grad_(value)

    def requires_grad_(self, requires_grad: bool = True):
        raise NotBatchable("vmap: requires_grad_() on a batched tensor is not supported; "
                           "set requires_grad on the tensor you pass to vmap instead")

    @property
    def grad_fn(self):
        return self._value.grad_fn

    def detach(self):
        """The batched tensor without history (the physical tensor detached)."""
        return BatchedTensor(self._value.detach(), self._level)

    def _grad_edge(self):
        raise NotBatchable("vmap: autograd.grad and backward on batched tensors are not "
                           "supported inside vmap; differentiate the vmapped function instead "
                           "(for a batch of grad_outputs use is_grads_batched=True)")

    def item(self):
        raise NotBatchable("vmap: item() would need one value per batch element; "
                           "keep the computation in tensors")

    def __bool__(self):
        raise NotBatchable("vmap: the truth value of a batched tensor depends on the batch "
                           "element (data-dependent control flow); use refengine.where instead")

    def __repr__(self) -> str:
        return f"BatchedTensor(level={self._level}, bdim=0, value={self._value!r})"


def wrap(value: Tensor, level: int) -> BatchedTensor:
    """``value`` (batch at dimension 0) as a batched tensor of ``level``."""
    return BatchedTensor(value, level)


def level_of(value) -> int:
    """The vmap level of ``value`` (0 when it is not batched)."""
    return value._level if isinstance(value, BatchedTensor) else 0


def top_level(values) -> int:
    """The highest vmap level among ``values`` (tensors or lists of tensors)."""
    top = 0
    for v in values:
        if isinstance(v, BatchedTensor):
            top = max(top, v._level)
        elif isinstance(v, (list, tuple)):
            for x in v:
                if isinstance(x, BatchedTensor):
                    top = max(top, x._level)
    return top
