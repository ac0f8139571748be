"""Functions that draw random numbers, on the torch engine: one that seeds its
generator itself (op_db's fractional max pooling, through
``wrapper_set_seed``) is the same function at every call, so its finite
differences are batched with one shared draw (it took 2 minutes one call at
a time); one that draws afresh at each call is left to the loop, and its
nondeterminism is reported. Verdicts are cross-checked with torch's gradcheck."""
import pytest

torch = pytest.importorskip("torch", reason="the torch engine needs torch; it is not installed")

from adcheck import gradcheck  # noqa: E402


def _seeded(x):
    torch.manual_seed(7)
    return torch.nn.functional.fractional_max_pool2d(x, 2, output_size=3)


def _wrong(x):
    """The seeded pooling with a backward that adds 0.01 to every entry: the
    added term is zero in value, so only the derivative is wrong."""
    return _seeded(x) + 0.01 * (x - x.detach()).sum()


@pytest.fixture
def x():
    gen = torch.Generator().manual_seed(0)
    return torch.randn(1, 2, 5, 5, dtype=torch.float64, generator=gen, requires_grad=True)


def test_a_self_seeded_random_function_is_batched_and_passes(x):
    assert torch.autograd.gradcheck(_seeded, (x,), check_forward_ad=True)
    report = gradcheck.check(_seeded, (x,), precise=True, seed=0)
    assert report.passed, report.message()
    assert report.batching["fallback"] is None and report.batching["batched_calls"] > 0


def test_a_wrong_backward_behind_a_shared_draw_is_caught(x):
    assert not torch.autograd.gradcheck(_wrong, (x,), raise_exception=False)
    report = gradcheck.check(_wrong, (x,), precise=True, seed=0)
    assert report.batching["fallback"] is None   # the shared draw was used
    assert not report.passed
    assert report.failures[0].against == "numerical"


def test_fresh_draws_at_each_call_are_not_batched_and_are_reported(x):
    def unseeded(t):
        return t * (1 + 1e-3 * torch.rand_like(t))
    report = gradcheck.check(unseeded, (x,), precise=True, seed=0)
    assert "different random numbers" in report.batching["fallback"]
    assert not report.passed and "nondeterministic" in report.message()


@pytest.mark.parametrize("order", [1, 2])
def test_a_random_function_in_low_precision_is_not_judged_against_another_draw(order):
    """In float32 the float64 run draws other numbers: by hand, the pooled outputs
    move; the check refuses with that reason instead of comparing two functions."""
    from adcheck.gradcheck.errors import UncheckableError
    gen = torch.Generator().manual_seed(1)
    x = torch.randn(1, 2, 7, 7, generator=gen).requires_grad_()
    narrow, wide = _seeded(x).detach(), _seeded(x.detach().double())
    assert not torch.allclose(narrow.double(), wide, atol=1e-3)   # another function
    with pytest.raises(UncheckableError, match="draws random numbers"):
        gradcheck.check(_seeded, (x,), precise=True, seed=0, order=order)
