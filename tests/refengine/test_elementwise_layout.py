"""The layout (strides) of elementwise results is torch's (refengine/ops/layout.py).

torch is the independent source: each operand is built the same way in both
engines (a tensor of some shape, narrowed, permuted, expanded), the same op
is applied, and the strides of the two results are compared. Strides of dims
of size 1 address nothing and are left out: refengine's common case (every
operand C-contiguous) keeps NumPy's C-ordered result, whose size-1 dims can
have other strides than torch's (docs/differences.md).
"""
from __future__ import annotations

import random

import numpy as np
import pytest

import adcheck.refengine as E

torch = pytest.importorskip("torch", reason="torch is not installed: it is the reference here")


def _build(lib, recipe, dtype="float64"):
    """A tensor made as ``recipe`` says: (base shape, narrows, permutation, expand)."""
    shape, narrows, perm, expand = recipe
    data = np.arange(int(np.prod(shape)), dtype=float).reshape(shape) * 0.1 + 0.3
    t = torch.tensor(data, dtype=getattr(torch, dtype)) if lib is torch else \
        E.tensor(data, dtype=getattr(E, dtype))
    for dim, start, length in narrows:
        t = t.narrow(dim, start, length)
    if perm is not None:
        t = t.permute(*perm)
    return t.expand(*expand) if expand is not None else t


def _strides(t) -> tuple:
    return tuple((st if n > 1 else None) for st, n in zip(t.stride(), t.shape))


def _agree(f, *recipes, dtypes=None):
    dtypes = dtypes or ["float64"] * len(recipes)
    want = f(torch, *[_build(torch, r, d) for r, d in zip(recipes, dtypes)])
    got = f(E, *[_build(E, r, d) for r, d in zip(recipes, dtypes)])
    assert tuple(got.shape) == tuple(want.shape)
    assert _strides(got) == _strides(want), (got.stride(), want.stride())
    return got


C23 = ((2, 3), (), None, None)                   # contiguous 2 x 3
T23 = ((3, 2), (), (1, 0), None)                 # transposed, dense
N22 = ((2, 3), ((1, 0, 2),), None, None)         # a narrow: not dense
NT22 = ((2, 3), ((1, 1, 2),), (1, 0), None)      # a narrow, transposed
P423 = ((2, 3, 4), (), (2, 0, 1), None)          # a permuted 3-d tensor
PN = ((2, 3, 5), ((2, 1, 4),), (2, 0, 1), None)  # permuted and narrowed
C423 = ((4, 2, 3), (), None, None)
ROW3 = ((3,), (), None, None)                    # broadcast along the rows
EXP = ((4, 1, 3), (), None, (4, 2, 3))           # expanded (stride 0)
PN1 = ((2, 1, 5), ((2, 1, 4),), (2, 0, 1), None)

BINARY = [lambda L, a, b: a * b, lambda L, a, b: a - b, lambda L, a, b: L.atan2(a, b),
          lambda L, a, b: L.maximum(a, b), lambda L, a, b: a == b, lambda L, a, b: a / b,
          lambda L, a, b: L.xlogy(a, b), lambda L, a, b: L.lerp(a, b, 0.25),
          lambda L, a, b: L.where(a > b, a, b)]


@pytest.mark.parametrize("recipes", [
    (T23, C23), (C23, T23), (N22, NT22), (NT22, N22), (T23, T23), (P423, C423), (C423, P423),
    (PN, C423), (C423, PN), (P423, ROW3), (ROW3, P423), (EXP, P423),
    (PN, EXP), (EXP, PN), (PN1, PN), (P423, PN)],
    ids=lambda r: "-".join(str(x[0]) for x in r))
@pytest.mark.parametrize("f", BINARY, ids=["mul", "sub", "atan2", "maximum", "eq", "div",
                                           "xlogy", "lerp", "where"])
def test_binary_results_are_laid_out_as_torchs(f, recipes):
    _agree(f, *recipes)


@pytest.mark.parametrize("f", [lambda L, a: L.exp(a), lambda L, a: -a, lambda L, a: a * 2,
                               lambda L, a: 1 - a, lambda L, a: a ** 2, lambda L, a: L.sgn(a),
                               lambda L, a: L.clamp(a, 0.5, 1.0), lambda L, a: L.isnan(a),
                               lambda L, a: L.nn.functional.relu(a)],
                         ids=["exp", "neg", "mul2", "rsub", "pow", "sgn", "clamp", "isnan", "relu"])
@pytest.mark.parametrize("recipe", [T23, NT22, P423, PN, EXP, PN1], ids=str)
def test_unary_results_are_laid_out_as_torchs(f, recipe):
    _agree(f, recipe)


@pytest.mark.parametrize("f", [lambda L, a, b, c: L.where(a > 0.5, b, c),
                               lambda L, a, b, c: L.lerp(a, b, c),
                               lambda L, a, b, c: L.clamp(a, b, c)], ids=["where", "lerp", "clamp"])
@pytest.mark.parametrize("recipes", [(PN, C423, P423), (C423, PN, P423), (ROW3, EXP, PN),
                                     (P423, PN, C423)], ids=str)
def test_ternary_results_are_laid_out_as_torchs(f, recipes):
    _agree(f, *recipes)


def test_an_operand_cast_to_the_common_dtype_keeps_its_order_of_dims():
    # torch copies it with `to` first, which keeps the order of its dims, gaps or not
    _agree(lambda L, a, b: a * b, PN, C423, dtypes=["float32", "float64"])
    _agree(lambda L, a, b: a * b, P423, C423, dtypes=["float32", "float64"])
    _agree(lambda L, a: L.exp(a), PN, dtypes=["int64"])


def test_the_seed_61_program_refuses_view_in_both():
    for lib in (torch, E):
        b = _build(lib, C23)
        v3 = b.narrow(1, 0, 2)
        r = (lib.ones(2, 2, dtype=lib.float64) - v3).t() * v3
        assert r.stride() == (1, 2)
        with pytest.raises(RuntimeError, match="view size is not compatible"):
            r.view(-1)


@pytest.mark.parametrize("f", [lambda L, a: a.clone(), lambda L, a: a.to(L.float32),
                               lambda L, a: a.clone().contiguous()], ids=["clone", "to", "contiguous"])
@pytest.mark.parametrize("recipe", [T23, NT22, P423, PN, EXP, PN1, C423], ids=str)
def test_preserve_format_copies_keep_the_order_of_dims(f, recipe):
    # a dense input's strides, or one with gaps (or repeats) made dense in its order of dims
    _agree(f, recipe)


@pytest.mark.parametrize("f", [
    lambda L, a: a.sum(1), lambda L, a: a.mean(1, keepdim=True), lambda L, a: a.amax(0),
    lambda L, a: a.var(2), lambda L, a: a.std(0, keepdim=True), lambda L, a: L.logsumexp(a, 1),
    lambda L, a: a.norm(dim=1), lambda L, a: a.prod(2), lambda L, a: a.max(1)[0],
    lambda L, a: a.max(1, keepdim=True)[1], lambda L, a: L.cumsum(a, 1), lambda L, a: L.cumprod(a, 0),
    lambda L, a: L.softmax(a, 1), lambda L, a: L.log_softmax(a, 0)],
    ids=["sum", "mean", "amax", "var", "std", "logsumexp", "norm", "prod", "max", "argmax", "cumsum",
         "cumprod", "softmax", "log_softmax"])
@pytest.mark.parametrize("recipe", [P423, PN], ids=str)
def test_reductions_scans_and_softmax_are_in_c_order(f, recipe):
    assert _agree(f, recipe).is_contiguous()


@pytest.mark.parametrize("f", BINARY[:4] + BINARY[5:] + [lambda L, a, b: L.maximum(a, b) ** 2],
                         ids=["mul", "sub", "atan2", "maximum", "div", "xlogy", "lerp", "where",
                              "maximum_squared"])
@pytest.mark.parametrize("recipes", [(NT22, N22), (N22, NT22), (PN, C423), (P423, ROW3)], ids=str)
@pytest.mark.parametrize("which", [0, 1], ids=["first", "second"])
def test_gradients_of_elementwise_ops_are_laid_out_as_torchs(f, recipes, which):
    # backward formulas are ops too: where's is where(condition, grad, 0), laid out as
    # the condition; the sum over a broadcast dim is in C order
    def gradient(L, a, b):
        a, b = a.detach().requires_grad_(), b.detach().requires_grad_()
        out = f(L, a, b)
        return L.autograd.grad(out, (a, b), L.ones(*out.shape, dtype=L.float64))[which]
    _agree(gradient, *recipes)


def test_in_place_ops_keep_selfs_layout():
    for lib in (torch, E):
        a = _build(lib, NT22)
        a.mul_(_build(lib, N22))
        assert a.stride() == (1, 3)


def _random_recipe(rng: random.Random, shape: list) -> tuple:
    perm = list(range(len(shape)))
    rng.shuffle(perm)
    base = [shape[p] + (rng.random() < 0.3) for p in perm]
    narrows = tuple((d, rng.randrange(b - shape[p] + 1), shape[p])
                    for d, (b, p) in enumerate(zip(base, perm)) if b != shape[p])
    return tuple(base), narrows, tuple(perm.index(i) for i in range(len(shape))), None


def test_random_layouts_and_broadcasts_agree_with_torch():
    """Many operand layouts at once, drawn at random with a fixed seed (2 to 4 dims,
    sizes 1 to 4, operands broadcast by dropping leading dims or setting some to 1)."""
    rng = random.Random(33)
    ops = BINARY + [lambda L, a, b: L.hypot(a, b) + a, lambda L, a, b: L.fmod(a, b)]
    for _ in range(300):
        shape = [rng.choice([1, 2, 3, 4]) for _ in range(rng.choice([2, 3, 4]))]
        recipes = []
        for _ in range(2):
            s = list(shape)
            if rng.random() < 0.4:
                s = [1 if rng.random() < 0.3 else n for n in s[rng.randrange(len(s)):]]
            recipes.append(_random_recipe(rng, s))
        _agree(rng.choice(ops), *recipes)
