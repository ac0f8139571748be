"""``Parameter``: a tensor that a ``Module`` registers and that requires grad by default."""
from __future__ import annotations

from ..tensor import Tensor


class Parameter(Tensor):
    """A leaf tensor that is a module's parameter (``requires_grad=True`` by default).

    It shares memory and version counter with ``data`` and is cut from any
    graph ``data`` belongs to. Assigning one to a ``Module`` attribute
    registers it, so it shows up in ``parameters()``::

        >>> w = Parameter(refengine.tensor([1., 2.]))
        >>> w
        Parameter containing:
        tensor([1., 2.], requires_grad=True)
    """

    def __init__(self, data: Tensor | None = None, requires_grad: bool = True):
        if data is None:
            from ..creation import empty
            data = empty(0)
        if not isinstance(data, Tensor):
            raise TypeError(f"Parameter data must be a Tensor, got {type(data).__name__}")
        super().__init__(_array=data._data, _storage=data._storage)
        self._is_inference = data._is_inference
        self.requires_grad_(requires_grad)

    def __repr__(self) -> str:
        return "Parameter containing:\n" + super().__repr__()
