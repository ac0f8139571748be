"""Every op has a jvp: linear algebra, shapes and views, indexing, nn.functional.

The comparison (forward-mode Jacobian against reverse-mode Jacobian, 1e-12
relative, float64) lives in ``forward_ad_ops``. Inputs that must be
symmetric or positive definite are made so inside the function, so that the
Jacobian is taken with respect to an unconstrained matrix.
"""
from __future__ import annotations

from adcheck.conformance.case import FORWARD_AD, case
from adcheck.conformance.forward_ad_ops import CITE_COLUMNS, CITE_JVP, C, P, R, check_table

CITE_VIEWS = ("view operation forward AD formula generate a dual that is a view "
              "of the input's dual")


def _spd(E, a):
    """A symmetric positive definite matrix from any square ``a``."""
    n = a.shape[-1]
    return a @ a.mT + n * E.eye(n, dtype=a.dtype)


def _sym(a):
    return a + a.mT


LINALG = [
    ("matmul", lambda E, a, b: E.matmul(a, b), [R(2, 3), R(3, 2)]),
    ("matmul batched broadcast", lambda E, a, b: a @ b, [R(2, 2, 3), R(3, 2)]),
    ("mm", lambda E, a, b: E.mm(a, b), [R(2, 3), R(3, 2)]),
    ("bmm", lambda E, a, b: E.bmm(a, b), [R(2, 2, 2), R(2, 2, 2)]),
    ("mv", lambda E, a, b: E.mv(a, b), [R(2, 3), R(3)]),
    ("dot", lambda E, a, b: E.dot(a, b), [R(3), R(3)]),
    ("vdot complex", lambda E, a, b: E.vdot(a, b), [C(3), C(3)]),
    ("outer", lambda E, a, b: E.outer(a, b), [R(2), R(3)]),
    ("einsum", lambda E, a, b: E.einsum("ij,jk->ik", a, b), [R(2, 3), R(3, 2)]),
    ("einsum trace", lambda E, a: E.einsum("ii", a), [R(3, 3)]),
    ("matmul complex", lambda E, a, b: a @ b, [C(2, 2), C(2, 2)]),
    ("linalg.det", lambda E, a: E.linalg.det(a), [R(3, 3)]),
    ("linalg.slogdet", lambda E, a: E.linalg.slogdet(a)[1], [R(3, 3)]),
    ("linalg.inv", lambda E, a: E.linalg.inv(a), [R(3, 3)]),
    ("linalg.solve", lambda E, a, b: E.linalg.solve(a, b), [R(3, 3), R(3, 2)]),
    ("linalg.cholesky", lambda E, a: E.linalg.cholesky(_spd(E, a)), [R(3, 3)]),
    ("linalg.qr", lambda E, a: tuple(E.linalg.qr(a)), [R(3, 3)]),
    ("linalg.eigh", lambda E, a: tuple(E.linalg.eigh(_sym(a))), [R(3, 3)]),
    ("linalg.svd", lambda E, a: tuple(E.linalg.svd(a, full_matrices=False)), [R(3, 2)]),
    ("linalg.svdvals", lambda E, a: E.linalg.svdvals(a), [R(2, 3)]),
    ("linalg.norm", lambda E, a: E.linalg.norm(a), [R(2, 3)]),
    ("linalg.vector_norm", lambda E, a: E.linalg.vector_norm(a, ord=3, dim=1), [R(2, 3)]),
    ("linalg.matrix_norm fro", lambda E, a: E.linalg.matrix_norm(a), [R(2, 3)]),
    ("linalg.matrix_norm nuc", lambda E, a: E.linalg.matrix_norm(a, ord="nuc"), [R(2, 3)]),
    ("linalg.pinv", lambda E, a: E.linalg.pinv(a), [R(3, 2)]),
    ("linalg.det complex", lambda E, a: E.linalg.det(a), [C(2, 2)]),
]

SHAPE = [
    ("view", lambda E, a: a.view(3, 2), [R(2, 3)]),
    ("reshape", lambda E, a: E.reshape(a, (6,)), [R(2, 3)]),
    ("reshape non-contiguous", lambda E, a: a.t().reshape(6), [R(2, 3)]),
    ("view_as", lambda E, a, b: a.view_as(b), [R(2, 3), R(3, 2)]),
    ("flatten", lambda E, a: E.flatten(a), [R(2, 1, 3)]),
    ("unflatten", lambda E, a: E.unflatten(a, 1, (2, 2)), [R(2, 4)]),
    ("squeeze", lambda E, a: E.squeeze(a, 1), [R(2, 1, 3)]),
    ("unsqueeze", lambda E, a: E.unsqueeze(a, 0), [R(2, 3)]),
    ("transpose", lambda E, a: E.transpose(a, 0, 2), [R(2, 1, 3)]),
    ("t", lambda E, a: E.t(a), [R(2, 3)]),
    ("T and mT", lambda E, a, b: (a.T, b.mT), [R(2, 3), R(2, 2, 3)]),
    ("permute", lambda E, a: E.permute(a, (2, 0, 1)), [R(2, 1, 3)]),
    ("expand", lambda E, a: a.expand(2, 3), [R(1, 3)]),
    ("expand_as", lambda E, a, b: a.expand_as(b), [R(3), R(2, 3)]),
    ("select", lambda E, a: E.select(a, 1, 2), [R(2, 3)]),
    ("narrow", lambda E, a: E.narrow(a, 1, 1, 2), [R(2, 3)]),
    ("unbind", lambda E, a: E.unbind(a, 0), [R(2, 3)]),
    ("split", lambda E, a: E.split(a, 2, dim=1), [R(2, 3)]),
    ("chunk", lambda E, a: E.chunk(a, 2, dim=0), [R(3, 2)]),
    ("diagonal", lambda E, a: E.diagonal(a, offset=1), [R(3, 3)]),
    ("movedim", lambda E, a: E.movedim(a, 0, -1), [R(2, 1, 3)]),
    ("view_as_real", lambda E, a: E.view_as_real(a), [C(3)]),
    ("view_as_complex", lambda E, a: E.view_as_complex(a), [R(3, 2)]),
    ("cat", lambda E, a, b: E.cat([a, b], dim=0), [R(2, 3), R(1, 3)]),
    ("stack", lambda E, a, b: E.stack([a, b], dim=1), [R(2, 3), R(2, 3)]),
    ("flip", lambda E, a: E.flip(a, (0, 1)), [R(2, 3)]),
    ("roll", lambda E, a: E.roll(a, 1, 1), [R(2, 3)]),
    ("repeat", lambda E, a: a.repeat(2, 1), [R(2, 3)]),
    ("tile", lambda E, a: E.tile(a, (1, 2)), [R(2, 3)]),
    ("tril", lambda E, a: E.tril(a), [R(3, 3)]),
    ("triu", lambda E, a: E.triu(a, 1), [R(3, 3)]),
]

INDEXING = [
    ("getitem basic", lambda E, a: a[1:, ::2], [R(3, 3)]),
    ("getitem int", lambda E, a: a[1, 2], [R(3, 3)]),
    ("getitem advanced", lambda E, a: a[E.tensor([2, 0, 2])], [R(3, 2)]),
    ("getitem mask", lambda E, a: a[a > 0], [R(3, 2)]),
    ("gather", lambda E, a: E.gather(a, 1, E.tensor([[0, 0], [2, 1]])), [R(2, 3)]),
    ("scatter", lambda E, a, b: E.scatter(a, 1, E.tensor([[2, 0]]), b), [R(2, 3), R(1, 2)]),
    ("scatter_add", lambda E, a, b: E.scatter_add(a, 1, E.tensor([[2, 2]]), b),
     [R(2, 3), R(1, 2)]),
    ("index_select", lambda E, a: E.index_select(a, 0, E.tensor([1, 1, 0])), [R(2, 3)]),
    ("masked_fill", lambda E, a: E.masked_fill(a, a < 0, 1.5), [R(2, 3)]),
    ("masked_select", lambda E, a: E.masked_select(a, a > 0), [R(2, 3)]),
    ("setitem", lambda E, a, b: _setitem(a, b), [R(3, 3), R(3)]),
    ("setitem mask", lambda E, a, b: _setitem_mask(a, b), [R(2, 3), R(2, 3)]),
]


def _setitem(a, b):
    out = a.clone()
    out[1] = b
    return out


def _setitem_mask(a, b):
    out = a.clone()
    mask = b > 0
    out[mask] = b[mask] * 2
    return out


def _cross_entropy(E, a):
    return E.nn.functional.cross_entropy(a, E.tensor([2, 0]))


NN = [
    *[(f"nn.functional.{n}", lambda E, a, n=n: getattr(E.nn.functional, n)(a), [R(2, 3)])
      for n in ("relu gelu silu softplus elu leaky_relu hardtanh").split()],
    ("softmax", lambda E, a: E.nn.functional.softmax(a, dim=1), [R(2, 3)]),
    ("log_softmax", lambda E, a: E.nn.functional.log_softmax(a, dim=0), [R(2, 3)]),
    ("mse_loss", lambda E, a, b: E.nn.functional.mse_loss(a, b), [R(2, 3), R(2, 3)]),
    ("cross_entropy", _cross_entropy, [R(2, 3)]),
    ("nll_loss", lambda E, a: E.nn.functional.nll_loss(a, E.tensor([1, 2])), [R(2, 3)]),
    ("linear", lambda E, x, w, b: E.nn.functional.linear(x, w, b), [R(2, 3), R(4, 3), R(4)]),
    ("conv1d", lambda E, x, w: E.nn.functional.conv1d(x, w, padding=1), [R(1, 2, 4), R(2, 2, 3)]),
    ("conv2d", lambda E, x, w, b: E.nn.functional.conv2d(x, w, b, stride=1),
     [R(1, 1, 3, 3), R(2, 1, 2, 2), R(2)]),
    ("layer_norm", lambda E, x, w, b: E.nn.functional.layer_norm(x, (3,), w, b),
     [R(2, 3), P(3), R(3)]),
    ("dropout eval", lambda E, a: E.nn.functional.dropout(a, p=0.5, training=False), [R(2, 3)]),
    ("pad", lambda E, a: E.nn.functional.pad(a, (1, 2)), [R(2, 3)]),
]


@case(CITE_JVP, source=FORWARD_AD)
def jvp_matches_vjp_linalg(E):
    check_table(E, LINALG)


@case(CITE_VIEWS, source=FORWARD_AD)
def jvp_matches_vjp_shape_and_views(E):
    check_table(E, SHAPE)


@case(CITE_COLUMNS, source=FORWARD_AD)
def jvp_matches_vjp_indexing(E):
    check_table(E, INDEXING)


@case(CITE_JVP, source=FORWARD_AD)
def jvp_matches_vjp_nn_functional(E):
    check_table(E, NN)
