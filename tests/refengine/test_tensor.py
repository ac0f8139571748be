"""The refengine Tensor over NumPy: dtypes, promotion, creation, attributes,
conversions, Python operators and repr.

Every expectation comes from torch (the same call made on both modules) or
from arithmetic written out in the test, never from refengine itself.
"""
from __future__ import annotations

import numpy as np
import pytest

import adcheck.refengine as E
# the autouse fixture is imported to take effect here
from tensor_compare import _default_dtype_restored  # noqa: F401
from tensor_compare import DTYPES, as_array, assert_same, dtype_name


# ----- dtypes ---------------------------------------------------------------

def test_the_seven_dtypes_exist_with_pytorch_names_and_categories(torch):
    for name in DTYPES:
        ours, theirs = getattr(E, name), getattr(torch, name)
        assert dtype_name(ours) == name
        assert ours.is_floating_point == theirs.is_floating_point
        assert ours.is_complex == theirs.is_complex
        assert ours.itemsize == theirs.itemsize


@pytest.mark.parametrize("data", [[1.0, 2.0], [1, 2], [True, False], [1 + 2j, 3.0], 2.5, 7,
                                  True, 1j, [[1, 2.5], [3, 4]], [1, True], [1.0, 2j]],
                         ids=repr)
def test_dtype_inferred_from_python_data_as_torch(torch, data):
    assert dtype_name(E.tensor(data).dtype) == dtype_name(torch.tensor(data).dtype)


def test_default_dtype_is_float32_and_python_complex_gives_complex64():
    assert E.get_default_dtype() is E.float32
    assert E.tensor([1.0]).dtype is E.float32
    assert E.tensor(1 + 2j).dtype is E.complex64
    assert E.zeros(2).dtype is E.float32


def test_set_default_dtype_float64_changes_floats_and_complex(torch):
    E.set_default_dtype(E.float64)
    torch.set_default_dtype(torch.float64)
    for make in (lambda M: M.tensor([1.5]), lambda M: M.tensor(1j), lambda M: M.ones(2),
                 lambda M: M.arange(0.0, 1.0, 0.5), lambda M: M.tensor([1, 2])):
        assert dtype_name(make(E).dtype) == dtype_name(make(torch).dtype)
    assert E.get_default_dtype() is E.float64


def test_set_default_dtype_refuses_non_float_types(torch):
    with pytest.raises(TypeError):
        torch.set_default_dtype(torch.int64)
    with pytest.raises(TypeError):
        E.set_default_dtype(E.int64)


@pytest.mark.parametrize("name", DTYPES)
def test_explicit_dtype_is_kept(torch, name):
    ours = E.tensor([1, 0, 1], dtype=getattr(E, name))
    theirs = torch.tensor([1, 0, 1], dtype=getattr(torch, name))
    assert_same(ours, theirs)


@pytest.mark.parametrize("np_dtype", [np.float32, np.float64, np.complex64, np.complex128,
                                      np.int64, np.int32, np.bool_])
def test_tensor_of_numpy_array_keeps_its_dtype(torch, np_dtype):
    arr = np.array([1, 0, 2]).astype(np_dtype)
    assert_same(E.tensor(arr), torch.tensor(arr))


@pytest.mark.parametrize("make", [lambda: np.float64(2.5), lambda: [np.float64(2.5)],
                                  lambda: np.int32(3), lambda: np.complex128(1j)],
                         ids=["float64", "list_of_float64", "int32", "complex128"])
def test_tensor_of_numpy_scalars_keeps_their_dtype(torch, make):
    assert dtype_name(E.tensor(make()).dtype) == dtype_name(torch.tensor(make()).dtype)


# ----- type promotion -------------------------------------------------------

# An operand is ("dim", dtype name), ("zero", dtype name) or ("num", value).
OPERANDS = ([("dim", n) for n in DTYPES] + [("zero", n) for n in DTYPES]
            + [("num", v) for v in (True, 3, 2.5, 1 + 2j)])


def make_operand(M, spec):
    kind, arg = spec
    if kind == "num":
        return arg
    data = [True, False] if arg == "bool" else [1, 2]
    return M.tensor(data if kind == "dim" else data[0], dtype=getattr(M, arg))


BINARY = {"add": lambda M, a, b: a + b, "mul": lambda M, a, b: a * b,
          "div": lambda M, a, b: a / b, "sub": lambda M, a, b: a - b,
          "pow": lambda M, a, b: a ** b, "eq": lambda M, a, b: a == b,
          "lt": lambda M, a, b: a < b, "maximum": lambda M, a, b: M.maximum(a, b),
          "where": lambda M, a, b: M.where(M.tensor([True, False]), a, b)}


def _outcome(M, op, left, right):
    try:
        return BINARY[op](M, make_operand(M, left), make_operand(M, right))
    except (RuntimeError, TypeError) as exc:
        return exc


# torch.maximum takes tensors only (a Python number is a TypeError there)
TENSORS_ONLY = {"maximum"}
GRID = [(op, left) for op in BINARY for left in OPERANDS
        if not (op in TENSORS_ONLY and left[0] == "num")]


@pytest.mark.parametrize(("op", "left"), GRID, ids=lambda v: v if isinstance(v, str)
                         else f"{v[0]}-{v[1]}")
def test_type_promotion_grid_matches_torch(torch, op, left):
    mismatches = []
    for right in OPERANDS:
        if right[0] == "num" and (left[0] == "num" or op in TENSORS_ONLY):
            continue
        theirs = _outcome(torch, op, left, right)
        ours = _outcome(E, op, left, right)
        if isinstance(theirs, Exception):
            kind = RuntimeError if isinstance(theirs, RuntimeError) else TypeError
            if not isinstance(ours, kind):
                mismatches.append((right, f"torch raises {kind.__name__}", ours))
            continue
        if isinstance(ours, Exception):
            mismatches.append((right, dtype_name(theirs.dtype), ours))
            continue
        if dtype_name(ours.dtype) != dtype_name(theirs.dtype):
            mismatches.append((right, dtype_name(theirs.dtype), dtype_name(ours.dtype)))
        elif not np.allclose(as_array(ours), as_array(theirs), equal_nan=True):
            mismatches.append((right, as_array(theirs), as_array(ours)))
    assert not mismatches, f"{op} with left {left}: (right, torch, refengine): {mismatches}"


INPLACE = {"add_": lambda a, b: a.add_(b), "mul_": lambda a, b: a.mul_(b),
           "div_": lambda a, b: a.div_(b), "iadd": lambda a, b: a.__iadd__(b)}


@pytest.mark.parametrize("left", DTYPES)
@pytest.mark.parametrize("op", list(INPLACE))
def test_inplace_type_promotion_matches_torch(torch, op, left):
    # the result keeps the left dtype, or the op is refused when it cannot hold the result
    mismatches = []
    for right in OPERANDS:
        outcomes = []
        for M in (torch, E):
            try:
                out = INPLACE[op](make_operand(M, ("dim", left)), make_operand(M, right))
                # repr: NaN and inf compare equal as text
                outcomes.append((dtype_name(out.dtype), repr(as_array(out).tolist())))
            except RuntimeError:
                outcomes.append("RuntimeError")
        if outcomes[0] != outcomes[1]:
            mismatches.append((right, *outcomes))
    assert not mismatches, f"{left}.{op}: (right, torch, refengine): {mismatches}"


def test_python_float_does_not_widen_float32_but_float64_tensor_wins():
    # PyTorch's rule, unlike NumPy's: numbers are the lowest priority
    assert (E.tensor([1.0]) * 2.5).dtype is E.float32
    assert (E.tensor([1.0], dtype=E.float64) * E.tensor([1.0])).dtype is E.float64
    assert (E.tensor([1, 2]) * 2.5).dtype is E.float32
    assert (E.tensor([1, 2], dtype=E.int32) + E.tensor(5)).dtype is E.int32


# ----- creation functions ---------------------------------------------------

CREATIONS = {
    "zeros": lambda M: M.zeros(2, 3),
    "zeros_tuple": lambda M: M.zeros((2, 3)),
    "zeros_int": lambda M: M.zeros(2, dtype=M.int64),
    "ones": lambda M: M.ones(3),
    "ones_complex": lambda M: M.ones(2, 2, dtype=M.complex128),
    "ones_scalar": lambda M: M.ones(()),
    "full_int": lambda M: M.full((2, 2), 3),
    "full_float": lambda M: M.full((2,), 1.5),
    "full_bool": lambda M: M.full((2,), True),
    "full_complex": lambda M: M.full((2,), 1 + 1j),
    "full_dtype": lambda M: M.full((3,), 2, dtype=M.float64),
    "zeros_like": lambda M: M.zeros_like(M.tensor([[1, 2]], dtype=M.int32)),
    "ones_like": lambda M: M.ones_like(M.tensor([1.0, 2.0], dtype=M.float64)),
    "ones_like_dtype": lambda M: M.ones_like(M.tensor([1, 2]), dtype=M.complex64),
    "full_like": lambda M: M.full_like(M.tensor([1.0, 2.0]), 7),
    "full_like_int": lambda M: M.full_like(M.tensor([1, 2]), 2.7),
    "arange_int": lambda M: M.arange(5),
    "arange_start_end": lambda M: M.arange(2, 7),
    "arange_float_step": lambda M: M.arange(0, 1, 0.25),
    "arange_float_start": lambda M: M.arange(1.0, 4.0),
    "arange_dtype": lambda M: M.arange(4, dtype=M.float64),
    "linspace": lambda M: M.linspace(0, 1, 5),
    "linspace_dtype": lambda M: M.linspace(-2, 2, 9, dtype=M.float64),
    "eye": lambda M: M.eye(3),
    "eye_rect": lambda M: M.eye(2, 3),
    "eye_dtype": lambda M: M.eye(2, dtype=M.int64),
}


@pytest.mark.parametrize("name", list(CREATIONS))
def test_creation_function_matches_torch(torch, name):
    assert_same(CREATIONS[name](E), CREATIONS[name](torch), exact=False)


@pytest.mark.parametrize("dtype", ["float32", "float64", "complex64"])
def test_empty_has_shape_and_dtype(torch, dtype):
    ours, theirs = E.empty(2, 3, dtype=getattr(E, dtype)), torch.empty(2, 3, dtype=getattr(torch, dtype))
    assert tuple(ours.shape) == tuple(theirs.shape) == (2, 3)
    assert dtype_name(ours.dtype) == dtype_name(theirs.dtype)


def test_negative_size_raises(torch):
    with pytest.raises(RuntimeError):
        torch.zeros(-1)
    with pytest.raises(RuntimeError):
        E.zeros(-1)


def test_rand_refuses_an_integer_dtype(torch):
    with pytest.raises(RuntimeError):      # torch raises NotImplementedError, a RuntimeError
        torch.rand(2, dtype=torch.int64)
    with pytest.raises(RuntimeError):
        E.rand(2, dtype=E.int64)


def test_creation_functions_take_requires_grad():
    for t in (E.zeros(2, requires_grad=True), E.ones(2, requires_grad=True),
              E.full((2,), 1.0, requires_grad=True), E.rand(2, requires_grad=True),
              E.randn(2, requires_grad=True), E.tensor([1.0], requires_grad=True),
              E.linspace(0, 1, 3, requires_grad=True), E.eye(2, requires_grad=True)):
        assert t.requires_grad and t.is_leaf


def test_integer_tensor_cannot_require_grad(torch):
    with pytest.raises(RuntimeError):
        torch.tensor([1, 2], requires_grad=True)
    with pytest.raises(RuntimeError, match="floating point and complex"):
        E.tensor([1, 2], requires_grad=True)


def test_rand_is_uniform_on_unit_interval_with_requested_shape_and_dtype():
    E.manual_seed(0)
    x = E.rand(2000)
    assert x.dtype is E.float32 and tuple(x.shape) == (2000,)
    values = x.numpy()
    assert values.min() >= 0.0 and values.max() < 1.0
    assert abs(values.mean() - 0.5) < 0.05          # 14 standard errors of a U(0, 1) mean
    assert E.rand(3, 4, dtype=E.float64).dtype is E.float64


def test_randn_is_standard_normal():
    E.manual_seed(0)
    values = E.randn(4000).numpy()
    assert abs(values.mean()) < 0.08 and abs(values.std() - 1.0) < 0.08
    assert tuple(E.randn(2, 3).shape) == (2, 3)


def test_randn_complex_has_variance_half_in_each_part():
    # torch documents complex randn as unit total variance (1/2 per part)
    E.manual_seed(1)
    z = E.randn(8000, dtype=E.complex64).numpy()
    assert z.dtype == np.complex64
    assert abs(z.real.var() - 0.5) < 0.05 and abs(z.imag.var() - 0.5) < 0.05


def test_manual_seed_makes_random_tensors_reproducible():
    E.manual_seed(123)
    a, b = E.rand(5).numpy().copy(), E.randn(5).numpy().copy()
    E.manual_seed(123)
    np.testing.assert_array_equal(E.rand(5).numpy(), a)
    np.testing.assert_array_equal(E.randn(5).numpy(), b)
    E.manual_seed(124)
    assert not np.array_equal(E.rand(5).numpy(), a)


def test_from_numpy_shares_memory_and_keeps_dtype(torch):
    arr = np.array([1.0, 2.0, 3.0])
    ours, theirs = E.from_numpy(arr), torch.from_numpy(arr.copy())
    assert dtype_name(ours.dtype) == dtype_name(theirs.dtype) == "float64"
    arr[0] = 10.0
    assert ours.tolist() == [10.0, 2.0, 3.0]
    ours.mul_(2)
    assert arr.tolist() == [20.0, 4.0, 6.0]


def test_from_numpy_refuses_a_list(torch):
    with pytest.raises(TypeError):
        torch.from_numpy([1.0, 2.0])
    with pytest.raises(TypeError):
        E.from_numpy([1.0, 2.0])


def test_tensor_copies_numpy_data_and_as_tensor_shares_it():
    arr = np.array([1.0, 2.0])
    copied, shared = E.tensor(arr), E.as_tensor(arr)
    arr[1] = 5.0
    assert copied.tolist() == [1.0, 2.0]
    assert shared.tolist() == [1.0, 5.0]


def test_as_tensor_of_a_tensor_is_the_same_tensor_and_converts_dtype(torch):
    x, t = E.tensor([1, 2]), torch.tensor([1, 2])
    assert E.as_tensor(x) is x and torch.as_tensor(t) is t
    assert_same(E.as_tensor(x, dtype=E.float64), torch.as_tensor(t, dtype=torch.float64))
    assert_same(E.as_tensor([1.5, 2]), torch.as_tensor([1.5, 2]))
