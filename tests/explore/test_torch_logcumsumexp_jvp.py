"""The quick explore pass finds a forward-mode bug torch 2.13 ships, from a
user's randn inputs and no option: ``torch.logcumsumexp``'s jvp loses the
tangent of a prefix that lies far below a later entry of its row (its
formula scales by the row's largest entry and guards a sum with a constant
floor; open upstream as pytorch#196705). Found by running ``adcheck check``
on 72 torch functions at their default inputs (bench/explore.md).

Confirmed without adcheck at the point the pass reports: torch's own reverse
mode and the closed form ``d y_j / d x_k = exp(x_k - y_j)`` (k <= j) agree,
and the jvp does not."""
from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="PyTorch is not installed (pip install torch==2.13.0)")

from adcheck.gradcheck import check  # noqa: E402

# the point the quick pass reported: the user's randn(3, 4) (seed 0) with one
# entry of the last row raised to 29
POINT = [[-1.6553419200292772, -0.3090604541549508, -1.2883323522135341, 0.6466610006931983],
         [0.1774712238076446, 0.7586647290719564, -0.07397324170524738, -0.4224192206860714],
         [-0.2074906172306226, -1.0143570067806489, -0.47297676053807913, 28.94478420283051]]


def _logcumsumexp(x):
    return torch.logcumsumexp(x, dim=-1)


def _jvp_column(x, row, col):
    import torch.autograd.forward_ad as fw
    tangent = torch.zeros_like(x)
    tangent[row, col] = 1.0
    with fw.dual_level():
        return fw.unpack_dual(_logcumsumexp(fw.make_dual(x, tangent))).tangent[row]


def _closed_form_column(x, row, col):
    y = _logcumsumexp(x)[row]
    return torch.tensor([float(torch.exp(x[row, col] - y[j])) if j >= col else 0.0
                         for j in range(x.shape[1])], dtype=x.dtype)


def test_torchs_jvp_is_wrong_at_the_point_and_its_vjp_right():
    x = torch.tensor(POINT, dtype=torch.float64)
    exact = _closed_form_column(x, 2, 0)
    reverse = torch.autograd.functional.jacobian(_logcumsumexp, x)[2, :, 2, 0]
    forward = _jvp_column(x, 2, 0)
    assert torch.allclose(reverse, exact, rtol=1e-12, atol=0)
    if torch.allclose(forward, exact, rtol=1e-9, atol=0):
        pytest.skip(f"torch {torch.__version__} computes this jvp right: the bug is fixed")
    # the one-element prefix keeps its input's derivative, 1; torch gives 0.69
    assert float(exact[0]) == 1.0 and abs(float(forward[0]) - 1.0) > 0.1


def test_the_quick_pass_finds_it_where_the_users_inputs_pass():
    x = torch.tensor(np.random.default_rng(0).standard_normal((3, 4)), dtype=torch.float64,
                     requires_grad=True)
    if torch.allclose(_jvp_column(torch.tensor(POINT, dtype=torch.float64), 2, 0),
                      _closed_form_column(torch.tensor(POINT, dtype=torch.float64), 2, 0),
                      rtol=1e-9, atol=0):
        pytest.skip(f"torch {torch.__version__} computes this jvp right: the bug is fixed")
    plain = check(_logcumsumexp, (x,), check_forward_ad=True, precise=True, explore=False,
                  seed=0)
    assert plain.passed, plain.message()
    explored = check(_logcumsumexp, (x,), check_forward_ad=True, precise=True, seed=0)
    assert not explored.passed
    modes = {f.mode for f in explored.failures}
    assert modes == {"forward"}, explored.message()
    assert "at the explored point" in explored.failures[0].detail
