"""The refengine Tensor over NumPy: attributes, conversions, Python operators and repr.

Every expectation comes from torch (the same call made on both modules) or
from arithmetic written out in the test, never from refengine itself.
"""
from __future__ import annotations

import numpy as np
import pytest

import adcheck.refengine as E
# the autouse fixture is imported to take effect here
from tensor_compare import _default_dtype_restored  # noqa: F401
from tensor_compare import DTYPES, assert_same


# ----- attributes and conversions --------------------------------------------

def test_shape_attributes_match_torch(torch):
    ours, theirs = E.zeros(2, 3, 4), torch.zeros(2, 3, 4)
    assert tuple(ours.shape) == tuple(theirs.shape) == (2, 3, 4)
    assert ours.shape == (2, 3, 4)
    assert ours.ndim == theirs.ndim == ours.dim() == 3
    assert tuple(ours.size()) == tuple(theirs.size())
    assert ours.size(1) == theirs.size(1) == 3 and ours.size(-1) == theirs.size(-1) == 4
    assert ours.numel() == theirs.numel() == 24
    assert len(ours) == len(theirs) == 2
    assert repr(ours.shape) == repr(theirs.shape).replace("torch.", "refengine.")
    assert ours.shape.numel() == 24


def test_zero_dim_tensor_has_empty_shape_and_no_len(torch):
    ours, theirs = E.tensor(3.0), torch.tensor(3.0)
    assert tuple(ours.shape) == tuple(theirs.shape) == ()
    assert ours.ndim == 0 and ours.numel() == 1
    with pytest.raises(TypeError):
        len(theirs)
    with pytest.raises(TypeError):
        len(ours)


def test_numpy_shares_memory_with_the_tensor():
    x = E.tensor([1.0, 2.0])
    arr = x.numpy()
    assert isinstance(arr, np.ndarray) and arr.dtype == np.float32
    arr[0] = 7.0
    assert x.tolist() == [7.0, 2.0]


def test_numpy_raises_on_a_tensor_that_requires_grad(torch):
    with pytest.raises(RuntimeError, match="requires grad"):
        torch.ones(2, requires_grad=True).numpy()
    x = E.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match="requires grad"):
        x.numpy()
    with pytest.raises(RuntimeError, match="requires grad"):
        (x * 2).numpy()
    np.testing.assert_array_equal(x.detach().numpy(), [1.0, 1.0])


@pytest.mark.parametrize("data", [2.5, 3, True, 1 + 2j, [4.0], [[5]]], ids=repr)
def test_item_returns_a_python_number_as_torch(torch, data):
    ours, theirs = E.tensor(data).item(), torch.tensor(data).item()
    assert type(ours) is type(theirs)
    assert ours == theirs


def test_item_raises_on_more_than_one_element(torch):
    with pytest.raises(RuntimeError):
        torch.tensor([1.0, 2.0]).item()
    with pytest.raises(RuntimeError):
        E.tensor([1.0, 2.0]).item()


def test_item_works_on_a_tensor_that_requires_grad():
    assert E.tensor(1.5, requires_grad=True).item() == 1.5


@pytest.mark.parametrize("data", [[[1.0, 2.5], [3.0, 4.0]], [1, 2, 3], [True, False],
                                  [1 + 1j, 2.0], 4.0, [], [[[]]]], ids=repr)
def test_tolist_matches_torch(torch, data):
    ours, theirs = E.tensor(data).tolist(), torch.tensor(data).tolist()
    assert ours == theirs
    flat = [ours] if not isinstance(ours, list) else list(np.ravel(np.array(ours, dtype=object)))
    ref = [theirs] if not isinstance(theirs, list) else list(np.ravel(np.array(theirs, dtype=object)))
    assert [type(v) for v in flat] == [type(v) for v in ref]


def test_python_scalar_conversions(torch):
    assert float(E.tensor(2.5)) == float(torch.tensor(2.5)) == 2.5
    assert int(E.tensor(3.7)) == int(torch.tensor(3.7)) == 3
    assert complex(E.tensor(1 + 2j)) == 1 + 2j
    assert bool(E.tensor([0.0])) is False
    with pytest.raises(RuntimeError):
        bool(torch.tensor([1.0, 2.0]))
    with pytest.raises(RuntimeError):
        bool(E.tensor([1.0, 2.0]))


def test_is_complex_and_is_floating_point(torch):
    for name in DTYPES:
        ours, theirs = E.zeros(1, dtype=getattr(E, name)), torch.zeros(1, dtype=getattr(torch, name))
        assert ours.is_complex() == theirs.is_complex()
        assert ours.is_floating_point() == theirs.is_floating_point()


def test_real_imag_T_mT(torch):
    z = [[1 + 2j, 3 - 1j], [0.5j, 2.0]]
    for get in (lambda t: t.real, lambda t: t.imag, lambda t: t.T, lambda t: t.mT):
        assert_same(get(E.tensor(z)), get(torch.tensor(z)))


# ----- Python operators -----------------------------------------------------

OPERATORS = {
    "add": lambda a, b: a + b, "sub": lambda a, b: a - b, "mul": lambda a, b: a * b,
    "truediv": lambda a, b: a / b, "pow": lambda a, b: a ** b, "neg": lambda a, b: -a,
    "eq": lambda a, b: a == b, "ne": lambda a, b: a != b, "lt": lambda a, b: a < b,
    "le": lambda a, b: a <= b, "gt": lambda a, b: a > b, "ge": lambda a, b: a >= b,
    "abs": lambda a, b: abs(a - b), "radd": lambda a, b: 2 + a, "rsub": lambda a, b: 2 - a,
    "rmul": lambda a, b: 3 * a, "rtruediv": lambda a, b: 2 / a, "rpow": lambda a, b: 2 ** a,
    "pow_number": lambda a, b: a ** 2, "sub_number": lambda a, b: a - 0.5,
    "matmul_vec": lambda a, b: a @ b,
}


@pytest.mark.parametrize("name", list(OPERATORS))
def test_python_operator_matches_torch(torch, name):
    a, b = [1.0, 2.0, -3.0], [2.0, 2.0, 0.5]
    ours = OPERATORS[name](E.tensor(a), E.tensor(b))
    theirs = OPERATORS[name](torch.tensor(a), torch.tensor(b))
    assert_same(ours, theirs, exact=False)


def test_matmul_operator_on_matrices(torch):
    a, b = [[1.0, 2.0], [3.0, 4.0]], [[0.5, -1.0], [2.0, 1.0]]
    assert_same(E.tensor(a) @ E.tensor(b), torch.tensor(a) @ torch.tensor(b), exact=False)


def test_unary_minus_on_a_bool_tensor_raises_runtime_error(torch):
    with pytest.raises(RuntimeError, match="Negation"):
        -torch.tensor([True, False])
    with pytest.raises(RuntimeError, match="Negation"):
        -E.tensor([True, False])


def test_integer_to_a_negative_integer_power_raises_runtime_error(torch):
    message = "Integers to negative integer powers are not allowed"
    with pytest.raises(RuntimeError, match=message):
        torch.tensor([2]) ** -1
    with pytest.raises(RuntimeError, match=message):
        E.tensor([2]) ** -1


def test_inplace_operators_write_into_the_tensor_and_bump_the_version():
    x = E.tensor([1.0, 2.0])
    before, identity = x._version, id(x)
    x += 1
    x *= 3
    x -= E.tensor([1.0, 1.0])
    x /= 2
    assert id(x) == identity
    assert x.tolist() == [2.5, 4.0]
    assert x._version == before + 4


def test_inplace_operator_refuses_a_result_type_it_cannot_hold(torch):
    with pytest.raises(RuntimeError):
        t = torch.tensor([1, 2])
        t += 0.5
    x = E.tensor([1, 2])
    with pytest.raises(RuntimeError):
        x += 0.5


# ----- repr -------------------------------------------------------------------

REPRS = {
    "floats_integral": lambda M: M.tensor([1.0, 2.0, 3.0]),
    "floats_four_decimals": lambda M: M.tensor([0.1234567, 1.5, -2.25]),
    "negative_float": lambda M: M.tensor([-1.5, 2.0]),
    "scientific_small": lambda M: M.tensor([1e-5, 1.0]),
    "scientific_large": lambda M: M.tensor([1e10, 1.0]),
    "scientific_ratio": lambda M: M.tensor([0.001, 2.0]),
    "large_integral": lambda M: M.tensor([123456789.0, 1.0]),
    "integral_ratio_over_1000": lambda M: M.tensor([1.0, 2000.0]),
    "integral_1e8": lambda M: M.tensor([1e8, 1.0]),
    "negative_zero": lambda M: M.tensor([-0.0, 1.0]),
    "summarized": lambda M: M.arange(2000.0),
    "summarized_2d": lambda M: M.zeros(50, 50),
    "nan_inf": lambda M: M.tensor([float("nan"), float("inf"), -float("inf"), 1.5]),
    "zeros": lambda M: M.zeros(3),
    "ints": lambda M: M.tensor([1, -20, 300]),
    "int32": lambda M: M.tensor([1, 2], dtype=M.int32),
    "bools": lambda M: M.tensor([True, False, True]),
    "complex": lambda M: M.tensor([1 + 2j, 3 - 4j]),
    "complex_fractional": lambda M: M.tensor([0.5 + 1.25j, -1 - 0.125j]),
    "complex128": lambda M: M.tensor([1 + 1j], dtype=M.complex128),
    "float64": lambda M: M.tensor([1.0, 2.5], dtype=M.float64),
    "two_d": lambda M: M.tensor([[1.0, 2.0], [3.0, 4.5]]),
    "two_d_ints": lambda M: M.tensor([[1, 22], [333, 4]]),
    "three_d": lambda M: M.arange(8.0).reshape(2, 2, 2),
    "wrapped_line": lambda M: M.arange(30.0) * 1.5,
    "scalar_float": lambda M: M.tensor(3.5),
    "scalar_int": lambda M: M.tensor(7),
    "scalar_bool": lambda M: M.tensor(True),
    "scalar_float64": lambda M: M.tensor(2.0, dtype=M.float64),
    "empty": lambda M: M.tensor([]),
    "empty_2d": lambda M: M.zeros(0, 3),
    "empty_int": lambda M: M.tensor([], dtype=M.int64),
    "empty_float64": lambda M: M.zeros(0, dtype=M.float64),
    "requires_grad": lambda M: M.tensor([1.0, 2.0], requires_grad=True),
    "requires_grad_float64": lambda M: M.tensor([1.5], dtype=M.float64, requires_grad=True),
    "grad_fn": lambda M: M.tensor([1.0, 2.0], requires_grad=True) * 2,
    "grad_fn_scalar": lambda M: (M.tensor([1.0, 2.0], requires_grad=True) ** 2).sum(),
}


@pytest.mark.parametrize("name", list(REPRS))
def test_repr_matches_torch(torch, name):
    expected = repr(REPRS[name](torch)).replace("torch.", "refengine.")
    assert repr(REPRS[name](E)) == expected


def test_repr_under_float64_default_omits_float64_dtype(torch):
    E.set_default_dtype(E.float64)
    torch.set_default_dtype(torch.float64)
    for make in (lambda M: M.tensor([1.5, 2.0]), lambda M: M.tensor([1.5], dtype=M.float32),
                 lambda M: M.tensor([1j])):
        assert repr(make(E)) == repr(make(torch)).replace("torch.", "refengine.")


def test_str_matches_torch(torch):
    assert str(E.tensor([1.0, 2.5])) == str(torch.tensor([1.0, 2.5])).replace("torch.", "refengine.")
