"""A second-order check where the first derivative is rounding noise (corrcoef of
one variable is constant, so every derivative is zero in exact arithmetic):
the AD blocks that fail are measured at inputs moved by a few ulps, so noise
in them is judged noise at every seed, and an error that does not move like
noise is caught even where the finite differences are no evidence."""
import pytest

torch = pytest.importorskip("torch", reason="the cases are torch functions")

from adcheck import gradcheck  # noqa: E402
from adcheck.gradcheck.errors import UncheckableError  # noqa: E402


def _one_variable():
    # (the input of test_gradcheck_noise.py: two close observations of one variable)
    return torch.tensor([[7.7562638320906565, 7.729689411773434]], dtype=torch.float64,
                        requires_grad=True)


@pytest.mark.parametrize("seed", [2, 53, 62])
def test_noise_in_the_second_derivative_is_not_called_an_error(seed):
    # with these seeds the reverse-over-reverse block is +-3.9e-13 in a pattern
    # whose rows and columns sum to zero (the products of ones are exactly zero,
    # and measured nothing), and the check failed on a right formula; corrcoef's
    # value is 1 at every input, so the true block is zero
    x = _one_variable()
    for t in (x, x * 1.001, x + 1e-9):
        assert float(torch.corrcoef(t.detach())) == 1.0
    with pytest.raises(UncheckableError, match="rounding noise"):
        gradcheck.check(torch.corrcoef, (x,), precise=True, order=2, seed=seed)


def _planted(k):
    """corrcoef plus a term that is zero in value and first derivative but whose
    AD second derivative is ``2 k``: the finite differences of the first
    derivative see none of it (``t - t.detach()`` is zero at every point)."""
    return lambda t: torch.corrcoef(t) + k * ((t - t.detach()) ** 2).sum()


def test_torch_sees_the_planted_second_order_error():
    # the independent judge: torch's gradgradcheck fails it and passes corrcoef
    x = _one_variable()
    assert torch.autograd.gradgradcheck(torch.corrcoef, (x,))
    with pytest.raises(RuntimeError, match="Jacobian mismatch"):
        torch.autograd.gradgradcheck(_planted(1.0), (x,))


@pytest.mark.parametrize("seed", [0, 1, 3])
def test_an_error_that_does_not_move_like_noise_is_caught(seed):
    # with these seeds the first derivative's output is noise, or its steps see a
    # jump (noise looks like one), and the whole block was excused before
    report = gradcheck.check(_planted(1.0), (_one_variable(),), precise=True, order=2,
                             seed=seed)
    assert not report.passed
    reverse = [r for r in report.failures if r.check == "reverse"]
    assert reverse and max(r.max_error for r in reverse) > 0.1


def test_a_small_stable_error_is_caught_where_the_differences_resolve_it():
    # 2e-9 of a stable term, a thousand times the AD noise (3.9e-13)
    report = gradcheck.check(_planted(1e-9), (_one_variable(),), precise=True, order=2,
                             seed=0)
    assert "reverse" in {r.check for r in report.failures}
