"""refengine against torch on the same inputs: values, vjps and jvps of every
OpInfo that names a torch op, and the documented rules at non-differentiable
points (relu and abs at 0, ties in max/amax/maximum, sqrt at 0)."""
from __future__ import annotations

import numpy as np
import pytest

from adcheck import opinfo
import adcheck.refengine as E
from adcheck.refengine.autograd import forward_ad as fa

from op_harness import diff_tensors, random_like

torch = pytest.importorskip("torch", reason="torch is not installed")
from torch.autograd import forward_ad as tfa  # noqa: E402

VALUE_TOL = dict(rtol=1e-10, atol=1e-12)
GRAD_TOL = dict(rtol=1e-9, atol=1e-10)


def _dtypes(info):
    wanted = [d for d in (E.float64, E.complex128) if d in info.dtypes]
    return wanted or list(info.dtypes[:1])


def _cases(mode=None):
    out = []
    for info in opinfo.op_db:
        if info.torch_name is None and info.torch_fn is None:
            continue
        for dtype in _dtypes(info):
            if mode is None or info.supports(mode, dtype):
                out.append(pytest.param(info, dtype, id=f"{info.name}-{dtype.name}"))
    return out


def _to_numpy(t) -> np.ndarray:
    if isinstance(t, torch.Tensor):
        if t._is_zerotensor():          # torch's symbolic zero gradient
            return np.zeros(tuple(t.shape), dtype=str(t.dtype).split(".")[-1])
        return t.detach().resolve_conj().resolve_neg().numpy()
    return t.detach().numpy()


def _torch_tensor(a: np.ndarray):
    """A torch copy of ``a`` with standard strides (NumPy gives empty arrays zero strides,
    which some torch backward formulas refuse)."""
    src = torch.tensor(np.asarray(a))
    return torch.empty_like(src, memory_format=torch.contiguous_format).copy_(src)


def _torch_sample(sample):
    """The sample's structure with each refengine tensor replaced by a torch copy."""
    mapping = {}

    def convert(t):
        if id(t) not in mapping:
            mapping[id(t)] = _torch_tensor(t.detach().numpy()).requires_grad_(t.requires_grad)
        return mapping[id(t)]
    structure = opinfo.map_tensors((sample.input, sample.args, sample.kwargs), convert)
    return structure, mapping


def _results(result) -> list:
    return list(result) if isinstance(result, (tuple, list)) else [result]


def _dtype_name(t) -> str:
    return str(t.dtype).split(".")[-1]


def _check_all(samples, what: str, one, info, dtype, check: str) -> None:
    """Run ``one(sample)`` on every sample and fail once, listing every sample that failed
    (a sample under a declared known failure of ``check`` must fail, or that is reported)."""
    problems = []
    for sample in samples:
        known = info.known_failure(check, dtype, sample)
        try:
            one(sample)
            if known is not None:
                problems.append(f"{sample!r}: declared known failure passes now ({known.reason})")
        except Exception as exc:
            if known is not None:
                continue   # an engine error is a failure of this sample, reported with the rest
            lines = [ln for ln in str(exc).splitlines() if ln.strip()]
            detail = " | ".join(lines[:8])
            problems.append(f"{sample!r}: {type(exc).__name__}: {detail[:400]}")
    if problems:
        pytest.fail(f"{what}: {len(problems)} sample(s) failed\n" + "\n".join(problems),
                    pytrace=False)


def _all_samples(info, dtype, requires_grad):
    yield from info.sample_inputs(dtype, requires_grad=requires_grad)
    yield from info.special_inputs(dtype, requires_grad=requires_grad)


@pytest.mark.parametrize("info, dtype", _cases())
def test_values_match_torch(info, dtype):
    top = info.torch_op()

    def one(sample):
        (inp, args, kwargs), _ = _torch_sample(sample)
        # through output_process_fn_grad: what it keeps is what is well defined (the values
        # of max(dim), gauge-invariant products of eigenvectors ...)
        process = sample.output_process_fn_grad
        ours = _results(process(info(sample)))
        theirs = _results(process(top(inp, *args, **kwargs)))
        assert len(ours) == len(theirs), \
            f"{info.name} {sample!r}: {len(ours)} outputs, torch {len(theirs)}"
        for k, (a, b) in enumerate(zip(ours, theirs)):
            where = f"{info.name} {dtype.name} {sample!r} output {k}"
            assert a.dtype.name == _dtype_name(b), f"{where}: dtype {a.dtype.name}, torch {b.dtype}"
            assert tuple(a.shape) == tuple(b.shape), \
                f"{where}: shape {tuple(a.shape)}, torch {tuple(b.shape)}"
            np.testing.assert_allclose(_to_numpy(a), _to_numpy(b), **VALUE_TOL, err_msg=where)
    _check_all(_all_samples(info, dtype, requires_grad=False),
               f"{info.name} {dtype.name} values", one, info, dtype, "torch_values")


def _float_outputs(results) -> list:
    return [r for r in results if r.dtype.is_floating_point or r.dtype.is_complex]


@pytest.mark.parametrize("info, dtype", _cases("reverse"))
def test_gradients_match_torch(info, dtype):
    def one(sample):
        ins = diff_tensors(sample)
        if not ins:
            return
        (inp, args, kwargs), mapping = _torch_sample(sample)
        t_ins = [mapping[id(t)] for t in ins]
        ours = _float_outputs(_results(sample.output_process_fn_grad(info(sample))))
        theirs = _float_outputs(_results(sample.output_process_fn_grad(
            info.torch_op()(inp, *args, **kwargs))))
        rng = np.random.default_rng(sample.seed or 0)
        pairs = [(o, t, random_like(o.detach().numpy(), rng)) for o, t in zip(ours, theirs)
                 if o.requires_grad]
        assert all(t.requires_grad for _, t, _ in pairs), f"{info.name}: torch output needs no grad"
        if not pairs:
            return
        g_ours = E.autograd.grad([o for o, _, _ in pairs], ins, [E.tensor(u) for _, _, u in pairs],
                                 allow_unused=True)
        g_theirs = torch.autograd.grad([t for _, t, _ in pairs], t_ins,
                                       [_torch_tensor(u) for _, _, u in pairs], allow_unused=True)
        for in_idx, (a, b, x) in enumerate(zip(g_ours, g_theirs, ins)):
            a = np.zeros(x.shape, x.dtype.np) if a is None else a.numpy()
            b = np.zeros(x.shape, x.dtype.np) if b is None else _to_numpy(b)
            np.testing.assert_allclose(a, b, **GRAD_TOL,
                                       err_msg=f"{info.name} {dtype.name} {sample!r}: vjp for in_idx {in_idx}")
    _check_all(_all_samples(info, dtype, requires_grad=True),
               f"{info.name} {dtype.name} vjp", one, info, dtype, "torch_reverse")


@pytest.mark.parametrize("info, dtype", _cases("forward"))
def test_jvps_match_torch(info, dtype):
    def one(sample):
        ins = diff_tensors(sample)
        if not ins:
            return
        rng = np.random.default_rng(sample.seed or 0)
        tangents = [random_like(t.detach().numpy(), rng) for t in ins]
        with fa.dual_level():
            duals = {id(t): fa.make_dual(t.detach(), E.tensor(v)) for t, v in zip(ins, tangents)}
            structure = opinfo.map_tensors((sample.input, sample.args, sample.kwargs),
                                           lambda t: duals.get(id(t), t))
            outs = _float_outputs(_results(sample.output_process_fn_grad(
                info.op(structure[0], *structure[1], **structure[2]))))
            ours = [fa.unpack_dual(o).tangent for o in outs]
        (inp, args, kwargs), mapping = _torch_sample(sample)
        with tfa.dual_level():
            t_duals = {id(mapping[id(t)]): tfa.make_dual(mapping[id(t)].detach(), _torch_tensor(v))
                       for t, v in zip(ins, tangents)}
            t_inp, t_args, t_kwargs = _swap_torch((inp, args, kwargs), t_duals)
            t_outs = _float_outputs(_results(sample.output_process_fn_grad(
                info.torch_op()(t_inp, *t_args, **t_kwargs))))
            theirs = [tfa.unpack_dual(o).tangent for o in t_outs]
        for out_idx, (a, b, o) in enumerate(zip(ours, theirs, outs)):
            a = np.zeros(o.shape, o.dtype.np) if a is None else a.detach().numpy()
            b = np.zeros(o.shape, o.dtype.np) if b is None else _to_numpy(b)
            np.testing.assert_allclose(a, b, **GRAD_TOL,
                                       err_msg=f"{info.name} {dtype.name} {sample!r}: jvp of out_idx {out_idx}")
    _check_all(_all_samples(info, dtype, requires_grad=True),
               f"{info.name} {dtype.name} jvp", one, info, dtype, "torch_forward")


def _swap_torch(value, table):
    if isinstance(value, torch.Tensor):
        return table.get(id(value), value)
    if isinstance(value, list):
        return [_swap_torch(v, table) for v in value]
    if isinstance(value, tuple):
        return tuple(_swap_torch(v, table) for v in value)
    if isinstance(value, dict):
        return {k: _swap_torch(v, table) for k, v in value.items()}
    return value


# The documented rules at non-differentiable points, value by value.

def _grad_both(fn_ours, fn_theirs, values, dtype=np.float64):
    """The gradient of sum(fn(x)) at ``values`` in refengine and in torch."""
    x = E.tensor(np.array(values, dtype=dtype), requires_grad=True)
    (g,) = E.autograd.grad(fn_ours(x).sum().real if x.is_complex() else fn_ours(x).sum(), [x])
    tx = torch.tensor(np.array(values, dtype=dtype), requires_grad=True)
    out = fn_theirs(tx).sum()
    (tg,) = torch.autograd.grad(out.real if out.is_complex() else out, [tx])
    return g.numpy(), _to_numpy(tg)


def _jvp_both(fn_ours, fn_theirs, values, tangent):
    x, t = np.array(values, dtype=np.float64), np.array(tangent, dtype=np.float64)
    with fa.dual_level():
        ours = fa.unpack_dual(fn_ours(fa.make_dual(E.tensor(x), E.tensor(t)))).tangent.numpy()
    with tfa.dual_level():
        theirs = tfa.unpack_dual(fn_theirs(tfa.make_dual(torch.tensor(x), torch.tensor(t)))).tangent
    return ours, _to_numpy(theirs)


def test_relu_gradient_and_jvp_at_zero_are_zero_as_in_torch():
    ours, theirs = _grad_both(E.relu, torch.relu, [-1.0, 0.0, 2.0])
    np.testing.assert_array_equal(ours, [0.0, 0.0, 1.0])
    np.testing.assert_array_equal(ours, theirs)
    ours, theirs = _jvp_both(E.relu, torch.relu, [-1.0, 0.0, 2.0], [1.0, 1.0, 1.0])
    np.testing.assert_array_equal(ours, [0.0, 0.0, 1.0])
    np.testing.assert_array_equal(ours, theirs)


def test_abs_gradient_and_jvp_at_zero_are_zero_as_in_torch():
    ours, theirs = _grad_both(E.abs, torch.abs, [-1.5, 0.0, 2.0])
    np.testing.assert_array_equal(ours, [-1.0, 0.0, 1.0])
    np.testing.assert_array_equal(ours, theirs)
    ours, theirs = _jvp_both(E.abs, torch.abs, [-1.5, 0.0, 2.0], [1.0, 1.0, 1.0])
    np.testing.assert_array_equal(ours, [-1.0, 0.0, 1.0])
    np.testing.assert_array_equal(ours, theirs)


def test_complex_abs_gradient_at_zero_is_zero_as_in_torch():
    ours, theirs = _grad_both(E.abs, torch.abs, [0.0 + 0.0j, 3.0 + 4.0j], dtype=np.complex128)
    np.testing.assert_allclose(ours, [0.0, 0.6 + 0.8j], rtol=1e-15)
    np.testing.assert_allclose(ours, theirs, rtol=1e-15)


def test_sqrt_gradient_at_zero_is_inf_as_in_torch():
    ours, theirs = _grad_both(E.sqrt, torch.sqrt, [0.0, 4.0])
    np.testing.assert_array_equal(ours, [np.inf, 0.25])
    np.testing.assert_array_equal(ours, theirs)


def test_full_max_and_min_share_the_gradient_among_ties_as_in_torch():
    values = [1.0, 3.0, 3.0, 2.0]
    ours, theirs = _grad_both(E.max, torch.max, values)
    np.testing.assert_array_equal(ours, [0.0, 0.5, 0.5, 0.0])
    np.testing.assert_array_equal(ours, theirs)
    ours, theirs = _grad_both(E.min, torch.min, [2.0, 1.0, 5.0, 1.0])
    np.testing.assert_array_equal(ours, [0.0, 0.5, 0.0, 0.5])
    np.testing.assert_array_equal(ours, theirs)


def test_amax_and_amin_share_the_gradient_among_ties_as_in_torch():
    values = [[1.0, 3.0, 3.0, 2.0], [4.0, 4.0, 4.0, 0.0]]
    ours, theirs = _grad_both(lambda x: E.amax(x, dim=1), lambda x: torch.amax(x, dim=1), values)
    np.testing.assert_allclose(ours, [[0, 0.5, 0.5, 0], [1 / 3, 1 / 3, 1 / 3, 0]], rtol=1e-15)
    np.testing.assert_array_equal(ours, theirs)
    ours, theirs = _grad_both(lambda x: E.amin(x, dim=0), lambda x: torch.amin(x, dim=0), values)
    np.testing.assert_array_equal(ours, theirs)
    ours, theirs = _jvp_both(lambda x: E.amax(x, dim=1), lambda x: torch.amax(x, dim=1),
                             values, [[0, 1.0, 3.0, 0], [1.0, 2.0, 6.0, 5.0]])
    np.testing.assert_allclose(ours, [2.0, 3.0], rtol=1e-15)
    np.testing.assert_allclose(ours, theirs, rtol=1e-15)


def test_maximum_and_minimum_split_the_gradient_at_ties_as_in_torch():
    a, b = [1.0, 2.0, -1.0], [1.0, 0.0, 3.0]
    for ours_fn, torch_fn, ga, gb in ((E.maximum, torch.maximum, [0.5, 1, 0], [0.5, 0, 1]),
                                      (E.minimum, torch.minimum, [0.5, 0, 1], [0.5, 1, 0])):
        x, y = (E.tensor(np.array(v), requires_grad=True) for v in (a, b))
        tx, ty = (torch.tensor(np.array(v), requires_grad=True) for v in (a, b))
        g = E.autograd.grad(ours_fn(x, y).sum(), [x, y])
        tg = torch.autograd.grad(torch_fn(tx, ty).sum(), [tx, ty])
        np.testing.assert_array_equal(g[0].numpy(), ga)
        np.testing.assert_array_equal(g[1].numpy(), gb)
        for ours, theirs in zip(g, tg):
            np.testing.assert_array_equal(ours.numpy(), _to_numpy(theirs))


def test_max_with_dim_sends_the_gradient_to_the_returned_index_as_in_torch():
    values = [[1.0, 3.0, 3.0], [2.0, 2.0, 0.0]]
    x = E.tensor(np.array(values), requires_grad=True)
    tx = torch.tensor(np.array(values), requires_grad=True)
    ours, theirs = E.max(x, 1), torch.max(tx, 1)
    (g,) = E.autograd.grad(ours.values.sum(), [x])
    (tg,) = torch.autograd.grad(theirs.values.sum(), [tx])
    expected = np.zeros((2, 3))
    expected[[0, 1], ours.indices.numpy()] = 1.0
    np.testing.assert_array_equal(g.numpy(), expected)
    np.testing.assert_array_equal(ours.indices.numpy(), theirs.indices.numpy())
    np.testing.assert_array_equal(g.numpy(), _to_numpy(tg))


@pytest.mark.parametrize("shape,dim", [((7,), 0), ((3, 5), 1), ((3, 5), 0), ((2, 3, 4), -2),
                                       ((1,), 0)])
@pytest.mark.parametrize("dtype", ["float64", "complex128"])
def test_cumsum_vjp_differentiated_again_agrees_with_torch(shape, dim, dtype):
    # cumsum's vjp is a reversed cumulative sum, an op of refengine's own (torch
    # flips, sums and flips back): its own vjp, jvp and batching rule are
    # checked here against torch's composition
    rng = np.random.default_rng(3)

    def draw():
        a = rng.standard_normal(shape)
        return a + 1j * rng.standard_normal(shape) if dtype == "complex128" else a
    x, g, w, t = draw(), draw(), draw(), draw()
    ours_g = E.from_numpy(g).requires_grad_()
    xs = E.from_numpy(x).requires_grad_()
    vjp, = E.autograd.grad(E.cumsum(xs, dim), xs, ours_g, create_graph=True)
    again, = E.autograd.grad((vjp * E.from_numpy(w)).sum().real, ours_g)
    with fa.dual_level():
        dual = fa.make_dual(E.from_numpy(g), E.from_numpy(t))
        xs2 = E.from_numpy(x).requires_grad_()
        tangent = fa.unpack_dual(E.autograd.grad(E.cumsum(xs2, dim), xs2, dual,
                                                 create_graph=True)[0]).tangent
    batch = E.from_numpy(np.stack([g, w, t]))
    batched, = E.autograd.grad(E.cumsum(xs, dim), xs, batch, is_grads_batched=True)

    theirs_x = torch.tensor(x, requires_grad=True)
    theirs_g = torch.tensor(g, requires_grad=True)
    theirs, = torch.autograd.grad(torch.cumsum(theirs_x, dim), theirs_x, theirs_g,
                                  create_graph=True)
    their_again, = torch.autograd.grad((theirs * torch.tensor(w)).sum().real, theirs_g)
    with tfa.dual_level():
        dual = tfa.make_dual(torch.tensor(g), torch.tensor(t))
        theirs_x2 = torch.tensor(x, requires_grad=True)
        their_tangent = tfa.unpack_dual(torch.autograd.grad(
            torch.cumsum(theirs_x2, dim), theirs_x2, dual, create_graph=True)[0]).tangent
    their_batched = np.stack([torch.autograd.grad(torch.cumsum(theirs_x, dim), theirs_x,
                                                  torch.tensor(v))[0].numpy()
                              for v in (g, w, t)])
    np.testing.assert_allclose(vjp.detach().numpy(), _to_numpy(theirs), **GRAD_TOL)
    np.testing.assert_allclose(again.numpy(), _to_numpy(their_again), **GRAD_TOL)
    np.testing.assert_allclose(tangent.numpy(), _to_numpy(their_tangent), **GRAD_TOL)
    np.testing.assert_allclose(batched.numpy(), their_batched, **GRAD_TOL)


def test_the_reversed_cumsum_is_not_public():
    assert not hasattr(E, "reversed_cumsum") and not hasattr(E.Tensor, "reversed_cumsum")
