"""The torch adapter's batched jvps of a first derivative give every other input
that requires grad a zero tangent (``TorchEngine.batched_jvp``): the same
tangents as with only the moving input dual, checked against a plain loop of
torch forward-mode jvps (one tangent at a time, the others without one) and
against central differences of the first derivative written here; where a zero
tangent meets an infinite value (``0 * inf``) the plain way is taken."""
from __future__ import annotations

import numpy as np
import pytest

from adcheck.gradcheck.core.secondorder import first_derivative

torch = pytest.importorskip("torch")
from adcheck.gradcheck.engines.torch import TorchEngine  # noqa: E402

fwAD = torch.autograd.forward_ad


def _plain_jvp(func, args, in_idx, tangent):
    """One jvp, only ``args[in_idx]`` dual (what the adapter did before)."""
    with fwAD.dual_level():
        moved = list(args)
        moved[in_idx] = fwAD.make_dual(args[in_idx], tangent)
        outs = func(*moved)
        return [torch.zeros_like(o) if fwAD.unpack_dual(o).tangent is None
                else fwAD.unpack_dual(o).tangent.clone() for o in outs]


def _first(f, shapes, dtype=torch.float64, seed=0):
    rng = np.random.default_rng(seed)
    inputs = tuple(torch.tensor(rng.uniform(0.5, 1.5, s), dtype=dtype, requires_grad=True)
                   for s in shapes)
    return first_derivative(f, inputs, None, rng)


@pytest.mark.parametrize("f, shapes", [
    (torch.atan2, [(3, 4), (3, 4)]),
    (lambda a, b: (a * b * a).sum(1), [(3, 4), (3, 4)]),
    (lambda x, w: torch.tanh(x @ w), [(2, 3), (3, 2)]),
])
def test_batched_jvps_of_a_first_derivative_are_the_plain_ones(f, shapes):
    func, args = _first(f, shapes)
    E = TorchEngine()
    for in_idx in range(len(args)):
        tangents = torch.tensor(np.random.default_rng(in_idx).normal(
            size=(4, *args[in_idx].shape)))
        batched = E.batched_jvp(func, args, in_idx, tangents)
        assert not E._marked(func)        # the zero tangents stood
        for k in range(len(tangents)):
            plain = _plain_jvp(func, args, in_idx, tangents[k])
            for got, want in zip(batched, plain):
                assert torch.equal(got[k], want)


def test_they_are_the_derivative_of_the_first_derivative():
    func, args = _first(torch.atan2, [(2, 3), (2, 3)])
    tangent = torch.tensor(np.random.default_rng(1).normal(size=(1, 2, 3)))
    got = TorchEngine().batched_jvp(func, args, 0, tangent)
    h = 1e-6
    with torch.enable_grad():
        up = func(*[a.detach().requires_grad_() + (h * tangent[0] if i == 0 else 0)
                    for i, a in enumerate(args)])
        down = func(*[a.detach().requires_grad_() - (h * tangent[0] if i == 0 else 0)
                      for i, a in enumerate(args)])
    for g, u, d in zip(got, up, down):
        assert torch.allclose(g[0], (u - d).detach() / (2 * h), rtol=1e-6, atol=1e-8)


def test_a_zero_tangent_times_an_infinity_takes_the_plain_way():
    # grad_x of x * y is v * y; with y infinite, its tangent along x is zero, but a
    # zero tangent on v (or y) adds 0 * inf = NaN: the adapter must not return it
    def f(x, y):
        return x * y
    x = torch.tensor([1.0, 2.0], dtype=torch.float64, requires_grad=True)
    y = torch.tensor([float("inf"), 3.0], dtype=torch.float64, requires_grad=True)
    func, args = first_derivative(f, (x, y), None, np.random.default_rng(0))
    E = TorchEngine()
    tangents = torch.tensor([[1.0, 0.5], [-2.0, 1.0]], dtype=torch.float64)
    batched = E.batched_jvp(func, args, 0, tangents)
    assert E._marked(func)                # found out, and remembered
    for k in range(2):
        for got, want in zip(batched, _plain_jvp(func, args, 0, tangents[k])):
            assert torch.equal(got[k], want)
    assert torch.isfinite(batched[0]).all()


def test_to_numpy_resolves_views_and_narrow_dtypes():
    z = torch.tensor([1 + 2j, -3 - 4j], dtype=torch.complex128)
    assert np.array_equal(TorchEngine().to_numpy(z.conj()), np.array([1 - 2j, -3 + 4j]))
    assert np.array_equal(TorchEngine().to_numpy(torch._neg_view(z)), np.array([-1 - 2j, 3 + 4j]))
    b = torch.tensor([1.5, -2.25], dtype=torch.bfloat16, requires_grad=True)
    got = TorchEngine().to_numpy(b * 1)
    assert got.dtype == np.float32 and np.array_equal(got, np.array([1.5, -2.25], np.float32))
