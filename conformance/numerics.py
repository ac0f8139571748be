"""Numerical edge cases of derivative formulas, as torch 2.13 computes them:
overwritten tensors, the 0-"norm", degenerate variances, a number's log."""
from __future__ import annotations

import math
import warnings

import numpy as np

from adcheck.conformance.case import TORCH_BEHAVIOUR, case


def _bits(t) -> str:
    return np.asarray(t.detach().tolist(), dtype=np.float64 if "64" in str(t.dtype)
                      else np.float32).tobytes().hex()


@case("zero_, fill_ and copy_ give the overwritten tensor a gradient of zeros (not None), "
      "and its tangent is zero; their nodes are ZeroBackward0, FillBackward2 (a number), "
      "FillBackward3 (a tensor) and CopyBackwards", source=TORCH_BEHAVIOUR)
def overwriting_ops_give_zero_gradients(E):
    x = E.tensor([1.0, math.inf, 3.0], requires_grad=True)
    value = E.tensor(3.0, requires_grad=True)
    for write, node in ((lambda y: y.zero_(), "ZeroBackward0"),
                        (lambda y: y.fill_(2.0), "FillBackward2"),
                        (lambda y: y.fill_(value), "FillBackward3"),
                        (lambda y: y.copy_(E.ones(3)), "CopyBackwards")):
        y = x * 2
        write(y)
        assert y.grad_fn.name().endswith(node)     # torch: torch::autograd::CopyBackwards
        (g,) = E.autograd.grad(y.sum(), x)
        assert g.tolist() == [0.0, 0.0, 0.0], node
    y = x * 2
    y.fill_(value)
    assert E.autograd.grad(y.sum(), value)[0].item() == 3.0
    fwAD = E.autograd.forward_ad
    with fwAD.dual_level():
        d = fwAD.make_dual(E.ones(3), E.tensor([1.0, math.inf, 2.0]))
        for write in (lambda z: z.zero_(), lambda z: z.fill_(2.0)):
            z = d * 1
            write(z)
            assert fwAD.unpack_dual(z).tangent.tolist() == [0.0, 0.0, 0.0]


@case("vector_norm(ord=0) (a count of non-zeros) has no gradient: backward leaves the input "
      "without one (None, or zeros when materialized), also at inf and nan entries; its "
      "tangent is 0", source=TORCH_BEHAVIOUR)
def zero_norm_has_no_gradient(E):
    for values in ([math.inf, 1.0, 0.0], [-math.inf, 2.0], [math.nan, 1.0]):
        t = E.tensor(values, requires_grad=True)
        n = E.linalg.vector_norm(t, ord=0)
        assert n.requires_grad and n.item() == 2.0
        assert E.autograd.grad(n, t, allow_unused=True) == (None,)
        (zeros,) = E.autograd.grad(E.linalg.vector_norm(t, ord=0), t, materialize_grads=True)
        assert zeros.tolist() == [0.0] * len(values)
        E.linalg.vector_norm(t * 1, ord=0).backward()
        assert t.grad is None
    fwAD = E.autograd.forward_ad
    with fwAD.dual_level():
        d = fwAD.make_dual(E.tensor([math.inf, 1.0]), E.ones(2))
        assert fwAD.unpack_dual(E.linalg.vector_norm(d, ord=0)).tangent.item() == 0.0


def _degenerate(E, fn, values, **kw):
    t = E.tensor(values, dtype=E.float64, requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")       # both warn: degrees of freedom <= 0
        r = getattr(E, fn)(t, **kw)
        (g,) = E.autograd.grad(r.sum(), t)
        fwAD = E.autograd.forward_ad
        with fwAD.dual_level():
            tangent = E.zeros_like(t)
            tangent.view(-1)[0] = 1.0
            tan = fwAD.unpack_dual(getattr(E, fn)(fwAD.make_dual(t.detach(), tangent),
                                                  **kw)).tangent
    return r.tolist(), g.tolist(), tan.tolist()


def _same(a, b) -> bool:
    """Equal, with nan equal to nan, through nested lists."""
    if isinstance(a, list):
        return isinstance(b, list) and len(a) == len(b) and all(map(_same, a, b))
    return (math.isnan(a) and math.isnan(b)) or a == b


@case("var and std where the count does not exceed the correction divide by zero as "
      "torch does: inf, or nan where every entry is the mean; their gradients and tangents "
      "are inf or nan, never an error", source=TORCH_BEHAVIOUR)
def degenerate_variance_gives_inf_or_nan(E):
    inf, nan = math.inf, math.nan
    expected = {  # (fn, values, kwargs) -> (value, gradient, tangent along e0)
        ("var", (2.0,), ()): (nan, [nan], nan),
        ("var", (1.0, 2.0, 3.0), (("correction", 3),)): (inf, [inf, nan, inf], nan),
        ("var", (1.0, 2.0, 4.0), (("correction", 4),)): (inf, [inf, inf, inf], nan),
        ("var", (1.0, 2.0, 4.0), (("correction", 3), ("dim", 0))): (inf, [-inf, -inf, inf], nan),
        ("var", (1.0, 2.0, 4.0), (("correction", 4), ("dim", 0))):
            (inf, [8.0 / 3.0, 2.0 / 3.0, -10.0 / 3.0], 8.0 / 3.0),
        ("std", (2.0,), ()): (nan, [nan], nan),
        ("std", (1.0, 2.0, 3.0), (("correction", 3),)): (inf, [nan, nan, nan], nan),
        ("std", (1.0, 2.0, 4.0), (("correction", 4), ("dim", 0))): (inf, [0.0, 0.0, -0.0], 0.0),
    }
    for (fn, values, kw), want in expected.items():
        got = _degenerate(E, fn, list(values), **dict(kw))
        assert _same(list(got), list(want)) or _close(got, want), (fn, values, kw, got)


def _close(got, want) -> bool:
    """Finite entries to 1e-12, the rest exactly (inf, -inf, nan)."""
    def flat(v):
        return v if isinstance(v, list) else [v]
    pairs = [(g, w) for a, b in zip(got, want) for g, w in zip(flat(a), flat(b))]
    return all((math.isnan(g) and math.isnan(w)) or g == w or
               (math.isfinite(w) and abs(g - w) <= 1e-12 * max(1.0, abs(w))) for g, w in pairs)


@case("the derivative of number ** x uses the float64 log of the number, cast to x's dtype: "
      "gradients and tangents of 2 ** x, 7 ** x and 0.5 ** x are bit for bit torch's",
      source=TORCH_BEHAVIOUR)
def number_base_pow_uses_the_float64_log(E):
    for dtype in (E.float32, E.float64):
        x = E.tensor([0.3, 1.7, -2.2, 5.5], dtype=dtype, requires_grad=True)
        for base in (2, 3, 7, 10, 0.5):
            y = base ** x
            assert y.grad_fn.name() == "PowBackward2"
            (g,) = E.autograd.grad(y.sum(), x)
            log = np.asarray(math.log(base), dtype=np.float64 if dtype is E.float64
                             else np.float32)
            result = np.asarray(y.detach().tolist(), dtype=log.dtype)
            assert _bits(g) == (result * log).tobytes().hex(), (dtype, base)
            fwAD = E.autograd.forward_ad
            with fwAD.dual_level():
                d = fwAD.make_dual(x.detach(), E.ones_like(x))
                assert _bits(fwAD.unpack_dual(base ** d).tangent) == _bits(g), (dtype, base)
