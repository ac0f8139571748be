"""The refengine Tensor over NumPy: dtypes, promotion, creation, attributes,
conversions, Python operators and repr.

Every expectation comes from torch (the same call made on both modules) or
from arithmetic written out in the test, never from refengine itself.
"""
from __future__ import annotations

import numpy as np
import pytest

import adcheck.refengine as E

try:
    import torch as _torch
except ImportError:  # the oracle is optional: tests that need it skip
    _torch = None




@pytest.fixture(autouse=True)
def _default_dtype_restored():
    """A test that changes the default dtype cannot leak it into the next one."""
    before = E.get_default_dtype()
    yield
    E.set_default_dtype(before)
    if _torch is not None:
        _torch.set_default_dtype(_torch.float32)


DTYPES = ["float32", "float64", "complex64", "complex128", "int64", "int32", "bool"]


def dtype_name(dt) -> str:
    """``float32`` for ``torch.float32`` and for ``refengine.float32``."""
    return repr(dt).split(".")[-1]


def as_array(t) -> np.ndarray:
    return np.asarray(t.detach().numpy())


def assert_same(ours, theirs, *, exact: bool = True):
    """Same dtype, shape and values (NaN equal to NaN)."""
    assert dtype_name(ours.dtype) == dtype_name(theirs.dtype)
    assert tuple(ours.shape) == tuple(theirs.shape)
    a, b = as_array(ours), as_array(theirs)
    if exact:
        np.testing.assert_array_equal(a, b)
    else:
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7, equal_nan=True)


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
