"""Convolution's windows (``ops/conv.py``: im2col as one strided copy, col2im
summing with the leading dims last) and the batching rule's physical calls
(``batching/runtime.py``: the dispatcher skips its search for batched
arguments when none is left), each against torch on the same inputs."""
from __future__ import annotations

import numpy as np
import pytest

import adcheck.refengine as E
from adcheck.refengine.batching import record_fallbacks

RNG = np.random.default_rng(34)

CASES = [   # (input shape, weight shape, options)
    ((2, 3, 6, 6), (4, 3, 3, 3), {}),
    ((1, 2, 7, 5), (3, 2, 2, 3), {"stride": 2, "padding": 1}),
    ((2, 2, 7, 7), (2, 2, 3, 2), {"dilation": 2, "padding": (2, 1)}),
    ((1, 4, 6, 5), (4, 2, 2, 2), {"groups": 2, "stride": (2, 1)}),
    ((2, 2, 9), (3, 2, 3), {"stride": 2, "dilation": 2, "padding": 2}),
]


def _conv(M, x_shape):
    return M.nn.functional.conv1d if len(x_shape) == 3 else M.nn.functional.conv2d


def _inputs(x_shape, w_shape, dtype=np.float64):
    x, w = RNG.standard_normal(x_shape), RNG.standard_normal(w_shape)
    if dtype == np.complex128:
        x = x + 1j * RNG.standard_normal(x_shape)
        w = w + 1j * RNG.standard_normal(w_shape)
    return x, w, RNG.standard_normal(w_shape[0]).astype(dtype)


@pytest.mark.parametrize("x_shape, w_shape, options", CASES)
@pytest.mark.parametrize("dtype", [np.float64, np.complex128])
def test_conv_and_its_gradients_match_torchs(torch, x_shape, w_shape, options, dtype):
    x, w, b = _inputs(x_shape, w_shape, dtype)
    found = {}
    for M in (E, torch):
        xt, wt, bt = (M.tensor(a, requires_grad=True) for a in (x, w, b))
        out = _conv(M, x_shape)(xt, wt, bt, **options)
        g = M.tensor(RNG.standard_normal(tuple(out.shape)).astype(dtype)) if M is E else \
            torch.tensor(found[E][-1])
        grads = M.autograd.grad(out, (xt, wt, bt), g)
        found[M] = [out.detach().numpy(), *(t.numpy() for t in grads), g.numpy()]
    for ours, theirs in zip(found[E], found[torch]):
        np.testing.assert_allclose(ours, theirs, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("x_shape, w_shape, options", CASES[:3])
def test_conv_under_vmap_matches_torchs(torch, x_shape, w_shape, options):
    xs = RNG.standard_normal((3,) + x_shape)
    ws = RNG.standard_normal((3,) + w_shape)
    for in_dims in ((0, None), (None, 0), (0, 0)):
        args = (xs if in_dims[0] == 0 else xs[0], ws if in_dims[1] == 0 else ws[0])
        results = [M.vmap(lambda x, w, M=M: _conv(M, x_shape)(x, w, **options),
                          in_dims=in_dims)(*(M.tensor(a) for a in args)).numpy()
                   for M in (E, torch)]
        np.testing.assert_allclose(results[0], results[1], rtol=1e-12, atol=1e-12)


def test_nested_vmap_elementwise_matches_torchs(torch):
    # the inner level's physical tensors are batched at the outer level: the
    # rule's physical call must still go through the outer level's rule
    a = RNG.standard_normal((2, 3, 4))
    b = RNG.standard_normal((3, 4))
    c = RNG.standard_normal(4)

    def f(M):
        def inner(x, y):
            return M.exp(x) * y + M.tensor(c) - x.reshape(2, 2).sum()
        return M.vmap(M.vmap(inner, in_dims=(0, 0)), in_dims=(0, None))

    with record_fallbacks() as seen:
        ours = f(E)(E.tensor(a), E.tensor(b))
    assert seen == {}   # every op by its rule (a physical call refused would loop)
    theirs = f(torch)(torch.tensor(a), torch.tensor(b))
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-14, atol=1e-14)
