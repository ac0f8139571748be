"""torch's weight_norm has a wrong double backward in v (torch 2.13, CPU), and
adcheck's second-order check says so.

Found checking `nn.utils.parametrizations.weight_norm(nn.Linear(4, 3))` with
`adcheck check` as written: gradgrad FAIL in `original1` (v). The evidence,
kept here, is independent of adcheck: the fused op (`torch._weight_norm`,
whose node is WeightNormInterfaceBackward0) and the same formula written in
elementary ops (v * g / ||v|| per row) agree in value and first derivative;
their second derivatives in v differ, and central differences of the first
derivative side with the elementary ops. torch's own gradgradcheck fails the
fused op too.
"""
import pytest

torch = pytest.importorskip("torch", reason="PyTorch is not installed (pip install torch==2.13.0)")

from adcheck.gradcheck import check, gradgradcheck  # noqa: E402


def fused(v, g):
    return torch._weight_norm(v, g, 0)


def elementary(v, g):
    return v * (g / v.norm(dim=1, keepdim=True))


def _point():
    gen = torch.Generator().manual_seed(0)
    v = torch.randn(3, 4, dtype=torch.float64, generator=gen)
    g = torch.randn(3, 1, dtype=torch.float64, generator=gen)
    gy = torch.randn(3, 4, dtype=torch.float64, generator=gen)
    w = torch.randn(3, 4, dtype=torch.float64, generator=gen)
    return v, g, gy, w


def _first(f, v, g, gy, create_graph=False):
    """The vjp in v at grad_output gy."""
    v = v.detach().clone().requires_grad_()
    (dv,) = torch.autograd.grad(f(v, g), v, gy, create_graph=create_graph)
    return v, dv


def _second(f, v, g, gy, w):
    """d/dv of <w, vjp_v(gy)>: the second derivative along w, by AD."""
    v, dv = _first(f, v, g, gy, create_graph=True)
    (ddv,) = torch.autograd.grad((dv * w).sum(), v)
    return ddv


def _second_by_differences(f, v, g, gy, w, h=1e-6):
    out = torch.zeros_like(v)
    for k in range(v.numel()):
        e = torch.zeros_like(v).reshape(-1)
        e[k] = h
        e = e.reshape(v.shape)
        up = (_first(f, v + e, g, gy)[1] * w).sum()
        down = (_first(f, v - e, g, gy)[1] * w).sum()
        out.reshape(-1)[k] = (up - down) / (2 * h)
    return out


def test_the_fused_double_backward_in_v_is_wrong_and_the_elementary_one_right():
    v, g, gy, w = _point()
    assert torch.allclose(fused(v, g), elementary(v, g), rtol=1e-14, atol=0)
    assert torch.allclose(_first(fused, v, g, gy)[1], _first(elementary, v, g, gy)[1],
                          rtol=1e-13, atol=1e-15)
    by_differences = _second_by_differences(elementary, v, g, gy, w)
    assert torch.allclose(_second(elementary, v, g, gy, w), by_differences, atol=1e-7)
    assert (_second(fused, v, g, gy, w) - by_differences).abs().max() > 1e-2


def test_adcheck_fails_the_fused_op_in_v_and_passes_the_elementary_one():
    v, g, _, _ = _point()
    inputs = (v.clone().requires_grad_(), g.clone().requires_grad_())
    report = check(fused, inputs, order=2)
    assert not report.passed
    assert {r.in_idx for r in report.failures} == {0}
    inputs = (v.clone().requires_grad_(), g.clone().requires_grad_())
    assert gradgradcheck(elementary, inputs)
