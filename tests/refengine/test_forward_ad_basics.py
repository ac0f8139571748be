"""Forward-mode AD basics: dual levels, make_dual, unpack_dual, tangents.

Expected tangents are derivatives written out (d sin = cos dx ...) or torch's,
from the same program run on torch.
"""
from __future__ import annotations

import numpy as np
import pytest

import adcheck.refengine as E

fwAD = E.autograd.forward_ad

# torch's forward_ad module warns about torch.jit.script on import; not our concern
pytestmark = pytest.mark.filterwarnings("ignore:`torch.jit.script` is deprecated:DeprecationWarning")

try:
    import torch as _torch
except ImportError:  # the oracle is optional: tests that need it skip
    _torch = None




@pytest.fixture(autouse=True)
def _no_level_left_open():
    """Every test starts and must end outside any dual level."""
    yield
    leaked = 0
    while True:
        try:
            fwAD.exit_dual_level()
        except RuntimeError:
            break
        leaked += 1
    assert leaked == 0, "the test left a dual level open"


def arr(t) -> np.ndarray:
    return np.asarray(t.detach().numpy())


def test_dual_level_yields_the_level_it_opened():
    with fwAD.dual_level() as level:
        assert isinstance(level, int)
        x = fwAD.make_dual(E.tensor([1.0]), E.tensor([2.0]))
        assert fwAD.unpack_dual(x, level=level).tangent.tolist() == [2.0]


def test_enter_and_exit_dual_level_as_torch(torch):
    ours, theirs = fwAD.enter_dual_level(), _torch.autograd.forward_ad.enter_dual_level()
    try:
        assert ours == theirs == 0
        x = fwAD.make_dual(E.tensor([1.0, 2.0]), E.tensor([0.5, 0.25]))
        assert fwAD.unpack_dual(x).tangent.tolist() == [0.5, 0.25]
    finally:
        fwAD.exit_dual_level()
        _torch.autograd.forward_ad.exit_dual_level()
    assert fwAD.unpack_dual(x).tangent is None


def test_unpack_dual_is_a_named_tuple_primal_tangent():
    with fwAD.dual_level():
        p, t = E.tensor([1.0, 2.0]), E.tensor([3.0, 4.0])
        unpacked = fwAD.unpack_dual(fwAD.make_dual(p, t))
        assert type(unpacked).__name__ == "UnpackedDualTensor"
        assert unpacked._fields == ("primal", "tangent")
        primal, tangent = unpacked
        assert primal is unpacked.primal is unpacked[0]
        assert tangent is unpacked.tangent is unpacked[1]
        assert primal.tolist() == [1.0, 2.0] and tangent.tolist() == [3.0, 4.0]


def test_make_dual_returns_a_view_of_the_primal_and_keeps_the_tangent(torch):
    with _torch.autograd.forward_ad.dual_level():
        tp, tt = _torch.ones(2), _torch.ones(2)
        td = _torch.autograd.forward_ad.make_dual(tp, tt)
        expected = (td is tp, td._is_view(), _torch.autograd.forward_ad.unpack_dual(td).tangent is tt)
    with fwAD.dual_level():
        p, t = E.ones(2), E.ones(2)
        d = fwAD.make_dual(p, t)
        assert (d is p, d._is_view(), fwAD.unpack_dual(d).tangent is t) == expected
        p.add_(1)
        assert d.tolist() == [2.0, 2.0]        # the dual shares the primal's memory
        assert fwAD.unpack_dual(p).tangent is None


def test_unpacked_primal_carries_no_tangent():
    with fwAD.dual_level():
        d = fwAD.make_dual(E.tensor([1.0]), E.tensor([1.0]))
        primal = fwAD.unpack_dual(d).primal
        assert fwAD.unpack_dual(primal).tangent is None
        assert fwAD.unpack_dual(primal * 2).tangent is None


def test_tensor_without_tangent_unpacks_to_none():
    x = E.tensor([1.0])
    assert fwAD.unpack_dual(x).tangent is None       # outside any level
    with fwAD.dual_level():
        primal, tangent = fwAD.unpack_dual(x)
        assert tangent is None and primal is x


def test_tangent_of_an_elementwise_function_is_its_derivative_times_the_tangent():
    xv, tv = np.array([0.3, -1.2, 2.0]), np.array([1.0, 0.5, -2.0])
    with fwAD.dual_level():
        x = fwAD.make_dual(E.tensor(xv, dtype=E.float64), E.tensor(tv, dtype=E.float64))
        out = fwAD.unpack_dual(x.sin())
        np.testing.assert_allclose(arr(out.primal), np.sin(xv))
        np.testing.assert_allclose(arr(out.tangent), np.cos(xv) * tv)
        np.testing.assert_allclose(arr(fwAD.unpack_dual(x * x * x).tangent), 3 * xv ** 2 * tv)
        np.testing.assert_allclose(arr(fwAD.unpack_dual(x.exp().sum()).tangent),
                                   np.sum(np.exp(xv) * tv))


def test_product_rule_with_two_duals_and_a_constant():
    with fwAD.dual_level():
        x = fwAD.make_dual(E.tensor([2.0]), E.tensor([1.0]))
        y = fwAD.make_dual(E.tensor([3.0]), E.tensor([10.0]))
        c = E.tensor([5.0])
        assert fwAD.unpack_dual(x * y).tangent.tolist() == [1.0 * 3.0 + 2.0 * 10.0]
        assert fwAD.unpack_dual(x * c).tangent.tolist() == [5.0]
        assert fwAD.unpack_dual(c * 2).tangent is None


FUNCTIONS = {
    "polynomial": lambda x, y: (x * y + x ** 2) / (y + 3),
    "transcendental": lambda x, y: (x * y).exp() + x.sin() * y.tanh(),
    "reduction": lambda x, y: (x * y).sum() + x.mean(),
    "matmul": lambda x, y: x.reshape(2, 2) @ y.reshape(2, 2),
    "broadcast": lambda x, y: x.reshape(4, 1) * y.reshape(1, 4),
    "view_then_op": lambda x, y: x[1:] * y[:3],
}


@pytest.mark.parametrize("name", list(FUNCTIONS))
def test_tangents_match_torch(torch, name):
    def run(M):
        fw = M.autograd.forward_ad
        xv = M.tensor([0.1, -0.4, 0.8, 1.3])
        yv = M.tensor([0.5, 0.2, -0.3, 0.9])
        with fw.dual_level():
            x = fw.make_dual(xv, M.tensor([1.0, 0.5, -1.0, 2.0]))
            y = fw.make_dual(yv, M.tensor([0.0, 1.0, 0.25, -0.5]))
            primal, tangent = fw.unpack_dual(FUNCTIONS[name](x, y))
            return arr(primal), arr(tangent)
    for ours, theirs in zip(run(E), run(_torch)):
        np.testing.assert_allclose(ours, theirs, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name", ["square", "abs", "conj_mul"])
def test_complex_tangents_match_torch(torch, name):
    fn = {"square": lambda z: z * z, "abs": lambda z: z.abs(),
          "conj_mul": lambda z: z.conj() * (z + 1)}[name]

    def run(M):
        fw = M.autograd.forward_ad
        with fw.dual_level():
            z = fw.make_dual(M.tensor([0.3 + 0.4j, -1.0 + 2.0j]), M.tensor([1.0 - 1.0j, 0.5j]))
            tangent = fw.unpack_dual(fn(z)).tangent
            return np.asarray(tangent.resolve_conj().numpy() if hasattr(tangent, "resolve_conj")
                              else tangent.numpy())
    np.testing.assert_allclose(run(E), run(_torch), rtol=1e-5, atol=1e-6)


def test_view_of_a_dual_has_the_same_view_of_the_tangent():
    with fwAD.dual_level():
        x = fwAD.make_dual(E.tensor([[1.0, 2.0], [3.0, 4.0]]), E.tensor([[5.0, 6.0], [7.0, 8.0]]))
        assert fwAD.unpack_dual(x[1]).tangent.tolist() == [7.0, 8.0]
        assert fwAD.unpack_dual(x.t()).tangent.tolist() == [[5.0, 7.0], [6.0, 8.0]]


def test_inplace_op_on_a_dual_updates_its_tangent():
    with fwAD.dual_level():
        x = fwAD.make_dual(E.tensor([1.0, 2.0]), E.tensor([1.0, 1.0])).clone()
        x.mul_(E.tensor([3.0, 4.0]))
        assert fwAD.unpack_dual(x).tangent.tolist() == [3.0, 4.0]


def test_tangents_are_gone_when_their_level_exits():
    with fwAD.dual_level():
        x = fwAD.make_dual(E.tensor([1.0]), E.tensor([1.0]))
        y = x * 2
        assert fwAD.unpack_dual(y).tangent is not None
    assert fwAD.unpack_dual(x).tangent is None
    assert fwAD.unpack_dual(y).tangent is None
    with fwAD.dual_level():
        assert fwAD.unpack_dual(x).tangent is None
        assert fwAD.unpack_dual(y).tangent is None
        assert fwAD.unpack_dual(y * 3).tangent is None


def test_make_dual_outside_a_level_raises(torch):
    with pytest.raises(RuntimeError):
        _torch.autograd.forward_ad.make_dual(_torch.ones(1), _torch.ones(1))
    with pytest.raises(RuntimeError, match="level"):
        fwAD.make_dual(E.ones(1), E.ones(1))


def test_make_dual_with_a_tangent_of_another_size_raises(torch):
    message = "different size than that of the original Tensor"
    with _torch.autograd.forward_ad.dual_level(), pytest.raises(RuntimeError, match=message):
        _torch.autograd.forward_ad.make_dual(_torch.ones(2), _torch.ones(3))
    with fwAD.dual_level(), pytest.raises(RuntimeError, match=message):
        fwAD.make_dual(E.ones(2), E.ones(3))


def test_make_dual_of_an_integer_primal_raises(torch):
    message = "floating point or complex"
    with _torch.autograd.forward_ad.dual_level(), pytest.raises(ValueError, match=message):
        _torch.autograd.forward_ad.make_dual(_torch.ones(2, dtype=_torch.int64),
                                             _torch.ones(2, dtype=_torch.int64))
    with fwAD.dual_level(), pytest.raises(ValueError, match=message):
        fwAD.make_dual(E.ones(2, dtype=E.int64), E.ones(2, dtype=E.int64))


def test_exit_without_a_level_raises(torch):
    with pytest.raises(RuntimeError):
        _torch.autograd.forward_ad.exit_dual_level()
    with pytest.raises(RuntimeError):
        fwAD.exit_dual_level()


def test_forward_ad_does_not_touch_reverse_mode_state():
    with fwAD.dual_level():
        x = fwAD.make_dual(E.tensor([1.0]), E.tensor([1.0]))
        y = x.sin()
        assert y.requires_grad is False and y.grad_fn is None
