"""The rounding floor of an input whose coordinates are exactly 0.

A bias initialised to zeros (attention's in_proj_bias, by default) is
differenced on steps of 2**-11, but the noise floor moved each coordinate in
proportion to its own size: by nothing. The gradient with respect to the
key bias is zero in exact arithmetic (softmax does not change when every
logit of a row moves alike), so its second-order entries are the rounding
of terms that cancel: their finite differences over 2**-11 were 6e-13 with
an error estimate of 2e-14, and the precise second-order check of a correct
attention failed ("only 19 of 37 nonzero entries differ"). Now a zero
coordinate moves on the scale its steps are taken at."""
import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="PyTorch is not installed (pip install torch==2.13.0)")

from adcheck.gradcheck import check  # noqa: E402

D = 6


def _weights():
    g = torch.Generator().manual_seed(0)
    return [torch.randn(D, D, dtype=torch.float64, generator=g) / 3 for _ in range(3)]


def _softmax(c: float):
    """softmax whose double backward is off by ``c`` (relative) on the diagonal."""
    class Softmax(torch.autograd.Function):
        @staticmethod
        def forward(ctx, s):
            ctx.save_for_backward(s)
            return torch.softmax(s, -1)

        @staticmethod
        def backward(ctx, g):
            (s,) = ctx.saved_tensors
            p = torch.softmax(s, -1)
            gs = p * (g - (g * p).sum(-1, keepdim=True))
            return gs + c * (s - s.detach()) * gs.detach().abs().mean()
    return Softmax.apply


def _attention(c: float):
    wq, wk, wv = _weights()
    softmax = _softmax(c)

    def attention(x, b):
        q, k, v = x @ wq.T + b[:D], x @ wk.T + b[D:2 * D], x @ wv.T + b[2 * D:]
        return softmax(q @ k.transpose(-1, -2) / D ** 0.5) @ v
    return attention


def _inputs():
    x = torch.tensor(np.random.default_rng(1).standard_normal((2, 3, D)), requires_grad=True)
    return x, torch.zeros(3 * D, dtype=torch.float64, requires_grad=True)


def test_the_key_bias_gradient_is_rounding_of_zero():
    # the premise, independently: softmax's invariance makes the key bias's
    # gradient 0 up to rounding whatever the point, so its derivatives are 0 too
    x, b = _inputs()
    (gb,) = torch.autograd.grad(_attention(0.0)(x, b).sum(), b)
    assert np.abs(gb[D:2 * D].numpy()).max() < 1e-14
    assert np.abs(gb.numpy()).max() > 1e-2


def test_attention_with_zero_biases_passes_at_second_order():
    report = check(_attention(0.0), _inputs(), order=2, precise=True, seed=0)
    assert report.passed, str(report)


@pytest.mark.parametrize("c", [1e-6, 1e-8])
def test_a_wrong_double_backward_there_still_fails(c):
    report = check(_attention(c), _inputs(), order=2, precise=True, seed=0)
    assert not report.passed
    assert any(f.check == "reverse" and f.order == 2 for f in report.failures)


def test_torch_multihead_attention_passes_at_second_order():
    torch.manual_seed(0)
    attention = torch.nn.MultiheadAttention(D, 2, batch_first=True).double()
    assert not attention.in_proj_bias.detach().any()   # (zeros: torch's initialisation)

    def self_attention(x):
        return attention(x, x, x)[0]
    x = torch.tensor(np.random.default_rng(2).standard_normal((2, 3, D)), requires_grad=True)
    # torch's own gradgradcheck passes it (at its fixed tolerances)
    params = tuple(attention.parameters())

    def of_all(x, *ps):
        return torch.func.functional_call(attention, dict(zip(
            (n for n, _ in attention.named_parameters()), ps)), (x, x, x))[0]
    assert torch.autograd.gradgradcheck(of_all, (x, *[p.detach().requires_grad_() for p in params]))
    with pytest.warns(UserWarning, match="the same tensor is passed more than once"):
        report = check(attention, (x, x, x), order=2, precise=True, seed=0)
    assert report.passed, str(report)
