"""A real view (``.real``, ``.imag``, ``view_as_real``) of a complex base,
expanded, whose base is then written in place: the regenerated view's
backward adds each shared element's gradient into the one part of the base
it reads, as torch does (refengine raised the in-place overlap error; found
by the differential fuzzer, seed 90, program 20540). torch 2.13 is the
independent source: first and second derivatives."""
from __future__ import annotations

import numpy as np
import pytest

import adcheck.refengine as E

torch = pytest.importorskip("torch", reason="torch is the reference these gradients are compared with")

DATA = [complex(0.5, 0.37), complex(0.0, -1.0), complex(0.5, -1.592)]


def _gradients(lib, part, square):
    v0 = lib.tensor(DATA, dtype=lib.complex128, requires_grad=True)
    v1 = v0 * 1
    view = lib.view_as_real(v1) if part == "view_as_real" else getattr(v1, part)
    expanded = view.unsqueeze(0).expand(2, *view.shape)
    v1.neg_()                                  # the view's node is regenerated from here
    out = lib.abs(expanded) * (expanded * expanded if square else 1)
    g, = lib.autograd.grad(out.sum(), [v0], create_graph=True)
    (g.abs() ** 2).sum().backward()
    return np.asarray(g.detach().numpy()), np.asarray(v0.grad.numpy())


@pytest.mark.parametrize("square", [False, True])
@pytest.mark.parametrize("part", ["real", "imag", "view_as_real"])
def test_an_expanded_real_view_of_a_rewritten_complex_base_differentiates_as_torch(part, square):
    ours, theirs = _gradients(E, part, square), _gradients(torch, part, square)
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)
