"""The lens laws of the appendix, as properties over random chains of views.

Each seed of a fixed set draws a base shape and a chain of one to four view
operations (select, narrow, strided slice, integer index, transpose,
permute, unsqueeze, squeeze, diagonal, unflatten, movedim). The
chain is run on the engine's dual tensors; the expectation comes from NumPy:
the chain is applied to an array of flat positions, which says exactly which
base elements the view reads and writes. ``get`` is taking the view,
``putback`` is an in-place write through it (``copy_``), and a tensor
without tangent counts as one whose tangent is zero.
"""
from __future__ import annotations

import numpy as np

from adcheck.conformance.case import FORWARD_AD, case
from adcheck.conformance.compare import assert_close, to_numpy

SEEDS = range(40)

CITE_ACCEPT = ("*Acceptability*: get(putback(t, s)) = t (if we put something into "
               "the source, we should get it out again if we get it out later)")
CITE_STABLE = ("*Stability*: putback(get(s), s) = s (if the target doesn’t change, "
               "neither should the source)")
CITE_FORGET = ("*Forgetfulness*: putback(t2, putback(t1, s)) = putback(t2, s) (each "
               "update completely overwrites the effect of the original one)")


# -- random view chains ----------------------------------------------------

def _step(rng, shape):
    """One view op applicable to ``shape``: (label, on_tensor, on_array)."""
    nd = len(shape)
    choices = ["unsqueeze"] if nd < 4 else []
    if nd:
        choices += ["select", "index"]
        if any(n >= 2 for n in shape):
            choices += ["narrow", "slice"]
        if any(n % 2 == 0 for n in shape) and nd < 4:
            choices.append("unflatten")
        if 1 in shape:
            choices.append("squeeze")
    if nd >= 2:
        choices += ["transpose", "permute", "diagonal", "movedim"]
    kind = choices[rng.integers(len(choices))]
    d = int(rng.integers(nd)) if nd else 0
    if kind in ("narrow", "slice"):
        d = int(rng.choice([k for k, n in enumerate(shape) if n >= 2]))
    if kind == "select":
        i = int(rng.integers(shape[d]))
        return f"select({d},{i})", lambda t: t.select(d, i), lambda a: np.take(a, i, axis=d)
    if kind == "index":
        i = int(rng.integers(-shape[0], shape[0]))
        return f"[{i}]", lambda t: t[i], lambda a: a[i]
    if kind == "narrow":
        start = int(rng.integers(shape[d] - 1))
        length = int(rng.integers(1, shape[d] - start + 1))
        return (f"narrow({d},{start},{length})", lambda t: t.narrow(d, start, length),
                lambda a: np.take(a, range(start, start + length), axis=d))
    if kind == "slice":
        start, step = int(rng.integers(shape[d] - 1)), int(rng.integers(1, 3))
        key = (slice(None),) * d + (slice(start, None, step),)
        return f"slice{key}", lambda t: t[key], lambda a: a[key]
    if kind == "unsqueeze":
        d = int(rng.integers(nd + 1))
        return f"unsqueeze({d})", lambda t: t.unsqueeze(d), lambda a: np.expand_dims(a, d)
    if kind == "squeeze":
        d = shape.index(1)
        return f"squeeze({d})", lambda t: t.squeeze(d), lambda a: np.squeeze(a, d)
    if kind == "unflatten":
        d = int(rng.choice([k for k, n in enumerate(shape) if n % 2 == 0]))
        sizes = (2, shape[d] // 2)
        new = shape[:d] + sizes + shape[d + 1:]
        return (f"unflatten({d},{sizes})", lambda t: t.unflatten(d, sizes),
                lambda a: a.reshape(new))
    d0, d1 = (int(k) for k in rng.choice(nd, size=2, replace=False))
    if kind == "transpose":
        return (f"transpose({d0},{d1})", lambda t: t.transpose(d0, d1),
                lambda a: np.swapaxes(a, d0, d1))
    if kind == "movedim":
        return f"movedim({d0},{d1})", lambda t: t.movedim(d0, d1), lambda a: np.moveaxis(a, d0, d1)
    if kind == "permute":
        perm = tuple(int(k) for k in rng.permutation(nd))
        return f"permute{perm}", lambda t: t.permute(perm), lambda a: np.transpose(a, perm)
    low, high = -(shape[d0] - 1), shape[d1] - 1
    offset = int(rng.integers(low, high + 1))
    return (f"diagonal({offset},{d0},{d1})", lambda t: t.diagonal(offset, d0, d1),
            lambda a: np.diagonal(a, offset, d0, d1))


class Chain:
    """A random base shape and view chain, drawn from ``seed``."""

    def __init__(self, seed, base_shape=None):
        self.rng = np.random.default_rng(seed)
        self.base_shape = base_shape or tuple(
            int(n) for n in self.rng.integers(1, 5, size=self.rng.integers(1, 4)))
        self.steps, shape = [], self.base_shape
        for _ in range(self.rng.integers(1, 5)):
            step = _step(self.rng, shape)
            shape = step[2](np.zeros(shape)).shape
            self.steps.append(step)
        flat = np.arange(int(np.prod(self.base_shape)))
        self.positions = self.on_array(flat.reshape(self.base_shape))
        self.view_shape = self.positions.shape

    def __str__(self):
        return f"base {self.base_shape} -> " + " . ".join(label for label, _, _ in self.steps)

    def on_tensor(self, t):
        for _, step, _ in self.steps:
            t = step(t)
        return t

    def on_array(self, a):
        for _, _, step in self.steps:
            a = step(a)
        return a

    def put(self, base, value):
        """putback on arrays: ``base`` with ``value`` written at the viewed places."""
        out = base.copy().ravel()
        out[self.positions.ravel()] = np.broadcast_to(value, self.view_shape).ravel()
        return out.reshape(self.base_shape)

    def data(self, shape):
        return np.round(self.rng.standard_normal(shape), 3)


# -- engine helpers --------------------------------------------------------

def _make(E, primal, tangent):
    """A tensor with ``primal``; dual with ``tangent`` unless it is None."""
    t = E.tensor(primal, dtype=E.float64)
    if tangent is None:
        return t
    return E.autograd.forward_ad.make_dual(t, E.tensor(tangent, dtype=E.float64))


def _read(E, t, shape):
    """(primal, tangent) as arrays; a missing tangent reads as zeros."""
    primal, tangent = E.autograd.forward_ad.unpack_dual(t)
    return to_numpy(primal), (np.zeros(shape) if tangent is None else to_numpy(tangent))


def _expect(E, t, primal, tangent, where):
    got_p, got_t = _read(E, t, primal.shape)
    expected_t = np.zeros(primal.shape) if tangent is None else tangent
    for part, got, expected in (("primal", got_p, primal), ("tangent", got_t, expected_t)):
        try:
            assert_close(got, expected, rtol=1e-12, atol=0)
        except AssertionError as error:
            raise AssertionError(f"{where}: {part} {error}") from None


def _draw(seed):
    """Per seed: the chain, and whether the base and the written values are dual."""
    chain = Chain(seed)
    base_dual, r1_dual, r2_dual = (bool(b) for b in chain.rng.integers(2, size=3))
    return chain, base_dual, r1_dual, r2_dual


# -- the laws --------------------------------------------------------------

@case("view operation forward AD formula generate a dual that is a view of the "
      "input's dual", source=FORWARD_AD)
def lens_get_is_the_view_of_primal_and_tangent(E):
    for seed in SEEDS:
        chain = Chain(seed)
        primal, tangent = chain.data(chain.base_shape), chain.data(chain.base_shape)
        with E.autograd.forward_ad.dual_level():
            view = chain.on_tensor(_make(E, primal, tangent))
            _expect(E, view, chain.on_array(primal), chain.on_array(tangent),
                    f"seed {seed}: {chain}")


@case(CITE_ACCEPT, source=FORWARD_AD)
def lens_acceptability(E):
    for seed in SEEDS:
        chain, base_dual, r_dual, _ = _draw(seed)
        p, t = chain.data(chain.base_shape), chain.data(chain.base_shape)
        rp, rt = chain.data(chain.view_shape), chain.data(chain.view_shape)
        where = f"seed {seed}: {chain} (base dual {base_dual}, value dual {r_dual})"
        with E.autograd.forward_ad.dual_level():
            s = _make(E, p, t if base_dual else None)
            view = chain.on_tensor(s)
            view.copy_(_make(E, rp, rt if r_dual else None))
            written_t = rt if r_dual else np.zeros(rp.shape)
            _expect(E, chain.on_tensor(s), rp, written_t, where + ", get after putback")
            _expect(E, view, rp, written_t, where + ", the written view")
            base_t = t if base_dual else np.zeros(p.shape)
            _expect(E, s, chain.put(p, rp), chain.put(base_t, written_t), where + ", base")


@case(CITE_STABLE, source=FORWARD_AD)
def lens_stability(E):
    for seed in SEEDS:
        chain, base_dual, _, _ = _draw(seed)
        p, t = chain.data(chain.base_shape), chain.data(chain.base_shape)
        with E.autograd.forward_ad.dual_level():
            s = _make(E, p, t if base_dual else None)
            view = chain.on_tensor(s)
            view.copy_(chain.on_tensor(s).clone())
            _expect(E, s, p, t if base_dual else None,
                    f"seed {seed}: {chain} (base dual {base_dual})")
            if not base_dual:
                assert E.autograd.forward_ad.unpack_dual(s).tangent is None, \
                    f"seed {seed}: putting back a plain get made the base dual"


@case(CITE_FORGET, source=FORWARD_AD)
def lens_forgetfulness(E):
    for seed in SEEDS:
        chain, base_dual, r1_dual, r2_dual = _draw(seed)
        p, t = chain.data(chain.base_shape), chain.data(chain.base_shape)
        r1 = (chain.data(chain.view_shape), chain.data(chain.view_shape) if r1_dual else None)
        r2 = (chain.data(chain.view_shape), chain.data(chain.view_shape) if r2_dual else None)
        where = f"seed {seed}: {chain} (base {base_dual}, t1 {r1_dual}, t2 {r2_dual})"
        with E.autograd.forward_ad.dual_level():
            twice = _make(E, p, t if base_dual else None)
            chain.on_tensor(twice).copy_(_make(E, *r1))
            chain.on_tensor(twice).copy_(_make(E, *r2))
            once = _make(E, p, t if base_dual else None)
            chain.on_tensor(once).copy_(_make(E, *r2))
            expected_p, expected_t = _read(E, once, p.shape)
            _expect(E, twice, expected_p, expected_t, where)


@case("Once we have done so, for all child views of any tensor which was viewed "
      "from the base or any of its children (e.g., z), we must use get "
      "operations to recompute what their new value would be after the "
      "modification from putback", source=FORWARD_AD)
def lens_sibling_views_see_the_putback(E):
    for seed in SEEDS:
        chain, base_dual, r_dual, _ = _draw(seed)
        sibling = Chain(1000 + seed, base_shape=chain.base_shape)
        p, t = chain.data(chain.base_shape), chain.data(chain.base_shape)
        rp, rt = chain.data(chain.view_shape), chain.data(chain.view_shape)
        with E.autograd.forward_ad.dual_level():
            s = _make(E, p, t if base_dual else None)
            other = sibling.on_tensor(s)              # taken before the write
            chain.on_tensor(s).copy_(_make(E, rp, rt if r_dual else None))
            new_p = chain.put(p, rp)
            new_t = chain.put(t if base_dual else np.zeros(p.shape),
                              rt if r_dual else np.zeros(rp.shape))
            _expect(E, other, sibling.on_array(new_p), sibling.on_array(new_t),
                    f"seed {seed}: written {chain}, read {sibling} "
                    f"(base dual {base_dual}, value dual {r_dual})")


@case("inplace operation forward AD formula modify the input's dual inplace",
      source=FORWARD_AD)
def lens_inplace_mul_through_a_view_chain(E):
    for seed in SEEDS:
        chain, base_dual, r_dual, _ = _draw(seed)
        p, t = chain.data(chain.base_shape), chain.data(chain.base_shape)
        rp, rt = chain.data(chain.view_shape), chain.data(chain.view_shape)
        base_t = t if base_dual else np.zeros(p.shape)
        written_t = rt if r_dual else np.zeros(rp.shape)
        vp, vt = chain.on_array(p), chain.on_array(base_t)
        with E.autograd.forward_ad.dual_level():
            s = _make(E, p, t if base_dual else None)
            chain.on_tensor(s).mul_(_make(E, rp, rt if r_dual else None))
            _expect(E, s, chain.put(p, vp * rp), chain.put(base_t, vt * rp + vp * written_t),
                    f"seed {seed}: {chain} (base dual {base_dual}, value dual {r_dual})")
