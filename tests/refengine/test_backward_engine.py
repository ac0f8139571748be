"""The backward engine, autograd.grad, complex gradients and the README's one-liner.

Expectations come from torch (the same program run on both modules) or from
calculus written out in the test.
"""
from __future__ import annotations

import subprocess
import sys
import warnings

import numpy as np
import pytest

import adcheck.refengine as E
from engine_arrays import arr, close

grad = E.autograd.grad


# ----- the backward engine ---------------------------------------------------

def test_backward_of_a_scalar_gives_the_gradient():
    x = E.tensor([1.0, -2.0, 3.0], requires_grad=True)
    (x ** 3).sum().backward()
    close(x.grad, 3 * np.array([1.0, -2.0, 3.0]) ** 2)


def test_backward_with_a_gradient_is_a_vector_jacobian_product():
    x = E.tensor([1.0, 2.0], requires_grad=True)
    v = E.tensor([0.5, -1.0])
    (x * x).backward(v)
    close(x.grad, [0.5 * 2 * 1.0, -1.0 * 2 * 2.0])


def test_implicit_gradient_only_for_scalar_outputs(torch):
    with pytest.raises(RuntimeError, match="implicitly created only for scalar outputs"):
        (torch.ones(2, requires_grad=True) * 2).backward()
    with pytest.raises(RuntimeError, match="implicitly created only for scalar outputs"):
        (E.ones(2, requires_grad=True) * 2).backward()


def test_implicit_gradient_refused_for_a_complex_scalar(torch):
    with pytest.raises(RuntimeError, match="real scalar outputs"):
        (torch.ones(1, dtype=torch.complex64, requires_grad=True) * 2).sum().backward()
    with pytest.raises(RuntimeError, match="real scalar outputs"):
        (E.ones(1, dtype=E.complex64, requires_grad=True) * 2).sum().backward()


def test_one_element_non_scalar_output_gets_an_implicit_gradient(torch):
    def run(M):
        x = M.tensor([3.0], requires_grad=True)
        (x * x).backward()
        return arr(x.grad)
    np.testing.assert_allclose(run(E), run(torch))


def test_gradients_accumulate_across_two_backwards():
    x = E.tensor([1.0, 2.0], requires_grad=True)
    (x * x).sum().backward()
    first = x.grad
    (x * 3).sum().backward()
    close(x.grad, [2.0 + 3.0, 4.0 + 3.0])
    assert x.grad is first     # accumulated in place, as PyTorch does without create_graph


def test_grad_can_be_reset_to_none_and_assigned():
    x = E.tensor([1.0, 2.0], requires_grad=True)
    (x * x).sum().backward()
    x.grad = None
    (x * 5).sum().backward()
    close(x.grad, [5.0, 5.0])
    x.grad = E.zeros(2)
    close(x.grad, [0.0, 0.0])


def test_assigned_grad_must_match_shape_and_dtype(torch):
    for M in (torch, E):
        x = M.ones(2, requires_grad=True)
        with pytest.raises(RuntimeError):
            x.grad = M.ones(3)
        with pytest.raises(RuntimeError):
            x.grad = M.ones(2, dtype=M.float64)


def test_broadcast_gradients_are_summed_back_to_each_input(torch):
    def run(M):
        a = M.tensor([[1.0], [2.0], [3.0]], requires_grad=True)          # (3, 1)
        b = M.tensor([0.5, -1.0, 2.0, 4.0], requires_grad=True)          # (4,)
        c = M.tensor(1.5, requires_grad=True)                            # ()
        (a * b * c + b).sum().backward()
        return [arr(t.grad) for t in (a, b, c)]
    for ours, theirs in zip(run(E), run(torch)):
        assert ours.shape == theirs.shape
        np.testing.assert_allclose(ours, theirs, rtol=1e-6)


def test_each_gradient_has_the_dtype_of_its_input(torch):
    def run(M):
        a = M.tensor([1.0, 2.0], requires_grad=True)
        b = M.tensor([3.0, 4.0], dtype=M.float64, requires_grad=True)
        z = M.tensor([1 + 1j, 2j], requires_grad=True)
        ((a * b).sum() + (z * a).abs().sum()).backward()
        return [(repr(t.grad.dtype).split(".")[-1], arr(t.grad)) for t in (a, b, z)]
    for (ours_dtype, ours), (their_dtype, theirs) in zip(run(E), run(torch)):
        assert ours_dtype == their_dtype
        np.testing.assert_allclose(ours, theirs, rtol=1e-5)


def test_complex_gradient_is_projected_to_real_for_a_real_input(torch):
    def run(M):
        x = M.tensor([1.0, -2.0], requires_grad=True)
        w = M.tensor([1 + 2j, 0.5 - 1j])
        (x * w).abs().sum().backward()
        return x.grad
    ours, theirs = run(E), run(torch)
    assert ours.dtype is E.float32
    close(ours, theirs)
    # by hand: |x w| = |x| |w|, so the derivative is sign(x) |w|
    close(ours, np.sign([1.0, -2.0]) * np.abs([1 + 2j, 0.5 - 1j]))


def test_second_backward_raises_after_saved_tensors_are_freed(torch):
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        y = (torch.ones(2, requires_grad=True) * torch.ones(2, requires_grad=True)).sum()
        y.backward()
        y.backward()
    x = E.tensor([1.0, 2.0], requires_grad=True)
    y = (x * x).sum()
    y.backward()
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        y.backward()


def test_saved_tensor_access_after_backward_raises(torch):
    t = torch.ones(2, requires_grad=True)
    ty = t.exp()
    ty.sum().backward()
    with pytest.raises(RuntimeError, match="after they have already been freed"):
        _ = ty.grad_fn._saved_result
    x = E.ones(2, requires_grad=True)
    y = x.exp()
    y.sum().backward()
    with pytest.raises(RuntimeError, match="after they have already been freed"):
        _ = y.grad_fn._saved_result


def test_saved_tensor_modified_in_place_raises_at_backward(torch):
    message = "modified by an inplace operation"
    t = torch.ones(2, requires_grad=True)
    tb = (t * 1).exp()
    tb.add_(1)
    with pytest.raises(RuntimeError, match=message):
        tb.sum().backward()
    x = E.ones(2, requires_grad=True)
    b = (x * 1).exp()            # exp saves its result
    b.add_(1)
    with pytest.raises(RuntimeError, match=message):
        b.sum().backward()


def test_retain_graph_allows_a_second_backward():
    x = E.tensor([1.0, 2.0], requires_grad=True)
    y = (x * x).sum()
    y.backward(retain_graph=True)
    y.backward()
    close(x.grad, [4.0, 8.0])


def test_graph_without_saved_tensors_can_be_walked_twice(torch):
    # PyTorch only raises when a freed saved tensor is needed: x + 1 saves none
    def run(M):
        x = M.tensor([1.0, 2.0], requires_grad=True)
        y = (x + 1).sum()
        y.backward()
        y.backward()
        return arr(x.grad)
    np.testing.assert_allclose(run(E), run(torch))


def test_backward_inputs_restricts_accumulation(torch):
    def run(M):
        x = M.tensor([1.0, 2.0], requires_grad=True)
        y = M.tensor([3.0, 4.0], requires_grad=True)
        (x * y).sum().backward(inputs=[x])
        return arr(x.grad), y.grad
    (ours_x, ours_y), (theirs_x, theirs_y) = run(E), run(torch)
    np.testing.assert_allclose(ours_x, theirs_x)
    assert ours_y is None and theirs_y is None


def test_backward_inputs_can_name_a_non_leaf(torch):
    def run(M):
        x = M.tensor([1.0, 2.0], requires_grad=True)
        h = x * x
        (h * 3).sum().backward(inputs=[h])
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            h_grad = h.grad                 # populated: torch does not warn
        return arr(h_grad), x.grad, [w.category for w in caught]
    (ours_h, ours_x, ours_warn), (theirs_h, theirs_x, theirs_warn) = run(E), run(torch)
    np.testing.assert_allclose(ours_h, theirs_h)
    assert ours_x is None and theirs_x is None
    assert ours_warn == theirs_warn


def test_autograd_backward_with_several_tensors():
    x = E.tensor([1.0, 2.0], requires_grad=True)
    a, b = x * 2, x * x
    E.autograd.backward([a, b], [E.ones(2), E.tensor([1.0, 10.0])])
    close(x.grad, [2.0 + 2.0, 2.0 + 40.0])


def test_autograd_backward_with_inputs(torch):
    def run(M):
        x = M.tensor([1.0, 2.0], requires_grad=True)
        y = M.tensor([3.0, 4.0], requires_grad=True)
        M.autograd.backward((x * y).sum(), inputs=[y])
        return x.grad, arr(y.grad)
    (ours_x, ours_y), (their_x, their_y) = run(E), run(torch)
    assert ours_x is None and their_x is None
    np.testing.assert_allclose(ours_y, their_y)


def test_backward_with_empty_inputs_is_refused(torch):
    message = "inputs.? argument to .?backward\\(\\).? cannot be empty"
    with pytest.raises(RuntimeError, match=message):
        (torch.ones(1, requires_grad=True) * 2).sum().backward(inputs=[])
    with pytest.raises(RuntimeError, match=message):
        (E.ones(1, requires_grad=True) * 2).sum().backward(inputs=[])


def test_backward_on_a_tensor_that_does_not_require_grad(torch):
    with pytest.raises(RuntimeError, match="does not require grad"):
        torch.ones(2).sum().backward()
    with pytest.raises(RuntimeError, match="does not require grad"):
        E.ones(2).sum().backward()


def test_gradient_shape_mismatch_raises(torch):
    with pytest.raises(RuntimeError, match="Mismatch in shape"):
        (torch.ones(2, requires_grad=True) * 2).backward(torch.ones(3))
    with pytest.raises(RuntimeError, match="Mismatch in shape"):
        (E.ones(2, requires_grad=True) * 2).backward(E.ones(3))


# ----- autograd.grad -----------------------------------------------------------

def test_grad_returns_a_tuple_and_leaves_dot_grad_alone():
    x = E.tensor([1.0, 2.0], requires_grad=True)
    result = grad((x * x).sum(), x)
    assert isinstance(result, tuple) and len(result) == 1
    close(result[0], [2.0, 4.0])
    assert x.grad is None


def test_grad_with_grad_outputs_and_several_inputs():
    x = E.tensor([1.0, 2.0], requires_grad=True)
    y = E.tensor([3.0, 5.0], requires_grad=True)
    gx, gy = grad([x * y], [x, y], grad_outputs=[E.tensor([1.0, -1.0])])
    close(gx, [3.0, -5.0])
    close(gy, [1.0, -2.0])


def test_grad_unused_input_raises_unless_allow_unused(torch):
    with pytest.raises(RuntimeError, match="not have been used in the graph"):
        t = torch.ones(2, requires_grad=True)
        torch.autograd.grad((t * 2).sum(), [t, torch.ones(2, requires_grad=True)])
    x, unused = E.ones(2, requires_grad=True), E.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match="not have been used in the graph"):
        grad((x * 2).sum(), [x, unused])
    gx, gu = grad((x * 2).sum(), [x, unused], allow_unused=True)
    close(gx, [2.0, 2.0])
    assert gu is None


def test_grad_materialize_grads_gives_zeros_for_unused(torch):
    t, tu = torch.ones(2, requires_grad=True), torch.ones(3, requires_grad=True)
    expected = torch.autograd.grad((t * 2).sum(), [t, tu], materialize_grads=True)[1]
    x, unused = E.ones(2, requires_grad=True), E.ones(3, requires_grad=True)
    gx, gu = grad((x * 2).sum(), [x, unused], materialize_grads=True)
    close(gx, [2.0, 2.0])
    close(gu, expected)
    assert tuple(gu.shape) == (3,)


def test_materialize_grads_with_allow_unused_false_is_refused(torch):
    t = torch.ones(2, requires_grad=True)
    with pytest.raises(ValueError):
        torch.autograd.grad(t.sum(), t, allow_unused=False, materialize_grads=True)
    x = E.ones(2, requires_grad=True)
    with pytest.raises(ValueError):
        grad(x.sum(), x, allow_unused=False, materialize_grads=True)


def test_is_grads_batched_gives_the_jacobian_rows():
    x = E.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = x * x
    jac, = grad(y, x, grad_outputs=E.eye(3), is_grads_batched=True)
    close(jac, np.diag([2.0, 4.0, 6.0]))


def test_is_grads_batched_matches_torch_on_a_matrix_function(torch):
    def run(M):
        w = M.tensor([[1.0, 2.0], [3.0, -1.0], [0.5, 0.5]])
        x = M.tensor([0.3, -0.7], requires_grad=True)
        v = M.tensor([[1.0, 0.0, 2.0], [0.0, 1.0, -1.0]])
        return arr(M.autograd.grad((w @ x).tanh(), x, grad_outputs=v, is_grads_batched=True)[0])
    np.testing.assert_allclose(run(E), run(torch), rtol=1e-5)


def test_grad_does_not_free_the_graph_with_retain_graph():
    x = E.tensor([2.0], requires_grad=True)
    y = (x ** 3).sum()
    first, = grad(y, x, retain_graph=True)
    second, = grad(y, x)
    close(first, [12.0])
    close(second, [12.0])
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        grad(y, x)


def test_grad_with_respect_to_an_intermediate_tensor():
    x = E.tensor([1.0, 2.0], requires_grad=True)
    h = x * x
    gh, = grad((h * E.tensor([3.0, 5.0])).sum(), h)
    close(gh, [3.0, 5.0])
    assert x.grad is None


def test_grad_of_several_outputs_sums_their_contributions():
    x = E.tensor([1.0, 2.0], requires_grad=True)
    gx, = grad([(x * x).sum(), (x * 3).sum()], x)
    close(gx, [2.0 + 3.0, 4.0 + 3.0])


def test_complex_grad_output_for_a_real_output_is_refused(torch):
    message = "both grad_output and output are required to have the same dtype"
    t = torch.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match=message):
        torch.autograd.grad(t * 2, t, grad_outputs=torch.ones(2, dtype=torch.complex64))
    x = E.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match=message):
        grad(x * 2, x, grad_outputs=E.ones(2, dtype=E.complex64))


def test_create_graph_keeps_the_graph_unless_retain_graph_is_false():
    x = E.tensor([1.0, 2.0], requires_grad=True)
    y = (x * x).sum()
    grad(y, x, create_graph=True)
    close(grad(y, x, create_graph=True, retain_graph=False)[0], [2.0, 4.0])
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        grad(y, x)


def test_retained_grad_accumulates_across_backwards():
    x = E.ones(2, requires_grad=True)
    y = x * 2
    y.retain_grad()
    z = (y * 3).sum()
    z.backward(retain_graph=True)
    z.backward()
    close(y.grad, [6.0, 6.0])
    close(x.grad, [12.0, 12.0])


def test_higher_order_gradients_through_create_graph():
    x = E.tensor([1.5, -0.5], requires_grad=True)
    y = (x ** 4).sum()
    g1, = grad(y, x, create_graph=True)
    assert g1.requires_grad
    g2, = grad(g1.sum(), x, create_graph=True)
    g3, = grad(g2.sum(), x)
    v = np.array([1.5, -0.5])
    close(g1, 4 * v ** 3)
    close(g2, 12 * v ** 2)
    close(g3, 24 * v)


@pytest.mark.filterwarnings("ignore:Using backward\\(\\) with create_graph=True:UserWarning")
def test_create_graph_backward_gives_a_differentiable_grad(torch):
    def run(M):
        x = M.tensor([0.3, 1.2], requires_grad=True)
        x.sin().sum().backward(create_graph=True)
        g = x.grad
        x.grad = None
        (g * g).sum().backward()
        return arr(x.grad)
    np.testing.assert_allclose(run(E), run(torch), rtol=1e-5)


def test_mixed_second_derivative(torch):
    def run(M):
        x = M.tensor([0.7], requires_grad=True)
        y = M.tensor([-1.3], requires_grad=True)
        gx, = M.autograd.grad((x * y.exp()).sum(), x, create_graph=True)
        return arr(M.autograd.grad(gx.sum(), y)[0])
    np.testing.assert_allclose(run(E), np.exp([-1.3]), rtol=1e-6)
    np.testing.assert_allclose(run(E), run(torch), rtol=1e-6)


# ----- complex numbers: the conjugate Wirtinger convention ------------------------

def test_seed_example_f_of_z_equals_c_times_z():
    # seed: f(z) = c * z with c real, grad_output 1: dL/dz* = 1 * 0 + 1 * c = c
    c = 2.5
    z = E.tensor([1 + 2j, -0.5 + 0.25j], requires_grad=True)
    (c * z).backward(E.ones(2, dtype=E.complex64))
    close(z.grad, [c, c])


def test_holomorphic_gradient_is_the_conjugate_derivative_times_grad_output():
    # dL/dz* = grad_output * conj(f'(z)) for holomorphic f
    zv = np.array([0.3 + 0.4j, -1.0 + 0.5j], dtype=np.complex64)
    v = np.array([1.0 - 1.0j, 0.5 + 2.0j], dtype=np.complex64)
    z = E.tensor(zv, requires_grad=True)
    (z * z).backward(E.tensor(v))
    close(z.grad, v * np.conj(2 * zv))


def test_real_loss_of_a_complex_input_squared_modulus():
    # L = |z|^2 = z conj(z): dL/dz* = z, and PyTorch reports 2 dL/dz* = 2 z
    zv = np.array([1.0 + 2.0j, -3.0 + 0.5j], dtype=np.complex64)
    z = E.tensor(zv, requires_grad=True)
    (z * z.conj()).real.sum().backward()
    close(z.grad, 2 * zv)


COMPLEX_FUNCTIONS = {
    "abs": lambda M, z, w: z.abs().sum(),
    "mul_conj": lambda M, z, w: (z * w.conj()).real.sum(),
    "exp_imag": lambda M, z, w: z.exp().imag.sum(),
    "sin_abs": lambda M, z, w: z.sin().abs().sum(),
    "angle": lambda M, z, w: z.angle().sum(),
    "div": lambda M, z, w: (z / w).real.sum(),
    "matmul": lambda M, z, w: (z.unsqueeze(0) @ w.unsqueeze(1)).abs().sum(),
}


@pytest.mark.parametrize("name", list(COMPLEX_FUNCTIONS))
def test_complex_gradients_match_torch(torch, name):
    def run(M):
        z = M.tensor([0.3 + 0.4j, -1.0 + 0.5j, 2.0 - 1.0j], requires_grad=True)
        w = M.tensor([1.0 - 0.5j, 0.25 + 2.0j, -1.5 - 0.5j], requires_grad=True)
        COMPLEX_FUNCTIONS[name](M, z, w).backward()
        return [arr(t.grad) if t.grad is not None else None for t in (z, w)]
    for ours, theirs in zip(run(E), run(torch)):
        if theirs is None:
            assert ours is None
        else:
            np.testing.assert_allclose(ours, theirs, rtol=1e-5, atol=1e-6)


# ----- the one-liner -----------------------------------------------------------

def test_readme_one_liner_prints_the_gradient():
    code = ("import adcheck.refengine as E; x = E.tensor([1., 2.], requires_grad=True); "
            "(x * x).sum().backward(); print(x.grad)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "tensor([2., 4.])\n"
