"""A module built in float32, checked with double-precision inputs, is checked in
double precision from Python as on the command line (issue 28, item 7): on
copies of its parameters, which stay float32 and untouched."""
import numpy as np
import pytest

import adcheck.refengine as E
from adcheck.gradcheck import check


def _engines():
    yield "refengine"
    try:
        import torch  # noqa: F401
    except ImportError:
        return
    yield "torch"


@pytest.mark.parametrize("engine", list(_engines()))
def test_a_float32_layer_is_checked_in_double_precision(engine):
    if engine == "torch":
        import torch
        torch.manual_seed(0)
        layer = torch.nn.Linear(3, 2)
        x = torch.randn(4, 3, dtype=torch.float64, requires_grad=True)
        weight = layer.weight.detach().clone()
    else:
        E.manual_seed(0)
        layer = E.nn.Linear(3, 2)
        x = E.randn(4, 3, dtype=E.float64, requires_grad=True)
        weight = E.tensor(layer.weight.detach().numpy().copy())
    report = check(layer, (x,), precise=True)
    assert report.passed, report.message()
    assert report.input_names == ["input", "weight", "bias"]
    assert str(layer.weight.dtype).endswith("float32")
    np.testing.assert_array_equal(layer.weight.detach().numpy(), weight.numpy())
    # the weight's Jacobian was built in float64, on the double-precision copy
    jac = report.jacobians["reverse"].blocks[(0, 1)]
    assert jac.dtype == np.float64
