"""Behaviours the differential fuzzer (tests/fuzz, docs/fuzzing.md) found refengine
getting differently from torch 2.13, one case per class of finding.

Derivatives at singular points and NaN, in-place ops whose operands share
memory, the tensors a backward formula saves (and so which in-place writes
make backward fail), and the texts of errors the programs hit.
"""
from __future__ import annotations

import math
import warnings

import pytest

from adcheck.conformance.case import TORCH_BEHAVIOUR, case

NAN, INF = math.nan, math.inf


def _grads(E, f, *values, grad=None, create_graph=False):
    xs = [E.tensor(v, dtype=E.float64, requires_grad=True) for v in values]
    out = f(*xs)
    gs = E.autograd.grad(out, xs, grad if grad is not None else E.ones_like(out),
                         create_graph=create_graph)
    return [g.tolist() for g in gs]


def _same(a, b) -> bool:
    """Lists of floats equal, NaN equal to NaN."""
    if isinstance(a, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    return (math.isnan(a) and math.isnan(b)) or a == b


@case("maximum and minimum give half the gradient on a tie, none to the operand that loses, "
      "all of it to both where one is NaN; a masked inf gradient is 0",
      source=TORCH_BEHAVIOUR)
def maximum_minimum_gradient_with_ties_nan_and_inf(E):
    a, b = [1.0, 2.0, NAN, 3.0], [1.0, 3.0, 0.0, NAN]
    g = E.tensor([4.0, INF, 1.0, 2.0], dtype=E.float64)
    assert _same(_grads(E, E.maximum, a, b, grad=g), [[2.0, 0.0, 1.0, 2.0], [2.0, INF, 1.0, 2.0]])
    assert _same(_grads(E, E.minimum, a, b, grad=g), [[2.0, INF, 1.0, 2.0], [2.0, 0.0, 1.0, 2.0]])


@case("sign of NaN is 0 (so is sgn of a real NaN); angle of a real NaN is NaN and of an "
      "integer a float of the default dtype", source=TORCH_BEHAVIOUR)
def sign_and_angle_of_nan(E):
    x = E.tensor([NAN, -2.0, 0.0, 3.0], dtype=E.float64)
    assert E.sign(x).tolist() == [0.0, -1.0, 0.0, 1.0]
    assert E.sgn(x).tolist() == [0.0, -1.0, 0.0, 1.0]
    assert _same(E.angle(x).tolist(), [NAN, math.pi, 0.0, 0.0])
    assert E.angle(E.tensor([-1, 2])).dtype == E.float32


@case("atan2's gradient at (0, 0) is 0 for both inputs; acosh's derivative below -1 (where "
      "acosh is NaN) is (x^2 - 1)^(-1/2), a number", source=TORCH_BEHAVIOUR)
def derivatives_at_singular_points(E):
    assert _grads(E, E.atan2, [0.0, 1.0], [0.0, 2.0]) == [[0.0, 0.4], [0.0, -0.2]]
    (g,) = _grads(E, E.acosh, [-2.0, 2.0])
    assert g[0] == pytest.approx(3 ** -0.5, rel=1e-14) and g[1] == pytest.approx(3 ** -0.5)


@case("x ** 0.0 (a number exponent 0) has a constant zero derivative with no graph, in both "
      "modes, even where x is 0 or its tangent is inf", source=TORCH_BEHAVIOUR)
def pow_zero_exponent_has_a_constant_zero_derivative(E):
    x = E.tensor([0.0, 2.0], dtype=E.float64, requires_grad=True)
    (g,) = E.autograd.grad((x ** 0.0).sum(), x, create_graph=True)
    assert g.tolist() == [0.0, 0.0] and not g.requires_grad
    fw = E.autograd.forward_ad
    with fw.dual_level():
        d = fw.make_dual(E.tensor([0.0, 2.0], dtype=E.float64),
                         E.tensor([INF, 1.0], dtype=E.float64))
        assert fw.unpack_dual(d ** 0.0).tangent.tolist() == [0.0, 0.0]


@case("x.div_(x) in forward mode has tangent 0: the formula reads the written values",
      source=TORCH_BEHAVIOUR)
def div_inplace_by_itself_tangent(E):
    fw = E.autograd.forward_ad
    with fw.dual_level():
        x = fw.make_dual(E.tensor([0.5, 2.0], dtype=E.float64),
                         E.tensor([1.0, 1.0], dtype=E.float64))
        y = x * 1
        y.div_(y)
        assert fw.unpack_dual(y).tangent.tolist() == [0.0, 0.0]


@case("div saves its inputs, not its result (writing to the quotient in place leaves "
      "backward working); cumprod saves its result (writing to it makes backward fail)",
      source=TORCH_BEHAVIOUR)
def what_div_and_cumprod_save(E):
    a = E.tensor([1.5, -2.0], dtype=E.float64, requires_grad=True)
    q = a / (a * 2 + 1)
    q.sin_()
    q.sum().backward()
    assert a.grad is not None
    c = E.cumprod(E.tensor([0.5, -1.5, 2.0], dtype=E.float64, requires_grad=True), 0)
    r = c.reciprocal()
    c.sqrt_()
    with pytest.raises(RuntimeError, match="output 0 of Cumprod, is at version 1; expected "
                                           "version 0 instead"):
        r.sum().backward()


@case("an in-place op whose other operand shares some but not all of the written memory "
      "is refused; the same memory read whole, or disjoint memory, is allowed",
      source=TORCH_BEHAVIOUR)
def inplace_with_partially_overlapping_operand_refused(E):
    text = ("unsupported operation: some elements of the input tensor and the written-to "
            "tensor refer to a single memory location. Please clone() the tensor before "
            "performing the operation.")
    x = E.ones(2, 3)
    with pytest.raises(RuntimeError) as info:
        x.mul_(x[0])
    assert str(info.value) == text
    y = E.arange(4.0).view(2, 2)
    with pytest.raises(RuntimeError, match="some elements of the input tensor"):
        y.add_(y.t())
    z = E.arange(3.0)
    with pytest.raises(RuntimeError, match="some elements of the input tensor"):
        z[1:].copy_(z[:2])
    z.copy_(z)
    w = E.ones(2, 2)
    w[0].add_(w[1])
    w.add_(w.view(2, 2))
    assert w.tolist() == [[4.0, 4.0], [2.0, 2.0]]


@case("detach_() drops the forward-mode tangent; on a view it is refused with torch's whole "
      "message; reading .grad of a view whose grad_fn cannot be rebuilt gives None",
      source=TORCH_BEHAVIOUR)
def detach_inplace_and_grad_reading(E):
    fw = E.autograd.forward_ad
    with fw.dual_level():
        y = fw.make_dual(E.ones(2, dtype=E.float64), E.ones(2, dtype=E.float64)) * 2
        y.detach_()
        assert fw.unpack_dual(y).tangent is None
    with pytest.raises(RuntimeError) as info:
        (E.ones(3, requires_grad=True) * 1)[1:].detach_()
    assert str(info.value).startswith("Can't detach views in-place. Use detach() instead. If "
                                      "you are using DistributedDataParallel (DDP)")
    assert str(info.value).endswith("Optimizer.zero_grad() function in torch/optim/optimizer.py "
                                    "as the solution.")
    base = E.ones(3, dtype=E.float64, requires_grad=True) * 1
    with E.no_grad():
        view = base[1:]
    base.mul_(2)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert view.grad is None


@case("the inference-tensor errors in torch's words", source=TORCH_BEHAVIOUR)
def inference_tensor_messages(E):
    name = E.__name__.rsplit(".", 1)[-1]
    with E.inference_mode():
        t = E.ones(2)
    with pytest.raises(RuntimeError) as info:
        t.mul_(2)
    assert str(info.value) == (
        "Inplace update to inference tensor outside InferenceMode is not allowed.You can make a "
        "clone to get a normal tensor before doing inplace update.See "
        "https://github.com/pytorch/rfcs/pull/17 for more details.")
    with pytest.raises(RuntimeError) as info:
        E.ones(2, requires_grad=True) * t
    assert str(info.value) == (
        "Inference tensors cannot be saved for backward. Please do not use Tensors created in "
        "inference mode in computation tracked by autograd. To work around this, you can make "
        f"a clone to get a normal tensor and use it in autograd, or use `{name}.no_grad()` "
        f"instead of `{name}.inference_mode()`.")


@case("atan2's tangent at (0, 0) is NaN (forward mode keeps the plain quotient, where "
      "backward gives 0)", source=TORCH_BEHAVIOUR)
def atan2_tangent_at_the_origin(E):
    fw = E.autograd.forward_ad
    with fw.dual_level():
        d = fw.make_dual(E.tensor([0.0, 1.0], dtype=E.float64),
                         E.tensor([1.0, 1.0], dtype=E.float64))
        assert _same(fw.unpack_dual(E.atan2(d, d)).tangent.tolist(), [NAN, 0.0])


@case("a zero derivative (sign, floor, round, angle and sgn of a real tensor) is zeros with no "
      "graph, also for an inf gradient or tangent; relu and clamp pass the gradient or "
      "tangent only where the input passes (0 elsewhere, whatever it is)",
      source=TORCH_BEHAVIOUR)
def zero_and_masked_derivatives(E):
    x = E.tensor([1.0, NAN, -2.0], dtype=E.float64, requires_grad=True)
    g_in = E.tensor([INF, 1.0, 2.0], dtype=E.float64, requires_grad=True)
    for f in (E.sign, E.floor, E.round, E.angle, E.sgn):
        (g,) = E.autograd.grad(f(x), x, g_in, create_graph=True)
        # (+ 0: torch's sgn gives a ZeroTensor, which has no values to list)
        assert (g + 0).tolist() == [0.0, 0.0, 0.0] and not g.requires_grad, f.__name__
    (g,) = E.autograd.grad(E.relu(x), x, E.tensor([2.0, 1.0, INF], dtype=E.float64))
    assert g.tolist()[0] == 2.0 and g.tolist()[2] == 0.0
    (g,) = E.autograd.grad(E.clamp(x, -0.5, 0.5), x, E.tensor([INF, INF, 1.0], dtype=E.float64))
    assert g.tolist() == [0.0, 0.0, 0.0]
    fw = E.autograd.forward_ad
    with fw.dual_level():
        d = fw.make_dual(E.tensor([1.0, -1.0, 0.25], dtype=E.float64),
                         E.tensor([NAN, INF, 2.0], dtype=E.float64))
        assert fw.unpack_dual(E.sign(d)).tangent.tolist() == [0.0, 0.0, 0.0]
        assert fw.unpack_dual(E.relu(d)).tangent.tolist()[1:] == [0.0, 2.0]
        assert fw.unpack_dual(E.clamp(d, -0.5, 0.5)).tangent.tolist() == [0.0, 0.0, 2.0]


@case("an in-place op on an inference tensor outside inference mode writes its values (with "
      "no graph) and then raises; inside inference mode detach_() leaves a tensor's history "
      "as it is", source=TORCH_BEHAVIOUR)
def inference_tensor_inplace_writes_then_raises(E):
    with E.inference_mode():
        t = E.ones(2, dtype=E.float64) * 2
    w = E.tensor([3.0, 3.0], dtype=E.float64, requires_grad=True)
    with pytest.raises(RuntimeError, match="Inplace update to inference tensor outside "
                                           "InferenceMode is not allowed"):
        t.mul_(w)
    assert t.tolist() == [6.0, 6.0] and not t.requires_grad and t.grad_fn is None
    x = E.ones(2, requires_grad=True) * 1
    with E.inference_mode():
        assert x.detach_() is x
    assert x.requires_grad and x.grad_fn is not None


@case("xlogy's derivative in self is xlogy(grad, other): a zero gradient or tangent gives 0 "
      "where log(other) is NaN or -inf; in other it is grad * self / other",
      source=TORCH_BEHAVIOUR)
def xlogy_derivatives(E):
    s = E.tensor([-2.0, 0.0, 1.5], dtype=E.float64, requires_grad=True)
    o = E.tensor([0.0, -1.0, 2.0], dtype=E.float64, requires_grad=True)
    gs, go = E.autograd.grad(E.xlogy(s, o), [s, o], E.tensor([0.0, 1.0, 3.0], dtype=E.float64))
    assert gs.tolist() == [0.0, 0.0, 3 * math.log(2.0)]
    assert _same(go.tolist(), [NAN, -0.0, 2.25])
    fw = E.autograd.forward_ad
    with fw.dual_level():
        a = fw.make_dual(E.tensor([-2.0, 0.5], dtype=E.float64), E.tensor([0.0, 1.0], dtype=E.float64))
        b = fw.make_dual(E.tensor([0.0, 2.0], dtype=E.float64), E.tensor([1.0, 0.0], dtype=E.float64))
        assert fw.unpack_dual(E.xlogy(a, b)).tangent.tolist() == [-math.inf, math.log(2.0)]


@case("the derivative of a real base's complex power in the exponent takes the log of the "
      "base as a complex number (log(-2) = log 2 + i pi), not NaN", source=TORCH_BEHAVIOUR)
def real_base_complex_exponent(E):
    x = E.tensor([-0.5, 2.0], dtype=E.float64)
    c = E.tensor([0.5 + 1j, 2 - 1j], dtype=E.complex128, requires_grad=True)
    (g,) = E.autograd.grad(E.pow(x, c), c, E.ones(2, dtype=E.complex128))
    expected = [(complex(xi) ** ci * (math.log(abs(xi)) + (1j * math.pi if xi < 0 else 0)))
                .conjugate() for xi, ci in ((-0.5, 0.5 + 1j), (2.0, 2 - 1j))]
    assert all(abs(a - b) < 1e-12 for a, b in zip(g.tolist(), expected))
    fw = E.autograd.forward_ad
    with fw.dual_level():
        e = fw.make_dual(E.tensor([0.5 + 1j], dtype=E.complex128),
                         E.tensor([1.0 + 0j], dtype=E.complex128))
        t = fw.unpack_dual(E.pow(E.tensor([-0.5], dtype=E.float64), e)).tangent.tolist()[0]
    assert abs(t - expected[0].conjugate()) < 1e-12


@case("a one-element view copied onto itself in forward mode is the same memory, not a "
      "partial overlap: its tangent is kept", source=TORCH_BEHAVIOUR)
def one_element_self_copy_in_forward_mode(E):
    fw = E.autograd.forward_ad
    with fw.dual_level():
        x = fw.make_dual(E.tensor(-0.5, dtype=E.float64), E.tensor(2.0, dtype=E.float64))
        v = x.view(-1)
        v.copy_(v)
        assert fw.unpack_dual(v).tangent.tolist() == [2.0]


@case("the gradient of a product over a slice of one element, where the input holds a zero, "
      "is the incoming gradient itself, with no graph through the input (without a zero it "
      "keeps one); found by the fuzzer at seed 55, program 24598",
      source=TORCH_BEHAVIOUR)
def prod_over_one_element_with_a_zero_has_no_graph(E):
    seen = []
    for values, reduce in (([0.0], lambda x: x.prod()), ([[0.0, 3.0]], lambda x: x.prod(0).sum()),
                           ([2.0], lambda x: x.prod()), ([0.0, 2.0], lambda x: x.prod())):
        x = E.tensor(values, dtype=E.float64, requires_grad=True)
        (g,) = E.autograd.grad(reduce(x), [x], create_graph=True)
        seen.append((g.requires_grad, g.tolist()))
    assert seen == [(False, [1.0]), (False, [[1.0, 1.0]]), (True, [1.0]), (True, [2.0, 0.0])]


@case("std's gradient is grad / (2 std) masked to 0 where std is 0, as torch computes it: "
      "0 at a constant input, and a double backward through it NaN there (found by the "
      "fuzzer at seed 59, program 3791)",
      source=TORCH_BEHAVIOUR)
def std_at_zero_spread_masks_its_gradient_but_not_the_second(E):
    x = E.zeros(3, dtype=E.float64, requires_grad=True)
    (g,) = E.autograd.grad(x.std(), [x], create_graph=True)
    assert g.tolist() == [0.0, 0.0, 0.0]
    # the masked division's own derivative at std = 0 is 0 * inf: NaN reaches x
    # through the std that multiplies the first derivative
    x = E.tensor([-0.385, -1.0, 1.0], dtype=E.float64, requires_grad=True)
    d = x - x
    (g,) = E.autograd.grad((d * x * E.abs(d).std()).sum(), [x], create_graph=True)
    (g * g).sum().backward()
    assert all(math.isnan(v) for v in x.grad.tolist())
    y = E.tensor([1.0, 2.0, 4.0], dtype=E.float64, requires_grad=True)
    (g,) = E.autograd.grad(y.std(), [y], create_graph=True)
    (g * g).sum().backward()
    assert all(math.isfinite(v) for v in y.grad.tolist())


@case("an elementwise result is laid out as torch's TensorIterator lays it out, in the order of "
      "its operands' strides (the first operand that orders two dims decides; broadcast dims "
      "defer), not in C order: the product of a transposed difference and a narrow is "
      "transposed, and its view(-1) raises (found by the fuzzer at seed 61, program 26761)",
      source=TORCH_BEHAVIOUR)
def elementwise_result_follows_its_operands_layout(E):
    b = E.tensor([[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]], dtype=E.float64)
    v3 = b.narrow(1, 0, 2)
    r = (E.ones(2, 2, dtype=E.float64) - v3).t() * v3
    assert r.stride() == (1, 2) and not r.is_contiguous()
    with pytest.raises(RuntimeError, match="view size is not compatible with input tensor's size"):
        r.view(-1)
    assert (v3 * (1 - v3).t()).stride() == (2, 1)      # the narrow comes first: C order
    # three dims: a permuted operand of the result's shape orders them unless the
    # first operand, dense with other strides, does; a broadcast operand defers
    p = E.arange(24, dtype=E.float64).reshape(2, 3, 4).permute(2, 0, 1)
    c = E.ones(4, 2, 3, dtype=E.float64)
    assert (p * c).stride() == (1, 12, 4) and (c * p).stride() == (6, 3, 1)
    assert E.where(p > 3, p, E.zeros(3, dtype=E.float64)).stride() == (1, 12, 4)
    assert E.exp(p[:, :, 1:]).stride() == (1, 8, 4)


@case("the gradient add and sub pass on with alpha 1 is the incoming gradient itself, not "
      "times 1 (torch's maybe_multiply): a complex gradient's NaN imaginary part does not "
      "reach a real operand's gradient (found by the fuzzer at seed 74, program 2698)",
      source=TORCH_BEHAVIOUR)
def add_and_sub_pass_their_gradient_without_multiplying(E):
    g = E.tensor([complex(2.0, NAN)], dtype=E.complex128)
    # another alpha multiplies (as complex numbers: NaN * 0 reaches the real part)
    for f, want in ((lambda z, x: z - x, -2.0), (lambda z, x: z + x, 2.0),
                    (lambda z, x: 1j - x, -2.0), (lambda z, x: E.sub(z, x, alpha=3), NAN)):
        z = E.tensor([complex(1.0, 1.0)], dtype=E.complex128, requires_grad=True)
        x = E.tensor([0.5], dtype=E.float64, requires_grad=True)
        f(z, x).backward(g)
        assert _same(x.grad.tolist(), [want])
