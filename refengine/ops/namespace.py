"""Derive the public surface from the op definitions, in one place:
``refengine.NAME``, ``Tensor.NAME``, ``Tensor.NAME_`` and the operators."""
from __future__ import annotations

from .. import dtypes
from ..tensor import Tensor
from .dispatch import _run, call, call_inplace, wrap_number
from .opdef import METHODS, OPS, PUBLIC, OpDef


def _function(op: OpDef):
    bind = op.bind

    def fn(*args, **kwargs):
        return _run(op, bind(args, kwargs), None)   # what call() does, one frame less
    fn.__name__ = fn.__qualname__ = op.name
    fn.__doc__ = op.forward.__doc__ or f"refengine op ``{op.name}`` (grad_fn {op.node})."
    # (what ``inspect.signature`` reports: the parameters ``bind`` takes, not *args)
    fn.__signature__ = op.signature
    return fn


def _inplace(op: OpDef):
    def fn(self, *args, **kwargs):
        return call_inplace(op, self, *args, **kwargs)
    fn.__name__ = fn.__qualname__ = f"{op.name}_"
    fn.__doc__ = f"In-place ``{op.name}``: writes the result into ``self``."
    return fn


def build() -> dict:
    """The public functions; also attaches the Tensor methods."""
    functions = {}
    for op in OPS.values():
        fn = _function(op)
        if op.function:
            functions[op.name] = fn
        if op.method and op.method not in METHODS:
            setattr(Tensor, op.method, fn)
        if op.inplace:
            setattr(Tensor, f"{op.name}_", _inplace(op))
    functions.update(PUBLIC)
    for name, fn in METHODS.items():
        setattr(Tensor, name, fn)
    _attach_extras(functions)
    return functions


def _to(self, *args, **kwargs):
    """``to(dtype)``: a converted copy (or ``self`` when the dtype already matches)."""
    dtype = kwargs.get("dtype")
    for a in args:
        if isinstance(a, dtypes.dtype):
            dtype = a
        elif isinstance(a, Tensor):
            dtype = a.dtype
    if dtype is None or dtype is self.dtype:
        return self
    return call(OPS["to_dtype"], self, dtype)


def _swap(name: str):
    def fn(self, other):
        return _apply(name, other, self)
    return fn


def _apply(name: str, a, b):
    # looked up per call, so that a hand-written ``public`` wrapper registered
    # later takes over the operator too
    public = PUBLIC.get(name)
    if public is not None:
        return public(a, b)
    op = OPS[name]
    return _run(op, op.bind((a, b), {}), None)


def _binary(name: str):
    def fn(self, other):
        return _apply(name, self, other)
    return fn


def _iop(name: str):
    def fn(self, other):
        return getattr(self, f"{name}_")(other)
    return fn


def _rpow(self, other):
    return call(OPS["pow"], wrap_number(other) if not isinstance(other, Tensor) else other, self)


def _attach_extras(functions: dict) -> None:
    T = Tensor
    from ..comparison import allclose, equal
    T.equal, T.allclose = equal, allclose
    T.to = _to
    T.type = lambda self, dtype=None: self.dtype.name if dtype is None else _to(self, dtype)
    T.float = lambda self: _to(self, dtypes.float32)
    T.double = lambda self: _to(self, dtypes.float64)
    T.cfloat = lambda self: _to(self, dtypes.complex64)
    T.cdouble = lambda self: _to(self, dtypes.complex128)
    T.long = lambda self: _to(self, dtypes.int64)
    T.int = lambda self: _to(self, dtypes.int32)
    T.bool = lambda self: _to(self, dtypes.bool_)
    T.real = property(lambda self: PUBLIC["real"](self))
    T.imag = property(lambda self: PUBLIC["imag"](self))
    T.T = property(lambda self: self.permute(*reversed(range(self.ndim))))
    T.mT = property(lambda self: self.transpose(-2, -1))
    T.H = property(lambda self: self.t().conj() if self.ndim == 2 else self.conj())
    T.mH = property(lambda self: self.transpose(-2, -1).conj())
    for dunder, name in (("add", "add"), ("sub", "sub"), ("mul", "mul"), ("truediv", "div"),
                         ("matmul", "matmul"), ("pow", "pow"), ("eq", "eq"), ("ne", "ne"),
                         ("lt", "lt"), ("le", "le"), ("gt", "gt"), ("ge", "ge"),
                         ("and", "bitwise_and"), ("or", "bitwise_or")):
        setattr(T, f"__{dunder}__", _binary(name))
    # ``2 + x`` is add(x, 2) in PyTorch (x is self): addition and multiplication commute
    T.__radd__, T.__rmul__ = _binary("add"), _binary("mul")
    for dunder, name in (("rtruediv", "div"), ("rmatmul", "matmul")):
        setattr(T, f"__{dunder}__", _swap(name))
    T.__rsub__ = lambda self, other: call(OPS["rsub"], self, other)
    T.__rpow__ = _rpow
    for dunder, name in (("iadd", "add"), ("isub", "sub"), ("imul", "mul"), ("itruediv", "div"),
                         ("ipow", "pow")):
        setattr(T, f"__{dunder}__", _iop(name))
    T.__neg__ = lambda self: call(OPS["neg"], self)
    T.__pos__ = lambda self: self
    T.__abs__ = lambda self: call(OPS["abs"], self)
    T.__invert__ = lambda self: call(OPS["bitwise_not"], self)
    T.__hash__ = object.__hash__
