"""Custom ``autograd.Function`` basics: forward, backward, jvp, apply, ctx.

Each Function below is written once against an engine module ``M`` and run
on torch and on refengine; expected gradients are calculus or torch's.
"""
from __future__ import annotations

import numpy as np
import pytest

import adcheck.refengine as E

# torch's forward_ad module warns about torch.jit.script on import; not our concern
pytestmark = pytest.mark.filterwarnings("ignore:`torch.jit.script` is deprecated:DeprecationWarning")

try:
    import torch as _torch
except ImportError:  # the oracle is optional: tests that need it skip
    _torch = None




def arr(t) -> np.ndarray:
    return np.asarray(t.detach().numpy())


def make_exp(M):
    """exp, saving its output for backward and its input for jvp."""
    class Exp(M.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            y = x.exp()
            ctx.save_for_backward(y)
            ctx.save_for_forward(y)
            return y

        @staticmethod
        def backward(ctx, grad):
            y, = ctx.saved_tensors
            return grad * y

        @staticmethod
        def jvp(ctx, x_t):
            y, = ctx.saved_tensors
            return x_t * y
    return Exp


def make_scale(M, seen: dict):
    """x * k with a Python number k; records what ctx told backward."""
    class Scale(M.autograd.Function):
        @staticmethod
        def forward(ctx, x, other, k):
            ctx.k = k
            ctx.save_for_backward(x, other)
            return x * other * k

        @staticmethod
        def backward(ctx, grad):
            x, other = ctx.saved_tensors
            seen["needs_input_grad"] = tuple(ctx.needs_input_grad)
            gx = grad * other * ctx.k if ctx.needs_input_grad[0] else None
            go = grad * x * ctx.k if ctx.needs_input_grad[1] else None
            return gx, go, None
    return Scale


@pytest.mark.parametrize("engine", ["refengine", "torch"])
def test_apply_runs_forward_and_backward_uses_saved_output(engine):
    if engine == "torch" and _torch is None:
        pytest.skip("torch is not installed")
    M = E if engine == "refengine" else _torch
    x = M.tensor([0.5, -1.0, 2.0], requires_grad=True)
    y = make_exp(M).apply(x)
    np.testing.assert_allclose(arr(y), np.exp([0.5, -1.0, 2.0]), rtol=1e-6)
    (y * M.tensor([1.0, 2.0, 3.0])).sum().backward()
    np.testing.assert_allclose(arr(x.grad), np.exp([0.5, -1.0, 2.0]) * [1.0, 2.0, 3.0], rtol=1e-6)


def test_grad_fn_of_a_function_output_is_named_as_torch(torch):
    theirs = make_exp(_torch).apply(_torch.ones(1, requires_grad=True)).grad_fn
    ours = make_exp(E).apply(E.ones(1, requires_grad=True)).grad_fn
    assert ours.name() == theirs.name() == "ExpBackward"
    assert ours.next_functions[0][0].name() == "AccumulateGrad"


def test_output_requires_grad_only_when_an_input_does():
    Exp = make_exp(E)
    assert Exp.apply(E.ones(1)).requires_grad is False
    y = Exp.apply(E.ones(1, requires_grad=True))
    assert y.requires_grad and not y.is_leaf


def test_apply_under_no_grad_records_nothing():
    with E.no_grad():
        y = make_exp(E).apply(E.ones(1, requires_grad=True))
    assert y.grad_fn is None and y.requires_grad is False


def test_forward_runs_without_recording():
    recorded = {}

    class Probe(E.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            inner = x * 2
            recorded["grad_fn"] = inner.grad_fn
            recorded["enabled"] = E.is_grad_enabled()
            return inner

        @staticmethod
        def backward(ctx, grad):
            return grad * 2
    Probe.apply(E.ones(1, requires_grad=True))
    assert recorded == {"grad_fn": None, "enabled": False}


@pytest.mark.parametrize("grads", [(True, True), (True, False), (False, True)])
def test_needs_input_grad_matches_torch(torch, grads):
    def run(M):
        seen = {}
        x = M.tensor([1.0, 2.0], requires_grad=grads[0])
        other = M.tensor([3.0, -1.0], requires_grad=grads[1])
        make_scale(M, seen).apply(x, other, 2.5).sum().backward()
        return seen["needs_input_grad"], [arr(t.grad) if t.grad is not None else None
                                          for t in (x, other)]
    (ours_needs, ours_grads), (their_needs, their_grads) = run(E), run(_torch)
    assert ours_needs == their_needs
    for ours, theirs in zip(ours_grads, their_grads):
        if theirs is None:
            assert ours is None
        else:
            np.testing.assert_allclose(ours, theirs)


def test_saved_tensors_hold_the_saved_values():
    seen = {}

    class Keep(E.autograd.Function):
        @staticmethod
        def forward(ctx, a, b):
            ctx.save_for_backward(a, None, b)
            return a + b

        @staticmethod
        def backward(ctx, grad):
            seen["saved"] = ctx.saved_tensors
            return grad, grad
    a, b = E.tensor([1.0], requires_grad=True), E.tensor([2.0], requires_grad=True)
    Keep.apply(a, b).sum().backward()
    first, middle, last = seen["saved"]
    assert middle is None
    assert first.tolist() == [1.0] and last.tolist() == [2.0]


def test_save_for_backward_refuses_a_non_tensor(torch):
    def run(M):
        class Bad(M.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(x, 3)
                return x * 1

            @staticmethod
            def backward(ctx, grad):
                return grad
        Bad.apply(M.ones(1, requires_grad=True))
    with pytest.raises(TypeError):
        run(_torch)
    with pytest.raises(TypeError):
        run(E)


def test_saved_tensors_are_freed_after_backward(torch):
    def run(M):
        y = make_exp(M).apply(M.ones(1, requires_grad=True)).sum()
        y.backward()
        y.backward()
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        run(_torch)
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        run(E)


def test_backward_returning_too_many_gradients_raises(torch):
    def run(M):
        class TooMany(M.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x * 2

            @staticmethod
            def backward(ctx, grad):
                return grad * 2, grad
        TooMany.apply(M.ones(1, requires_grad=True)).sum().backward()
    with pytest.raises(RuntimeError, match="incorrect number of gradients"):
        run(_torch)
    with pytest.raises(RuntimeError, match="incorrect number of gradients"):
        run(E)


def test_backward_gradient_of_the_wrong_shape_raises(torch):
    def run(M):
        class Wrong(M.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x * 2

            @staticmethod
            def backward(ctx, grad):
                return M.ones(3)
        Wrong.apply(M.ones(2, requires_grad=True)).sum().backward()
    with pytest.raises(RuntimeError, match="invalid gradient at index 0"):
        run(_torch)
    with pytest.raises(RuntimeError, match="invalid gradient at index 0"):
        run(E)


def test_backward_gradient_with_broadcast_dims_is_summed_to_the_input(torch):
    def run(M):
        class Wide(M.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x * 1

            @staticmethod
            def backward(ctx, grad):
                return grad.expand(3, 2)
        x = M.ones(2, requires_grad=True)
        Wide.apply(x).sum().backward()
        return arr(x.grad)
    np.testing.assert_allclose(run(E), run(_torch))
    np.testing.assert_allclose(run(E), [3.0, 3.0])


def test_multiple_outputs_and_materialized_zero_grads(torch):
    def run(M):
        received = {}

        class SinCos(M.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(x)
                return x.sin(), x.cos()

            @staticmethod
            def backward(ctx, g_sin, g_cos):
                x, = ctx.saved_tensors
                received["g_cos"] = arr(g_cos)
                return g_sin * x.cos() - g_cos * x.sin()
        x = M.tensor([0.3, 1.1], requires_grad=True)
        s, _unused_cos = SinCos.apply(x)
        (s * 2).sum().backward()         # cos unused: its gradient arrives as zeros
        return arr(x.grad), received["g_cos"]
    (ours_grad, ours_gcos), (their_grad, their_gcos) = run(E), run(_torch)
    np.testing.assert_allclose(ours_grad, their_grad, rtol=1e-6)
    np.testing.assert_allclose(ours_grad, 2 * np.cos([0.3, 1.1]), rtol=1e-6)
    np.testing.assert_array_equal(ours_gcos, their_gcos)


def test_function_composes_with_ordinary_ops():
    x = E.tensor([0.2, 0.7], requires_grad=True)
    Exp = make_exp(E)
    (Exp.apply(x * 3) ** 2).sum().backward()
    # d/dx exp(3x)^2 = 6 exp(6x)
    np.testing.assert_allclose(arr(x.grad), 6 * np.exp(6 * np.array([0.2, 0.7])), rtol=1e-5)


def test_setup_context_style(torch):
    def run(M):
        class Square(M.autograd.Function):
            @staticmethod
            def forward(x):
                return x * x

            @staticmethod
            def setup_context(ctx, inputs, output):
                x, = inputs
                ctx.save_for_backward(x)

            @staticmethod
            def backward(ctx, grad):
                x, = ctx.saved_tensors
                return 2 * x * grad
        x = M.tensor([1.5, -2.0], requires_grad=True)
        Square.apply(x).sum().backward()
        return arr(x.grad)
    np.testing.assert_allclose(run(E), run(_torch))
    np.testing.assert_allclose(run(E), [3.0, -4.0])


# ----- jvp ----------------------------------------------------------------------

def test_jvp_gives_the_tangent_of_the_output():
    fw = E.autograd.forward_ad
    xv, tv = np.array([0.5, -1.0]), np.array([2.0, 3.0])
    with fw.dual_level():
        x = fw.make_dual(E.tensor(xv, dtype=E.float64), E.tensor(tv, dtype=E.float64))
        primal, tangent = fw.unpack_dual(make_exp(E).apply(x))
    np.testing.assert_allclose(arr(primal), np.exp(xv))
    np.testing.assert_allclose(arr(tangent), np.exp(xv) * tv)


def test_jvp_reads_what_save_for_forward_saved(torch):
    def run(M):
        class Cube(M.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_forward(x)
                return x * x * x

            @staticmethod
            def jvp(ctx, x_t):
                x, = ctx.saved_tensors
                return 3 * x * x * x_t

            @staticmethod
            def backward(ctx, grad):
                raise AssertionError("not called")
        fw = M.autograd.forward_ad
        with fw.dual_level():
            x = fw.make_dual(M.tensor([2.0, -1.0]), M.tensor([1.0, 0.5]))
            return arr(fw.unpack_dual(Cube.apply(x)).tangent)
    np.testing.assert_allclose(run(E), run(_torch))
    np.testing.assert_allclose(run(E), [12.0, 1.5])


def test_jvp_gets_none_for_a_non_tensor_argument_and_matches_torch(torch):
    def run(M):
        seen = {}

        class Shift(M.autograd.Function):
            @staticmethod
            def forward(ctx, x, c):
                return x + c

            @staticmethod
            def jvp(ctx, x_t, c_t):
                seen["c_t"] = c_t
                return x_t

            @staticmethod
            def backward(ctx, grad):
                return grad, None
        fw = M.autograd.forward_ad
        with fw.dual_level():
            x = fw.make_dual(M.tensor([1.0]), M.tensor([4.0]))
            tangent = fw.unpack_dual(Shift.apply(x, 2.0)).tangent
        return arr(tangent), seen["c_t"]
    (ours_t, ours_c), (their_t, their_c) = run(E), run(_torch)
    np.testing.assert_allclose(ours_t, their_t)
    assert ours_c is None and their_c is None


def test_jvp_not_implemented_raises_when_forward_ad_needs_it(torch):
    def run(M):
        class NoJvp(M.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x * 2

            @staticmethod
            def backward(ctx, grad):
                return grad * 2
        fw = M.autograd.forward_ad
        with fw.dual_level():
            NoJvp.apply(fw.make_dual(M.ones(1), M.ones(1)))
    with pytest.raises(NotImplementedError):
        run(_torch)
    with pytest.raises(NotImplementedError):
        run(E)


# ----- ctx during and after backward ------------------------------------------------

@pytest.mark.parametrize("create_graph", [False, True])
def test_grad_mode_inside_backward_follows_create_graph(torch, create_graph):
    def run(M):
        seen = {}

        class Probe(M.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x * 2

            @staticmethod
            def backward(ctx, grad):
                seen["enabled"] = M.is_grad_enabled()
                return grad * 2
        x = M.ones(1, requires_grad=True)
        M.autograd.grad(Probe.apply(x).sum(), x, create_graph=create_graph)
        return seen["enabled"]
    assert run(E) is run(_torch) is create_graph


def test_saved_tensors_read_after_backward_raises(torch):
    message = "after they have already been freed"

    def run(M):
        y = make_exp(M).apply(M.ones(1, requires_grad=True))
        y.sum().backward()
        return y.grad_fn.saved_tensors
    with pytest.raises(RuntimeError, match=message):
        run(_torch)
    with pytest.raises(RuntimeError, match=message):
        run(E)


def test_an_input_returned_as_is_becomes_a_new_output(torch):
    def run(M):
        class Identity(M.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x

            @staticmethod
            def backward(ctx, grad):
                return grad * 3
        x = M.ones(2, requires_grad=True)
        y = Identity.apply(x)
        y.sum().backward()
        return y is x, y.grad_fn.name(), arr(x.grad)
    ours, theirs = run(E), run(_torch)
    assert ours[:2] == theirs[:2] == (False, "IdentityBackward")
    np.testing.assert_allclose(ours[2], theirs[2])
