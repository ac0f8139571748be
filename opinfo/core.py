"""``OpInfo``: what to check about one operator, as data.

An ``OpInfo`` says how to call an op (``op(sample.input, *sample.args,
**sample.kwargs)``), which inputs to feed it (a sample function of specs,
see ``opinfo.samples``), which dtypes and autograd modes it supports, its
references (NumPy, mpmath, torch), its tolerances per dtype and its known
failures, each with a reason. It knows nothing about Jacobians.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass, field, replace
from typing import Callable, Iterable

import numpy as np

from adcheck.refengine import dtypes as _dt

from adcheck.gradcheck.core.modes import CAPABILITIES, KNOWN_AS

from .sample_input import SampleInput
from .samples import materialize

#: the checks a known failure can name: the values, each check's known-failure name,
#: and the same against torch's own formulas (``torch_``)
CHECKS = ("values", *KNOWN_AS) + tuple(f"torch_{name}" for name in ("values", *KNOWN_AS))


@dataclass(frozen=True)
class Tolerance:
    """``atol`` and ``rtol`` for comparing an analytical derivative with a numerical one
    (``|a - n| <= atol + rtol * |n|``); ``reason`` is required for an override."""

    atol: float
    rtol: float
    reason: str = ""


#: default tolerances per dtype (gradients against central differences)
DEFAULT_TOLERANCES = {
    _dt.float32: Tolerance(1e-2, 1e-2),
    _dt.float64: Tolerance(1e-5, 1e-3),
    _dt.complex64: Tolerance(1e-2, 1e-2),
    _dt.complex128: Tolerance(1e-5, 1e-3),
}


@dataclass(frozen=True)
class KnownFailure:
    """A check that fails for a known reason: ``check`` (one of ``CHECKS``),
    ``reason`` (required), and which samples and dtypes (``None``: all)."""

    check: str
    reason: str
    samples: tuple | None = None     # sample indices or names
    dtypes: tuple | None = None

    def __post_init__(self):
        if self.check not in CHECKS:
            raise ValueError(f"known failure: check {self.check!r} is not one of {CHECKS}")
        if not self.reason.strip():
            raise ValueError(f"known failure of {self.check!r}: a reason is required")

    def matches(self, check: str, dtype, sample: SampleInput | None = None) -> bool:
        """Whether this entry covers ``check`` for ``dtype`` and ``sample``."""
        if check != self.check or (self.dtypes is not None and dtype not in self.dtypes):
            return False
        if self.samples is None or sample is None:
            return True
        return sample.index in self.samples or sample.name in self.samples


def seed_for(name: str, index: int, kind: str = "sample") -> int:
    """The seed of sample ``index`` of op ``name``: stable across runs and platforms."""
    digest = hashlib.sha256(f"{name}:{kind}:{index}".encode()).digest()
    return int.from_bytes(digest[:8], "little")


FLOATING = (_dt.float32, _dt.float64)
FLOATING_AND_COMPLEX = (_dt.float32, _dt.float64, _dt.complex64, _dt.complex128)


@dataclass(eq=False)
class OpInfo:
    """Everything adcheck needs to know to check one operator.

    Calling convention: ``op(sample.input, *sample.args, **sample.kwargs)``.

    - ``torch_name``: the same op as a dotted path below ``torch``
      (``"sin"``, ``"linalg.det"``, ``"Tensor.view"``) or ``None``.
    - ``ref``: a NumPy reference called like ``op`` with NumPy arrays in place
      of the tensors, or ``None``.
    - ``mpmath_ref``: an arbitrary-precision reference, or ``None``. It is
      called like ``op``, with every tensor of the sample converted to a NumPy
      object array of ``mpmath.mpf`` (real dtypes) or ``mpmath.mpc`` (complex
      dtypes) of the same shape, and the sample's other args and kwargs
      unchanged. It returns an object array of mpmath numbers (or a tuple of
      them, one per output) and must compute with mpmath functions only, at
      the working precision (see ``gradcheck.numerics.reference``).
    - ``sample_func(opinfo, dtype)``: yields ``SampleInput``s whose tensors
      are ``opinfo.samples.TensorSpec``s; ``special_func`` likewise yields
      samples at non-differentiable points, each with its ``rule``.
    - ``tolerances``: per-dtype overrides of ``DEFAULT_TOLERANCES``; each
      ``Tolerance`` must carry a reason.
    - ``known_failures``: ``KnownFailure`` entries, each with a reason.
    - ``torch_fn``: when ``op`` is a composite around the refengine op (for example
      symmetrising the input of ``cholesky``), the same composite written for torch,
      called like ``op`` (import torch inside it); torch comparisons use it instead
      of the op named by ``torch_name``.

    A sample's ``output_process_fn_grad`` is applied to refengine and to torch
    outputs alike, so it must use tensor methods and operators only.
    """

    name: str
    op: Callable
    family: str = ""
    torch_name: str | None = None
    ref: Callable | None = None
    mpmath_ref: Callable | None = None
    dtypes: tuple = FLOATING
    sample_func: Callable | None = None
    special_func: Callable | None = None
    supports_autograd: bool = True
    supports_forward_ad: bool = True
    #: a second-order mode is claimed for every dtype (True), none (False), or the
    #: dtypes of a tuple (an op whose first derivative is a constant zero with no
    #: graph in the others, as in torch: there is no second derivative to check)
    supports_gradgrad: bool | tuple = True
    supports_fwgrad_bwgrad: bool | tuple = True
    supports_complex_autograd: bool | None = None
    tolerances: dict = field(default_factory=dict)
    known_failures: tuple = ()
    description: str = ""
    torch_fn: Callable | None = None
    #: the op this one is the in-place variant of (``Tensor.exp_`` of ``exp``): the
    #: same derivatives through other machinery, compared with that op's in a
    #: sweep that checks both (``gradcheck.core.sameas``)
    variant_of: str | None = None

    def __post_init__(self):
        if not self.name or not callable(self.op):
            raise ValueError(f"OpInfo {self.name!r}: a name and a callable op are required")
        if self.supports_complex_autograd is None:
            self.supports_complex_autograd = self.supports_autograd and any(
                d.is_complex for d in self.dtypes)
        for dtype, tol in self.tolerances.items():
            if not isinstance(tol, Tolerance) or not tol.reason.strip():
                raise ValueError(f"OpInfo {self.name!r}: the tolerance override for {dtype} "
                                 "must be a Tolerance with a reason")
        self.known_failures = tuple(self.known_failures)
        if self.sample_func is None:
            raise ValueError(f"OpInfo {self.name!r}: sample_func is required")

    # samples -------------------------------------------------------------

    def sample_inputs(self, dtype, requires_grad: bool = False,
                      rng: np.random.Generator | None = None) -> Iterable[SampleInput]:
        """The samples for ``dtype``. Without ``rng``, sample ``i`` is drawn from
        ``seed_for(name, i)``, so ``sample(i, dtype)`` rebuilds it alone."""
        return self._make(self.sample_func, "sample", dtype, requires_grad, rng)

    def special_inputs(self, dtype, requires_grad: bool = False,
                       rng: np.random.Generator | None = None) -> Iterable[SampleInput]:
        """Samples at non-differentiable points, each naming the ``rule`` that applies."""
        if self.special_func is None:
            return iter(())
        return self._make(self.special_func, "special", dtype, requires_grad, rng)

    def sample(self, index: int, dtype, requires_grad: bool = False) -> SampleInput:
        """Sample number ``index`` of ``sample_inputs(dtype)``, rebuilt on its own."""
        for i, spec in enumerate(self.sample_func(self, dtype)):
            if i == index:
                return self._materialize(spec, "sample", i, dtype, requires_grad, None)
        raise IndexError(f"{self.name}: no sample {index} for {dtype}")

    def _make(self, func, kind, dtype, requires_grad, rng):
        for i, spec in enumerate(func(self, dtype)):
            yield self._materialize(spec, kind, i, dtype, requires_grad, rng)

    def _materialize(self, spec: SampleInput, kind, i, dtype, requires_grad, rng):
        seed = seed_for(self.name, i, kind) if rng is None else None
        gen = np.random.default_rng(seed) if rng is None else rng
        made = materialize((spec.input, spec.args, spec.kwargs), gen, dtype, requires_grad)
        return replace(spec, input=made[0], args=made[1], kwargs=made[2], seed=seed, index=i)

    # references and policy -------------------------------------------------

    def __call__(self, sample: SampleInput):
        """``op(sample.input, *sample.args, **sample.kwargs)``."""
        return self.op(sample.input, *sample.args, **sample.kwargs)

    def torch_op(self):
        """The torch callable to compare with: ``torch_fn`` if given, else the op named by
        ``torch_name`` (imports torch), else ``None``."""
        if self.torch_fn is not None:
            return self.torch_fn
        if self.torch_name is None:
            return None
        import torch
        obj = torch
        for part in self.torch_name.split("."):
            obj = getattr(obj, part)
        return obj

    def tolerance(self, dtype) -> Tolerance:
        """The tolerance for ``dtype``: the override if declared, else the default."""
        if dtype in self.tolerances:
            return self.tolerances[dtype]
        return DEFAULT_TOLERANCES.get(dtype, Tolerance(1e-5, 1e-3))

    def known_failure(self, check: str, dtype, sample: SampleInput | None = None):
        """The ``KnownFailure`` covering ``check`` here, or ``None``."""
        for kf in self.known_failures:
            if kf.matches(check, dtype, sample):
                return kf
        return None

    def supports(self, mode: str, dtype=None) -> bool:
        """Whether a check mode (``reverse``, ``forward``, ``gradgrad``,
        ``fwgrad_bwgrad``) applies, for ``dtype`` when given."""
        if dtype is not None and (dtype not in self.dtypes or
                                  (dtype.is_complex and not self.supports_complex_autograd)):
            return False
        if mode not in CAPABILITIES:
            raise ValueError(f"unknown mode {mode!r}; expected one of {', '.join(CAPABILITIES)}")
        own = {"reverse": True, "forward": self.supports_forward_ad,
               "gradgrad": self.supports_gradgrad, "fwgrad_bwgrad": self.supports_fwgrad_bwgrad}
        claim = own[mode]
        if isinstance(claim, tuple):    # a mode claimed for these dtypes only
            claim = dtype is None or dtype in claim
        return self.supports_autograd and bool(claim)

    def __repr__(self) -> str:
        return f"OpInfo({self.name!r}, family={self.family!r}, torch_name={self.torch_name!r})"
