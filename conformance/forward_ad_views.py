"""Forward AD through views and in-place operations (the note's lens semantics).

A view of a dual has as tangent the same view of its base's tangent; an
in-place op on a dual updates its tangent in place; a tensor without a
tangent written in place with a dual gains one, on its base too; a view
reads its base's tangent; ``make_dual`` and ``unpack_dual`` put back as the
appendix defines (the pre-existing tangents are preserved). Every example of
the appendix is a case here.
"""
from __future__ import annotations

import numpy as np

from adcheck.conformance.case import FORWARD_AD, case
from adcheck.conformance.compare import assert_close, to_numpy


def _vec(E, values):
    return E.tensor(values, dtype=E.float64)


def _dual(E, primal, tangent):
    return E.autograd.forward_ad.make_dual(_vec(E, primal), _vec(E, tangent))


def _parts(E, t):
    return E.autograd.forward_ad.unpack_dual(t)


@case("view operation forward AD formula generate a dual that is a view of "
      "the input's dual", source=FORWARD_AD)
def view_of_dual_has_the_same_view_of_the_tangent(E):
    """getD(s) = (get(s.primal), get(s.tangent)), for a range of view ops."""
    primal = np.arange(12.0).reshape(3, 4)
    tangent = np.arange(12.0).reshape(3, 4) * 10 + 1
    views = [
        ("slice", lambda t: t[1:, ::2], lambda a: a[1:, ::2]),
        ("select", lambda t: t.select(1, 2), lambda a: a[:, 2]),
        ("transpose", lambda t: t.t(), lambda a: a.T),
        ("view", lambda t: t.view(2, 6), lambda a: a.reshape(2, 6)),
        ("diagonal", lambda t: t.diagonal(), lambda a: np.diagonal(a)),
        ("unsqueeze", lambda t: t.unsqueeze(1), lambda a: a[:, None]),
        ("narrow", lambda t: t.narrow(0, 1, 2), lambda a: a[1:3]),
        ("expand", lambda t: t[0].expand(2, 4), lambda a: np.broadcast_to(a[0], (2, 4))),
    ]
    with E.autograd.forward_ad.dual_level():
        d = _dual(E, primal, tangent)
        for name, view, ref in views:
            p, t = _parts(E, view(d))
            assert t is not None, f"{name}: the view lost the tangent"
            assert_close(p, ref(primal), rtol=0, atol=0)
            assert_close(t, ref(tangent), rtol=0, atol=0)


@case("view operation forward AD formula generate a dual that is a view of "
      "the input's dual", source=FORWARD_AD)
def tangent_of_a_view_aliases_the_base_tangent(E):
    with E.autograd.forward_ad.dual_level():
        d = _dual(E, [0.0, 1.0, 2.0, 3.0], [1.0, 1.0, 1.0, 1.0])
        _parts(E, d[1:3]).tangent.add_(1)
        assert_close(_parts(E, d).tangent, [1.0, 2.0, 2.0, 1.0])


@case("inplace operation forward AD formula modify the input's dual inplace",
      source=FORWARD_AD)
def inplace_op_updates_the_tangent_in_place(E):
    with E.autograd.forward_ad.dual_level():
        d = _dual(E, [0.0, 1.0, 2.0, 3.0], [1.0, 2.0, 3.0, 4.0])
        tangent_before = _parts(E, d).tangent
        view_before = d[1:3]
        d.mul_(_dual(E, [2.0] * 4, [10.0] * 4))
        expected = [1.0 * 2 + 0.0 * 10, 2.0 * 2 + 10, 3.0 * 2 + 20, 4.0 * 2 + 30]
        assert_close(_parts(E, d).tangent, expected)
        assert_close(tangent_before, expected)   # the same tangent, updated
        assert_close(_parts(E, view_before).tangent, expected[1:3])


@case("inplace operation forward AD formula modify the input's dual inplace",
      source=FORWARD_AD)
def inplace_op_on_a_view_of_a_dual_updates_the_base_tangent(E):
    with E.autograd.forward_ad.dual_level():
        d = _dual(E, [[1.0, 2.0], [3.0, 4.0]], [[1.0, 1.0], [1.0, 1.0]])
        column = d[:, 1]
        column.exp_()
        assert_close(_parts(E, d).primal, [[1.0, np.exp(2.0)], [3.0, np.exp(4.0)]])
        assert_close(_parts(E, d).tangent, [[1.0, np.exp(2.0)], [1.0, np.exp(4.0)]])


@case("Intuitively, we think that out should become a dual tensor after this "
      "operation.", source=FORWARD_AD)
def setitem_dual_into_zeros_makes_out_dual(E):
    """The appendix: ``out = torch.zeros(100); out[2] = dual``."""
    with E.autograd.forward_ad.dual_level():
        dual = _dual(E, 3.0, 10.0)
        out = E.zeros(100, dtype=E.float64)
        out[2] = dual
        primal, tangent = _parts(E, out)
        expected = np.zeros(100)
        expected[2] = 10.0
        assert tangent is not None
        assert_close(tangent, expected, rtol=0, atol=0)
        assert to_numpy(primal)[2] == 3.0


@case("if d.tangent is None: t = None", source=FORWARD_AD)
def setitem_plain_into_plain_stays_plain(E):
    """index2_putback with no tangent anywhere leaves the tangent absent."""
    with E.autograd.forward_ad.dual_level():
        out = E.zeros(5, dtype=E.float64)
        out[2] = _vec(E, 3.0)
        assert _parts(E, out).tangent is None


@case("t = d.tangent.clone() t[2] = 0", source=FORWARD_AD)
def writing_a_plain_tensor_into_a_dual_zeroes_that_tangent(E):
    """index2_putback of a value without tangent into a dual: zero there."""
    with E.autograd.forward_ad.dual_level():
        d = _dual(E, [1.0, 1.0, 1.0, 1.0], [0.0, 1.0, 2.0, 3.0])
        d[1:3] = _vec(E, [0.0, 0.0])
        primal, tangent = _parts(E, d)
        assert_close(primal, [1.0, 0.0, 0.0, 1.0])
        assert_close(tangent, [0.0, 0.0, 0.0, 3.0])


@case("when a tensor with no dual is updated inplace with a tensor that has a "
      "dual, this change needs to be properly reflected on its base if the "
      "modified tensor is a view.", source=FORWARD_AD)
def plain_view_updated_with_a_dual_gives_its_base_a_tangent(E):
    with E.autograd.forward_ad.dual_level():
        out = E.zeros(3, 4, dtype=E.float64)
        row = out[1]
        column = out[:, 1]                       # a sibling view, made before
        row.copy_(_dual(E, [1.0] * 4, [0.0, 1.0, 2.0, 3.0]))
        expected = np.zeros((3, 4))
        expected[1] = [0.0, 1.0, 2.0, 3.0]
        assert_close(_parts(E, out).tangent, expected, rtol=0, atol=0)
        assert_close(_parts(E, row).tangent, expected[1], rtol=0, atol=0)
        assert_close(_parts(E, column).tangent, expected[:, 1], rtol=0, atol=0)


@case("when checking if a Tensor has a dual value, we should check its base "
      "when it does not have a dual value already", source=FORWARD_AD)
def view_without_own_tangent_reads_its_base(E):
    with E.autograd.forward_ad.dual_level():
        base = E.zeros(4, dtype=E.float64)
        middle = base[1:3]
        grid = base.view(2, 2)
        assert _parts(E, middle).tangent is None
        base.copy_(_dual(E, [1.0] * 4, [0.0, 1.0, 2.0, 3.0]))
        assert_close(_parts(E, middle).tangent, [1.0, 2.0])
        assert_close(_parts(E, grid).tangent, [[0.0, 1.0], [2.0, 3.0]])


@case("Although y and z alias the same primal, their tangents are not aliased, "
      "and thus inplace updates to tangent affect one but not the other.",
      source=FORWARD_AD)
def two_make_dual_views_keep_separate_tangents(E):
    """The appendix: y and z are make_dual views of x[2]; y.add_(dual)."""
    fwd = E.autograd.forward_ad
    x = E.zeros(100, dtype=E.float64)
    with fwd.dual_level():
        x2 = x[2]
        y = fwd.make_dual(x2, _vec(E, 1.0))
        z = fwd.make_dual(x2, _vec(E, 2.0))
        y.add_(_dual(E, 3.0, 10.0))
        assert_close(_parts(E, y).primal, 3.0)
        assert_close(_parts(E, y).tangent, 11.0)      # y has an updated tangent
        assert_close(_parts(E, z).primal, 3.0)        # z sees the new primal ...
        assert_close(_parts(E, z).tangent, 2.0)       # ... but not y's tangent
        assert to_numpy(x)[2] == 3.0
        assert _parts(E, x2).tangent is None          # the tangent of x[2] is NOT updated
        assert _parts(E, x).tangent is None


@case("# Preserve p.tangent and t.tangent!", source=FORWARD_AD)
def make_dual_putback_preserves_tangents(E):
    """make_dual_putback(p, t, d) = ((d.primal, p.tangent), (d.tangent, t.tangent))."""
    fwd = E.autograd.forward_ad
    x, t = E.zeros(3, dtype=E.float64), E.ones(3, dtype=E.float64)
    with fwd.dual_level():
        y = fwd.make_dual(x, t)
        y.add_(_dual(E, [1.0, 2.0, 3.0], [5.0, 5.0, 5.0]))
        assert_close(x, [1.0, 2.0, 3.0])            # primal put back into x
        assert _parts(E, x).tangent is None         # x keeps its (absent) tangent
        assert_close(t, [6.0, 6.0, 6.0])            # the tangent put back into t
        assert_close(_parts(E, y).tangent, [6.0, 6.0, 6.0])


@case("if d_tangent is None: d_tangent = torch.zeros_like(d.primal)",
      source=FORWARD_AD)
def make_dual_putback_of_a_plain_value_zeroes_the_tangent(E):
    fwd = E.autograd.forward_ad
    x, t = E.zeros(3, dtype=E.float64), E.ones(3, dtype=E.float64)
    with fwd.dual_level():
        y = fwd.make_dual(x, t)
        y.copy_(_vec(E, [4.0, 4.0, 4.0]))
        assert_close(x, [4.0, 4.0, 4.0])
        assert_close(t, [0.0, 0.0, 0.0])
        assert _parts(E, x).tangent is None


@case("return DualTensor(p.primal, d.tangent)  # Preserve d.tangent!",
      source=FORWARD_AD)
def primal_putback_preserves_the_dual_tangent(E):
    """The primal of unpack_dual is a view without tangent; writing it keeps d's."""
    fwd = E.autograd.forward_ad
    with fwd.dual_level():
        d = _dual(E, [1.0, 1.0, 1.0], [0.0, 1.0, 2.0])
        primal = _parts(E, d).primal
        assert _parts(E, primal).tangent is None      # primal_get drops the tangent
        primal.mul_(2)
        assert_close(_parts(E, d).primal, [2.0, 2.0, 2.0])
        assert_close(_parts(E, d).tangent, [0.0, 1.0, 2.0])
        primal.add_(_dual(E, [1.0, 1.0, 1.0], [7.0, 7.0, 7.0]))
        assert_close(_parts(E, d).primal, [3.0, 3.0, 3.0])
        assert_close(_parts(E, d).tangent, [0.0, 1.0, 2.0])


@case("# Proceeds similarly for tangent", source=FORWARD_AD)
def tangent_putback_updates_the_dual(E):
    """The tangent of unpack_dual is a lens too: writing it writes d's tangent."""
    with E.autograd.forward_ad.dual_level():
        d = _dual(E, [1.0, 1.0, 1.0], [0.0, 1.0, 2.0])
        _parts(E, d).tangent.mul_(3)
        assert_close(_parts(E, d).tangent, [0.0, 3.0, 6.0])
        assert_close(_parts(E, d).primal, [1.0, 1.0, 1.0])


@case("return (putback(t.primal, s.primal), putback(t.tangent, s.tangent))",
      source=FORWARD_AD)
def putback_of_a_dual_into_a_dual_view_writes_both_parts(E):
    """putbackD: writing dual r through a view of dual s updates s's primal and
    tangent at the viewed places only; getD then reads r back (acceptability)."""
    with E.autograd.forward_ad.dual_level():
        s = _dual(E, [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], [[1.0] * 3, [2.0] * 3])
        s[:, 1:].copy_(_dual(E, [[7.0, 8.0], [9.0, 0.0]], [[-1.0, -2.0], [-3.0, -4.0]]))
        primal, tangent = _parts(E, s)
        assert_close(primal, [[1.0, 7.0, 8.0], [4.0, 9.0, 0.0]])
        assert_close(tangent, [[1.0, -1.0, -2.0], [2.0, -3.0, -4.0]])
        assert_close(_parts(E, s[:, 1:]).tangent, [[-1.0, -2.0], [-3.0, -4.0]])


@case("Inplace updates on views are easy enough to understand in basic PyTorch, "
      "but with the addition of conjugate views and dual tensors, the more "
      "sophisticated language of bidirectional lenses can help us answer some "
      "semantic questions.", source=FORWARD_AD)
def complex_views_of_a_dual_read_and_write_the_tangent(E):
    """conj, real, imag and view_as_real of a complex dual are lenses too."""
    fwd = E.autograd.forward_ad
    with fwd.dual_level():
        d = fwd.make_dual(E.tensor([1 + 2j, 3 - 1j], dtype=E.complex128),
                          E.tensor([0.5 + 1j, -2 + 3j], dtype=E.complex128))
        assert_close(_parts(E, d.conj()).tangent, [0.5 - 1j, -2 - 3j])
        assert_close(_parts(E, d.real).tangent, [0.5, -2.0])
        assert_close(_parts(E, d.imag).tangent, [1.0, 3.0])
        pairs = E.view_as_real(d)
        assert_close(_parts(E, pairs).tangent, [[0.5, 1.0], [-2.0, 3.0]])
        pairs[:, 1].zero_()                       # zero the imaginary parts
        pairs[0, 0].mul_(_dual(E, 2.0, 1.0))      # (1 + e 0.5) (2 + e 1)
        primal, tangent = _parts(E, d)
        assert_close(primal, [2 + 0j, 3 + 0j])
        assert_close(tangent, [2 + 0j, -2 + 0j])
