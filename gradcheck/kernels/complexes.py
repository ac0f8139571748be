"""Complex kernels: judged as the real function of their real and imaginary parts.

A complex64 kernel and its complex128 reference are wrapped (``realified``)
into functions whose complex inputs and outputs are real tensors with a
trailing dimension of 2 (``torch.view_as_real``): the kernel then runs on
``torch.view_as_complex`` of its real inputs, as before. The Jacobian of the
real and imaginary parts is the real form of the conjugate Wirtinger
derivative torch's complex autograd computes (both hold the same numbers;
torch.autograd.gradcheck compares this real form for complex functions too),
so a conjugate missing in a hand-written backward
shows as a wrong block entry, and the rounding allowance is the one of the
real parts' dtype (float32 for complex64). The report's inputs and outputs
are then those real views; its notes say so.
"""
from __future__ import annotations

import torch

from adcheck.gradcheck.kernels import device


def has_complex(inputs: tuple) -> bool:
    return any(isinstance(x, torch.Tensor) and x.is_complex() for x in inputs)


def real_inputs(inputs: tuple) -> tuple:
    """The inputs with every complex tensor as its real view (a new leaf,
    requiring grad as the complex one did)."""
    return tuple(torch.view_as_real(x.detach()).clone().requires_grad_(x.requires_grad)
                 if isinstance(x, torch.Tensor) and x.is_complex() else x for x in inputs)


def realified(func, which: frozenset):
    """``func`` taking the inputs at positions ``which`` as real views (made
    complex again for it) and returning its complex outputs as real views."""
    def real(*args):
        args = tuple(torch.view_as_complex(a) if k in which else a
                     for k, a in enumerate(args))
        return tuple(torch.view_as_real(y) if isinstance(y, torch.Tensor) and y.is_complex()
                     else y for y in device.run(func, args))
    real.__name__ = getattr(func, "__name__", type(func).__name__)
    return real


def prepared(kernel, against, inputs: tuple) -> tuple:
    """``(kernel, against, inputs, notes)`` ready for the real machinery: both
    functions realified (complex outputs as real views), complex inputs as
    real views; ``notes`` says what was done when there was anything to do."""
    which = frozenset(k for k, x in enumerate(inputs)
                      if isinstance(x, torch.Tensor) and x.is_complex())
    if not which:
        return realified(kernel, which), realified(against, which), inputs, []
    kinds = sorted({str(inputs[k].dtype).removeprefix("torch.") for k in which})
    note = (f"complex inputs ({', '.join(kinds)}) and outputs are judged as their real and "
            "imaginary parts (torch.view_as_real, a trailing dimension of 2): the real form "
            "of the conjugate Wirtinger derivative, in the real parts' dtype")
    return (realified(kernel, which), realified(against, which), real_inputs(inputs),
            [note])


#: what a transposed 2x2 block means when the inputs were complex
CONJUGATE = ("; with complex inputs a transposed 2x2 block of real and imaginary parts is a "
             "conjugate: a .conj() missing or extra in the backward")


def annotate(report) -> None:
    """The diagnoses of a complex kernel's failures in complex terms."""
    for result in report.failures:
        if result.diagnosis and "transpose" in result.diagnosis:
            result.diagnosis += CONJUGATE
