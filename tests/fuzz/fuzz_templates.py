"""The statements a fuzzed program is made of: ops, views, in-place ops, hooks.

Each table row is a line of code with ``{a}`` (and ``{b}``) for the operands;
the generator fills them with variables whose shape and dtype make the line
meaningful most of the time (a line that raises on both engines is still
compared: the two errors must agree).
"""
from __future__ import annotations

from fuzz_program import Stmt

# unary ops: code, complex inputs allowed, result is real for a complex input
UNARY = (
    ("E.exp({a})", True, False), ("E.sin({a})", True, False), ("E.cos({a})", True, False),
    ("E.tanh({a})", True, False), ("E.sigmoid({a})", True, False), ("E.abs({a})", True, True),
    ("E.sqrt({a})", True, False), ("E.log({a})", True, False), ("E.neg({a})", True, False),
    ("E.reciprocal({a})", True, False), ("E.relu({a})", False, False),
    ("E.sgn({a})", True, False), ("E.acosh({a})", True, False), ("E.atanh({a})", True, False),
    ("E.asinh({a})", True, False), ("E.log1p({a})", True, False), ("E.expm1({a})", True, False),
    ("E.square({a})", True, False), ("E.rsqrt({a})", True, False), ("E.erf({a})", False, False),
    ("E.sign({a})", False, False), ("{a} ** 0.0", True, False), ("{a} ** 2", True, False),
    ("{a} ** 0.5", True, False), ("{a} ** -1.0", True, False), ("E.pow({a}, 3)", True, False),
    ("E.clamp({a}, min=-0.5, max=0.5)", False, False), ("{a}.clone()", True, False),
    ("2.0 ** {a}", True, False), ("{a}.conj()", True, False), ("E.angle({a})", True, True),
)
# binary ops: code, complex operands allowed
BINARY = (
    ("{a} + {b}", True), ("{a} - {b}", True), ("{a} * {b}", True), ("{a} / {b}", True),
    ("E.maximum({a}, {b})", False), ("E.minimum({a}, {b})", False),
    ("E.pow({a}, {b})", True), ("E.atan2({a}, {b})", False), ("E.xlogy({a}, {b})", False),
    ("E.where({a}.real > 0, {a}, {b})", True),
)
# reductions: code, minimum ndim, complex allowed, result shape (from a's shape)
REDUCE = (
    ("{a}.sum()", 0, True, lambda s: ()), ("{a}.sum(0)", 1, True, lambda s: s[1:]),
    ("{a}.mean()", 0, True, lambda s: ()), ("{a}.prod()", 0, True, lambda s: ()),
    ("E.logsumexp({a}, 0)", 1, True, lambda s: s[1:]),
    ("E.cumsum({a}, 0)", 1, True, lambda s: s), ("E.cumprod({a}, 0)", 1, True, lambda s: s),
    ("{a}.max()", 0, False, lambda s: ()), ("{a}.amax(0)", 1, False, lambda s: s[1:]),
    ("{a}.norm()", 0, True, lambda s: ()), ("{a}.std()", 1, False, lambda s: ()),
)
# views: code, minimum ndim, needs complex (True) / real (False) / either (None), shape
VIEWS = (
    ("{a}[0]", 1, None, lambda s: s[1:]), ("{a}[1:]", 1, None, lambda s: (s[0] - 1,) + s[1:]),
    ("{a}.t()", 2, None, lambda s: s[::-1]), ("{a}.unsqueeze(0)", 0, None, lambda s: (1,) + s),
    ("{a}.view(-1)", 0, None, lambda s: (max(1, _numel(s)),)),
    ("{a}.unsqueeze(0).expand(2, *{a}.shape)", 0, None, lambda s: (2,) + s),
    ("{a}.diagonal()", 2, None, lambda s: (min(s),)),
    ("{a}.narrow(-1, 0, 2)", 1, None, lambda s: s[:-1] + (2,)),
    ("{a}.split(1)[0]", 1, None, lambda s: (1,) + s[1:]),
    ("{a}.unbind(0)[1]", 1, None, lambda s: s[1:]),
    ("{a}.transpose(0, 1)", 2, None, lambda s: s[::-1]), ("{a}.squeeze()", 0, None, lambda s: s),
    ("E.view_as_real({a})", 0, True, lambda s: s + (2,)), ("{a}.real", 0, True, lambda s: s),
    ("{a}.imag", 0, True, lambda s: s), ("{a}.detach()", 0, None, lambda s: s),
    ("{a}.select(-1, 0)", 1, None, lambda s: s[:-1]),
)
# in-place ops on {a}: code, uses an operand {b}, real inputs only
INPLACE = (
    ("{a}.mul_({b})", True, False), ("{a}.add_({b})", True, False),
    ("{a}.div_({b})", True, False), ("{a}.copy_({b})", True, False),
    ("{a}.sub_(1.5)", False, False), ("{a}.mul_(2)", False, False),
    ("{a}.exp_()", False, False), ("{a}.sin_()", False, False), ("{a}.tanh_()", False, False),
    ("{a}.zero_()", False, False), ("{a}.neg_()", False, False), ("{a}.pow_(2)", False, False),
    ("{a}.sqrt_()", False, False), ("{a}.clamp_(min=0.0)", False, True),
    ("{a}.abs_()", False, True), ("{a}.detach_()", False, False),
    ("{a}.requires_grad_()", False, False), ("{a}.retain_grad()", False, False),
)


def _numel(shape) -> int:
    n = 1
    for d in shape:
        n *= d
    return n


def _fits(b_shape, a_shape) -> bool:
    """Whether ``b`` broadcasts to ``a``'s shape (an in-place operand)."""
    if len(b_shape) > len(a_shape):
        return False
    return all(x in (1, y) for x, y in zip(b_shape[::-1], a_shape[::-1]))


def _broadcast(s, t):
    n = max(len(s), len(t))
    s, t = (1,) * (n - len(s)) + s, (1,) * (n - len(t)) + t
    return tuple(y if x == 1 else x for x, y in zip(s, t))


def _stmt(st, code, kind, uses, shape, is_complex, expanded=False) -> Stmt:
    target = st.new(shape, is_complex, expanded=expanded)
    return Stmt(f"{target} = {code}", target, uses, kind, observe=target)


def _unary(st):
    code, cplx, to_real = st.rng.choice(UNARY)
    a = st.pick(lambda v: cplx or not v.complex)
    if a is None:
        return None
    return _stmt(st, code.format(a=a.name), code, (a.name,), a.shape,
                 a.complex and not to_real)


def _binary(st):
    code, cplx = st.rng.choice(BINARY)
    a = st.pick(lambda v: cplx or not v.complex)
    if a is None:
        return None
    b = st.pick(lambda v: (cplx or not v.complex) and (
        _fits(v.shape, a.shape) or _fits(a.shape, v.shape) or st.rng.random() < 0.05))
    return _stmt(st, code.format(a=a.name, b=b.name), code, (a.name, b.name),
                 _broadcast(a.shape, b.shape), a.complex or b.complex)


def _reduce(st):
    code, ndim, cplx, shape = st.rng.choice(REDUCE)
    a = st.pick(lambda v: len(v.shape) >= ndim and (cplx or not v.complex))
    if a is None:
        return None
    return _stmt(st, code.format(a=a.name), code, (a.name,), shape(a.shape), a.complex)


def _view(st):
    code, ndim, cplx, shape = st.rng.choice(VIEWS)
    a = st.pick(lambda v: len(v.shape) >= ndim and (cplx is None or v.complex == cplx)
                and (".t()" not in code or len(v.shape) == 2))
    if a is None:
        return None
    out_complex = a.complex and cplx is None
    return _stmt(st, code.format(a=a.name), code, (a.name,), shape(a.shape), out_complex,
                 expanded=a.expanded or "expand" in code)


def _inplace(st):
    code, operand, real_only = st.rng.choice(INPLACE)
    a = st.pick(lambda v: not (real_only and v.complex))
    if a is None:
        return None
    uses, b = (a.name,), None
    if operand:
        b = st.pick(lambda v: _fits(v.shape, a.shape) and (a.complex or not v.complex))
        if b is None:
            return None
        uses = (a.name, b.name)
    line = code.format(a=a.name, b=b.name if b else "")
    return Stmt(line, None, uses, code, observe=a.name)


def _hook(st):
    # torch 2.13 crashes (segmentation fault) registering a hook on an expanded
    # view whose base was written in place: such programs are not drawn
    a = st.pick(lambda v: not v.expanded)
    if a is None:
        return None
    st.hooks += 1
    factor = st.rng.choice((None, None, 2.0, -1.0))
    line = f"{a.name}.register_hook(hook({st.hooks}, {factor}))"
    return Stmt(line, None, (a.name,), "register_hook", observe=a.name)


_DRAWS = ((_unary, 30), (_binary, 22), (_reduce, 10), (_view, 16), (_inplace, 16), (_hook, 6))


def draw_statement(st) -> Stmt | None:
    """One statement over the variables defined so far (None: nothing fits)."""
    draw = st.rng.choices([d for d, _ in _DRAWS], weights=[w for _, w in _DRAWS])[0]
    return draw(st)


def ending(st) -> list:
    """How the program ends: a loss and its backward, a double backward, or
    (forward mode) nothing: every tangent has been observed already."""
    rng = st.rng
    if st.mode == "forward" or not st.vars:
        return []
    root = st.vars[-1] if rng.random() < 0.6 else rng.choice(st.vars)
    loss = st.new((), False)
    reduce = "E.abs({r}).sum()" if root.complex else "{r}.sum()"
    out = [Stmt(f"{loss} = " + reduce.format(r=root.name), loss, (root.name,), "loss",
                observe=loss)]
    if st.mode == "backward":
        if rng.random() < 0.2:
            out.append(Stmt(f"{loss}.backward(retain_graph=True)", None, (loss,), "backward"))
        out.append(Stmt(f"{loss}.backward()", None, (loss,), "backward"))
        return out
    leaves = [v.name for v in st.vars if v.leaf]
    grads = st.new((), False)
    out.append(Stmt(f"{grads} = E.autograd.grad({loss}, [{', '.join(leaves)}], "
                    "create_graph=True, allow_unused=True)", grads, (loss,) + tuple(leaves),
                    "grad"))
    total = st.new((), False)
    out.append(Stmt(f"{total} = sum((g * g.conj()).real.sum() for g in {grads} "
                    "if g is not None)", total, (grads,), "double", observe=total))
    out.append(Stmt(f"{total}.backward()", None, (total,), "double_backward"))
    return out
