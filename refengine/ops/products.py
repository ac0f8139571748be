"""Matrix and vector products: matmul mm bmm mv dot vdot outer. All bilinear:
each input's vjp multiplies ``grad`` by the conjugate of the other input."""
from __future__ import annotations

import numpy as np

from ..batching.batched import NotBatchable
from ..batching.rules import logical_shape, matrices
from .dispatch import call
from .opdef import OPS, defop, public

P = dict(promote=("self", "other"))


def _bilinear_jvp(name):
    def jvp(self_t, other_t, self, other):
        op = OPS[name]
        return call(op, self_t, other) + call(op, self, other_t)
    return jvp


def _check_dims(name, want_self, want_other):
    def check(self, other):
        if self.ndim != want_self or other.ndim != want_other:
            raise RuntimeError(f"{name}: expected {want_self}-D and {want_other}-D tensors, got "
                               f"{self.ndim}-D and {other.ndim}-D")
        if self.shape[-1] != other.shape[0 if want_other == 1 else -2]:
            raise RuntimeError(f"{name}: shapes {list(self.shape)} and {list(other.shape)} "
                               "cannot be multiplied")
    return check


def _mm(self, other):
    _check_dims("mm", 2, 2)(self, other)
    return self @ other


def _bmm(self, other):
    if self.ndim != 3 or other.ndim != 3 or self.shape[0] != other.shape[0]:
        raise RuntimeError(f"bmm: expected two 3-D tensors with the same batch size, got "
                           f"{list(self.shape)} and {list(other.shape)}")
    return self @ other


def _mv(self, other):
    _check_dims("mv", 2, 1)(self, other)
    return self @ other


def _dot(self, other):
    if self.ndim != 1 or other.ndim != 1 or self.shape != other.shape:
        raise RuntimeError(f"dot: expected 1-D tensors of the same size, got {list(self.shape)} "
                           f"and {list(other.shape)}")
    return np.dot(self, other)


# ----- batching: every product is one broadcasting matmul_nd of the physical
# operands (an unbatched operand broadcasts over the batch dim, and matmul_nd's
# vjp sums its gradient over it); vectors become 1-row / 1-column matrices.
def _fits(c, want_self: int, want_other: int, contract: bool = True) -> None:
    """Unless the examples have the ranks (and matching contracted and bmm batch
    sizes) the op accepts, NotBatchable: the loop then raises the op's error,
    where broadcasting over the batch might have passed."""
    a, b = logical_shape(c, "self"), logical_shape(c, "other")
    ok = (len(a), len(b)) == (want_self, want_other)
    if ok and contract:
        ok = a[-1] == b[0 if want_other == 1 else -2] and (want_self != 3 or a[0] == b[0])
    if not ok:
        raise NotBatchable("operands the op refuses")


def _matmul_rule(want_self: int, want_other: int):
    def rule(c):
        _fits(c, want_self, want_other)
        return c.run(OPS["matmul_nd"])
    return rule


def _mv_rule(c):
    _fits(c, 2, 1)
    return c.run(OPS["matmul_nd"], other=c.env["other"].unsqueeze(-1)).squeeze(-1)


def _dot_rule(conj_self: bool):
    """dot and vdot (``conj_self``): a (1, n) @ (n, 1) product per example."""
    def rule(c):
        _fits(c, 1, 1)
        a = c.env["self"].conj() if conj_self else c.env["self"]
        out = c.run(OPS["matmul_nd"], self=a.unsqueeze(-2), other=c.env["other"].unsqueeze(-1))
        return out.squeeze(-1).squeeze(-1)
    return rule


def _outer_rule(c):
    _fits(c, 1, 1, contract=False)
    return c.env["self"].unsqueeze(-1) * c.env["other"].unsqueeze(-2)


defop("mm", _mm, vjp={"self": lambda grad, other: grad.mm(other.mH),
                      "other": lambda grad, self: self.mH.mm(grad)},
      jvp=_bilinear_jvp("mm"), batch=_matmul_rule(2, 2), **P)
defop("bmm", _bmm, vjp={"self": lambda grad, other: grad.bmm(other.mH),
                        "other": lambda grad, self: self.mH.bmm(grad)},
      jvp=_bilinear_jvp("bmm"), batch=_matmul_rule(3, 3), **P)
defop("mv", _mv, vjp={"self": lambda grad, other: grad.unsqueeze(1) * other.conj().unsqueeze(0),
                      "other": lambda grad, self: self.mH.mv(grad)},
      jvp=_bilinear_jvp("mv"), batch=_mv_rule, **P)
defop("dot", _dot, vjp={"self": lambda grad, other: grad * other.conj(),
                        "other": lambda grad, self: grad * self.conj()},
      jvp=_bilinear_jvp("dot"), batch=_dot_rule(False), **P)
defop("vdot", lambda self, other: np.vdot(self, other),
      vjp={"self": lambda grad, other: grad.conj() * other,
           "other": lambda grad, self: grad * self},
      jvp=_bilinear_jvp("vdot"), batch=_dot_rule(True), **P)
defop("outer", lambda self, other: np.outer(self, other),
      vjp={"self": lambda grad, other: grad.mv(other.conj()),
           "other": lambda grad, self: grad.mT.mv(self.conj())},
      jvp=_bilinear_jvp("outer"), batch=_outer_rule,
      node="MulBackward0", **P)  # torch computes outer as a mul
# Batched, broadcasting matmul of >= 2-D operands; the engine sums the
# gradient over broadcast batch dimensions. Under vmap the batch dim is one
# more such dimension.
defop("matmul_nd", lambda self, other: np.matmul(self, other),
      vjp={"self": lambda grad, other: grad.matmul(other.mH),
           "other": lambda grad, self: self.mH.matmul(grad)},
      jvp=_bilinear_jvp("matmul_nd"), node="UnsafeViewBackward0", method=None, function=False,
      batch=matrices, **P)


@public()
def matmul(input, other):
    """Matrix product with NumPy/PyTorch broadcasting (1-D operands get a dim added)."""
    a, b = input.ndim, other.ndim
    if a == 0 or b == 0:
        raise RuntimeError("both arguments to matmul need to be at least 1D, but they are "
                           f"{a}D and {b}D")
    if a == 1 and b == 1:
        return call(OPS["dot"], input, other)
    if a == 2 and b == 1:
        return call(OPS["mv"], input, other)
    if a == 2 and b == 2:
        return call(OPS["mm"], input, other)
    if a == 1:
        return matmul(input.unsqueeze(0), other).squeeze(-2)
    if b == 1:
        return matmul(input, other.unsqueeze(-1)).squeeze(-1)
    return call(OPS["matmul_nd"], input, other)


# ----- einsum: multilinear. The vjp for operand k is an einsum of grad with the
# conjugated other operands back to k's subscripts; a letter repeated in k
# (a diagonal) is renamed and tied by an identity matrix, a letter summed
# only in k is broadcast by a vector of ones.
_LETTERS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"


def _einsum_parse(equation: str, shapes: list) -> tuple:
    """(input subscripts, output subscripts) with ellipses expanded, output explicit."""
    eq = equation.replace(" ", "")
    lhs, arrow, rhs = eq.partition("->")
    subs = lhs.split(",")
    if len(subs) != len(shapes):
        raise RuntimeError(f"einsum(): {len(subs)} operands in the equation, {len(shapes)} given")
    free = [c for c in _LETTERS if c not in eq]
    width = max([len(s) - (len(sub) - 3) for sub, s in zip(subs, shapes) if "..." in sub] or [0])
    ell = "".join(free[:width])
    subs = [sub.replace("...", ell[width - (len(s) - (len(sub) - 3)):]) if "..." in sub else sub
            for sub, s in zip(subs, shapes)]
    if arrow:
        out = rhs.replace("...", ell)
    else:
        letters = "".join(subs)
        out = ell + "".join(sorted(c for c in set(letters) if letters.count(c) == 1 and c not in ell))
    return subs, out


def _einsum_grad(k, grad, operands, subs, out):
    from .. import creation
    target, others = subs[k], [j for j in range(len(subs)) if j != k]
    spare = iter(c for c in _LETTERS if c not in "".join(subs) + out)
    sizes = {c: n for s, o in zip(subs, operands) for c, n in zip(s, o.shape)}
    args, terms, result = [grad], [out], ""
    for j in others:
        args.append(operands[j].conj())
        terms.append(subs[j])
    seen = set(out + "".join(subs[j] for j in others))
    for c in target:
        if c in result:                      # a repeated letter: tie it with eye
            new = next(spare)
            args.append(creation.eye(sizes[c], dtype=grad.dtype))
            terms.append(c + new)
            result += new
            continue
        if c not in seen:                    # summed only here: broadcast with ones
            args.append(creation.ones(sizes[c], dtype=grad.dtype))
            terms.append(c)
        result += c
    return call(OPS["einsum"], ",".join(terms) + "->" + result, args)


def _einsum_forward(equation, operands):
    return np.einsum(equation, *operands, optimize=len(operands) > 2)


def _einsum_jvp(operands_t, equation, operands):
    total = None
    for k, t in enumerate(operands_t):
        args = list(operands)
        args[k] = t
        term = call(OPS["einsum"], equation, args)
        total = term if total is None else total + term
    return total


def _einsum_vjp(grad, equation, operands):
    lhs, out = equation.split("->")
    subs = lhs.split(",")
    return [_einsum_grad(k, grad, operands, subs, out) for k in range(len(operands))]


def _einsum_rule(c):
    # the batched operands and the output get a fresh subscript for the batch dim
    flags = c.items["operands"]
    shapes = [tuple(o.shape)[1 if f else 0:] for o, f in zip(c.env["operands"], flags)]
    subs, out = _einsum_parse(c.env["equation"], shapes)
    used = "".join(subs) + out
    z = next((letter for letter in _LETTERS if letter not in used), None)
    if z is None:
        raise NotBatchable("every subscript letter is taken")
    lhs = ",".join(z + s if f else s for s, f in zip(subs, flags))
    return c.run(equation=f"{lhs}->{z}{out}")


defop("einsum", _einsum_forward, inputs=("operands",), promote=("operands",),
      vjp={"operands": _einsum_vjp}, jvp=_einsum_jvp, method=None, function=False,
      batch=_einsum_rule)


@public(method=False)
def einsum(equation, *operands):
    """Einstein summation: ``einsum('ij,jk->ik', a, b)``; operands may also be one list."""
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    subs, out = _einsum_parse(equation, [tuple(o.shape) for o in operands])
    return call(OPS["einsum"], ",".join(subs) + "->" + out, list(operands))
