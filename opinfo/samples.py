"""Sample recipes: tensors described as data, made into refengine tensors late.

A sample function (``OpInfo.sample_func``) yields ``SampleInput``s whose
tensors are ``TensorSpec``s: a shape, a domain, and optionally fixed values
or a transform (``spd``, ``well_conditioned`` ...). ``OpInfo.sample_inputs``
then makes each sample with its own generator, seeded from the op name and
the sample's index, so any one sample can be rebuilt alone.

The shape tables and generators here cover the usual cases: a scalar, an
empty tensor, a vector, a matrix, broadcasting pairs and batches.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from adcheck.refengine.pytree import tree_map

from .domains import REAL, Domain
from .sample_input import SampleInput

#: unary shapes: a scalar, an empty tensor, a vector, a matrix, a batch
UNARY_SHAPES = ((), (0,), (4,), (2, 3), (2, 1, 3))
#: binary shape pairs: same shape, broadcasting both ways, against a scalar, empty
BROADCAST_PAIRS = (((2, 3), (2, 3)), ((2, 3), (3,)), ((2, 1), (1, 3)), ((), (2, 2)),
                   ((3,), ()), ((0, 2), (2,)))


@dataclass(frozen=True)
class TensorSpec:
    """A tensor to make: ``shape`` drawn from ``domain`` (or fixed ``values``).

    ``kind`` is ``"float"`` (the sample's dtype, or ``dtype`` when given),
    ``"index"`` (int64 in ``[0, high)``) or ``"mask"`` (bool). ``transform``
    maps the drawn NumPy array to the final one (for structured matrices).
    ``requires_grad=False`` keeps a float tensor out of differentiation.
    """

    shape: tuple = ()
    domain: Domain = REAL
    values: object = None
    kind: str = "float"
    high: int = 1
    dtype: object = None
    transform: Callable | None = None
    requires_grad: bool | None = None

    def array(self, rng: np.random.Generator, dtype) -> np.ndarray:
        """The NumPy array this spec describes, for a sample of refengine ``dtype``."""
        if self.kind == "index":
            if self.values is not None:
                return np.asarray(self.values, dtype=np.int64)
            return rng.integers(0, self.high, size=self.shape).astype(np.int64)
        if self.kind == "mask":
            if self.values is not None:
                return np.asarray(self.values, dtype=np.bool_)
            return rng.random(self.shape) < 0.5
        np_dtype = (self.dtype or dtype).np
        if self.values is not None:
            out = np.array(self.values, dtype=np_dtype)
        else:
            out = self.domain.sample(rng, tuple(self.shape), np_dtype)
        if self.transform is not None:
            out = np.asarray(self.transform(out), dtype=np_dtype)
        return out

    def make(self, rng: np.random.Generator, dtype, requires_grad: bool):
        """A refengine tensor for this spec."""
        from adcheck import refengine
        arr = self.array(rng, dtype)
        grad_ok = self.kind == "float" and self.requires_grad is not False
        return refengine.tensor(arr, requires_grad=bool(requires_grad and grad_ok))


def make(shape=(), domain: Domain = REAL, **options) -> TensorSpec:
    """Shorthand for ``TensorSpec(tuple(shape), domain, **options)``."""
    return TensorSpec(tuple(shape), domain, **options)


def index(shape, high: int, values=None) -> TensorSpec:
    """An int64 index tensor with entries in ``[0, high)`` (or the given values)."""
    return TensorSpec(tuple(shape), kind="index", high=high, values=values)


def mask(shape, values=None) -> TensorSpec:
    """A bool mask tensor (random, or the given values)."""
    return TensorSpec(tuple(shape), kind="mask", values=values)


def materialize(value, rng: np.random.Generator, dtype, requires_grad: bool):
    """``value`` with every ``TensorSpec`` in it (lists, tuples, dicts) made into a tensor."""
    # a named tuple stays one value, as it always has: no sample puts specs in one
    return tree_map(lambda leaf: leaf.make(rng, dtype, requires_grad)
                    if isinstance(leaf, TensorSpec) else leaf, value, is_leaf=_is_namedtuple)


def _is_namedtuple(value) -> bool:
    return isinstance(value, tuple) and hasattr(value, "_fields")


# Structured matrices (transforms on a drawn array of shape (*batch, m, n)).

def _eye_like(a: np.ndarray) -> np.ndarray:
    return np.broadcast_to(np.eye(a.shape[-1], dtype=a.dtype), a.shape)


def _mH(a: np.ndarray) -> np.ndarray:
    return np.conj(np.swapaxes(a, -1, -2))


def matrix(m: int, n: int, batch: tuple = (), domain: Domain = REAL, **options) -> TensorSpec:
    """A general (*batch, m, n) matrix with entries drawn from ``domain``."""
    return TensorSpec((*batch, m, n), domain, **options)


def well_conditioned(n: int, batch: tuple = (), **options) -> TensorSpec:
    """A square matrix ``A + n I``: diagonally dominant, so invertible and well conditioned."""
    return TensorSpec((*batch, n, n), REAL, transform=lambda a: a + n * _eye_like(a), **options)


def spd(n: int, batch: tuple = (), **options) -> TensorSpec:
    """A symmetric (Hermitian) positive definite matrix ``A A^H + I``."""
    return TensorSpec((*batch, n, n), REAL, transform=lambda a: a @ _mH(a) + _eye_like(a),
                      **options)


def hermitian(n: int, batch: tuple = (), **options) -> TensorSpec:
    """A symmetric (Hermitian) matrix ``(A + A^H) / 2``."""
    return TensorSpec((*batch, n, n), REAL, transform=lambda a: (a + _mH(a)) / 2, **options)


def distinct_eigenvalues(n: int, batch: tuple = (), gap: float = 1.0, **options) -> TensorSpec:
    """A Hermitian matrix whose eigenvalues are spaced at least ``gap`` apart
    (eigenvector derivatives blow up at repeated eigenvalues)."""
    def build(a):
        q, _ = np.linalg.qr(a)
        eig = np.arange(1, n + 1, dtype=float) * gap
        return (q * eig) @ _mH(q)
    return TensorSpec((*batch, n, n), REAL, transform=build, **options)


def full_rank(m: int, n: int, batch: tuple = (), **options) -> TensorSpec:
    """An (m, n) matrix of full rank with singular values in about [1, 3], all distinct."""
    def build(a):
        k = min(m, n)
        u, _, vh = np.linalg.svd(a, full_matrices=False)
        s = np.linspace(1.0, 3.0, k) if k > 1 else np.ones(1)
        return (u * s) @ vh
    return TensorSpec((*batch, m, n), REAL, transform=build, **options)


# Generators for the common families; each returns a sample function.

def unary(domain: Domain = REAL, shapes=UNARY_SHAPES, **kwargs) -> Callable:
    """Samples of ``op(x, **kwargs)`` for each shape in ``shapes``."""

    def sample_func(opinfo, dtype):
        for shape in shapes:
            yield SampleInput(make(shape, domain), kwargs=dict(kwargs), name=f"shape {shape}")
    return sample_func


def binary(domains=(REAL, REAL), pairs=BROADCAST_PAIRS, **kwargs) -> Callable:
    """Samples of ``op(x, y, **kwargs)`` over the broadcasting ``pairs``."""

    def sample_func(opinfo, dtype):
        for a, b in pairs:
            yield SampleInput(make(a, domains[0]), args=(make(b, domains[1]),),
                              kwargs=dict(kwargs), name=f"shapes {a} {b}")
    return sample_func


def fixed(*samples) -> Callable:
    """A sample function yielding the given ``SampleInput``s (of specs) as they are."""
    def sample_func(opinfo, dtype):
        yield from samples
    return sample_func
