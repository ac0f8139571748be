"""A float32 model checked with torch's defaults warns once, not once per
parameter: `check(model, (x,))` with a float32 `x` and a float32
Sequential(Linear, Tanh, Linear) printed five warnings, inputs 1 to 4 being
parameters the user never passed."""
import warnings

import pytest

torch = pytest.importorskip("torch", reason="PyTorch is not installed (pip install torch==2.13.0)")

from adcheck.gradcheck import check  # noqa: E402
from adcheck.gradcheck.core.problem import _listed  # noqa: E402


def _warned(func, inputs) -> list:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        check(func, inputs)
    return [str(w.message) for w in caught if "not double precision" in str(w.message)]


def test_a_float32_model_warns_once_naming_every_input():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.Tanh(), torch.nn.Linear(3, 1))
    (message,) = _warned(model, (torch.randn(2, 4, requires_grad=True),))
    assert "inputs 0 to 4 require grad and have dtype torch.float32" in message
    assert "a module's parameters are then checked in double precision too" in message


def test_one_input_is_named_alone_and_double_inputs_do_not_warn():
    (message,) = _warned(torch.sin, (torch.randn(3, requires_grad=True),))
    assert "input 0 requires grad and has dtype torch.float32" in message
    assert _warned(torch.sin, (torch.randn(3, dtype=torch.float64, requires_grad=True),)) == []


def test_indices_are_listed_as_a_range_or_one_by_one():
    assert _listed([0, 1, 2, 3]) == "0 to 3"
    assert _listed([0, 2, 5]) == "0, 2 and 5"
    assert _listed([1, 2]) == "1 and 2"
