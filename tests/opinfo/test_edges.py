"""The edge set: samples at the points other registries avoid (relu, abs and
clamp at the kink, ties in max/min/amax, the norm at 0, pow at 0**0, prod
with zeros, the determinant of a singular matrix), each with the gradient
the documented rules give.

The samples are the OpInfos' ``special_inputs`` (each names its ``rule``);
the expected gradients are edge_rules.py's, worked out from the rules with
NumPy. Where torch is installed, each special sample's gradient must also
equal torch's on the same numbers. Forward mode at these points is held to
the same rules by test_forward_equals_reverse.py.
"""
from __future__ import annotations

import numpy as np
import pytest

from adcheck import opinfo
import adcheck.refengine as E

from edge_rules import RULES, cofactors

DTYPES = (E.float64, E.complex128)
#: the edge set of issue 6: each op must offer at least one special sample
ISSUE_6_EDGES = {"relu": "relu at the kink", "abs": "abs at the kink",
                 "clamp": "clamp at the bounds", "max": "ties in max", "min": "ties in min",
                 "amax": "ties in amax", "linalg.vector_norm": "the norm at 0",
                 "norm": "the norm at 0", "pow": "pow at 0**0", "prod": "prod with zeros",
                 "linalg.det": "the determinant of a singular matrix"}


def _special_cases():
    cases = []
    for info in opinfo.op_db:
        for dtype in DTYPES:
            if dtype in info.dtypes and info.supports("reverse", dtype):
                for sample in info.special_inputs(dtype):
                    cases.append(pytest.param(info, dtype, sample.index,
                                              id=f"{info.name}-{dtype.name}-{sample.name}"))
    return cases


def _special(info, dtype, index):
    return list(info.special_inputs(dtype, requires_grad=True))[index]


def _numpy(value):
    if isinstance(value, E.Tensor):
        return value.detach().numpy().copy()
    if isinstance(value, (tuple, list)):     # named tuples (max(dim)) become plain ones
        return tuple(_numpy(v) for v in value)
    return value


def refengine_gradients(info, sample) -> tuple:
    """``(gradients of output.sum() for each tensor requiring grad, raw output)``."""
    raw = info(sample)
    out = sample.output_process_fn_grad(raw)
    inputs = [t for t in sample.tensors() if t.requires_grad]
    grads = E.autograd.grad(out, inputs, grad_outputs=E.ones_like(out), allow_unused=True,
                            materialize_grads=True)
    return [g.numpy().copy() for g in grads], _numpy(raw)


def _assert_gradients(actual, expected, what, source="the rule"):
    assert len(actual) == len(expected), \
        f"{what}: {len(actual)} gradients, expected {len(expected)}"
    for k, (a, e) in enumerate(zip(actual, expected)):
        e = np.broadcast_to(np.asarray(e, dtype=a.dtype), a.shape)
        assert np.allclose(a, e, rtol=1e-12, atol=1e-12, equal_nan=True), (
            f"{what}, input {k}: gradient {a.tolist()}, {source} gives {e.tolist()}")


@pytest.mark.parametrize("info, dtype, index", _special_cases())
def test_special_sample_follows_its_rule(info, dtype, index):
    sample = _special(info, dtype, index)
    assert sample.rule, f"{info.name} {sample!r}: a special sample must name its rule"
    # an in-place variant (relu_) computes what its op (relu) computes: same rule
    rule = RULES.get(info.name, RULES.get(info.name.rstrip("_"), {})).get(sample.name)
    if rule is None:
        pytest.skip(f"no rule value is written in edge_rules.py for {info.name} "
                    f"{sample.name!r} ({sample.rule}); test_special_sample_matches_torch "
                    "still checks it")
    actual, raw = refengine_gradients(info, sample)
    inp, args, kwargs = sample.numpy()
    expected = rule(inp, *args, **kwargs, out=raw)
    _assert_gradients(actual, expected, f"{info.name} {dtype.name} {sample!r} ({sample.rule})")


@pytest.mark.parametrize("info, dtype, index", _special_cases())
def test_special_sample_matches_torch(info, dtype, index):
    torch = pytest.importorskip("torch")
    from adcheck.runner.samplecall import SampleCall
    sample = _special(info, dtype, index)
    if info.torch_op() is None:
        pytest.skip(f"{info.name} has no torch counterpart (torch_name is None)")
    known = info.known_failure("torch_reverse", dtype, sample)
    try:
        call = SampleCall(info, sample, engine="torch")
        out = call.func(*call.inputs)
        grads = torch.autograd.grad(out, call.inputs, grad_outputs=torch.ones_like(out),
                                    allow_unused=True, materialize_grads=True)
        actual, _ = refengine_gradients(info, sample)
        _assert_gradients(actual, [g.detach().numpy(force=True) for g in grads],
                          f"{info.name} {dtype.name} {sample!r}", source="torch")
    except (AssertionError, RuntimeError, NotImplementedError):
        if known is None:
            raise
        return   # declared on the OpInfo, with its reason
    assert known is None, f"{info.name}: matches torch although declared a known failure " \
        f"({known.reason})"


@pytest.mark.parametrize("name", sorted(ISSUE_6_EDGES))
def test_every_edge_of_issue_6_has_a_special_sample(name):
    info = opinfo.get(name)
    samples = list(info.special_inputs(E.float64))
    assert samples, f"{name}: no special sample for {ISSUE_6_EDGES[name]}"
    assert all(s.name in RULES.get(name, {}) for s in samples), (
        f"{name}: a special sample without a rule value in edge_rules.py")


SINGULAR = (((1.0, 2.0), (2.0, 4.0)),                                 # rank 1 of 2
            ((1.0, 2.0, 3.0), (2.0, 4.0, 6.0), (-1.0, -2.0, -3.0)),   # rank 1 of 3
            ((1.0, 2.0, 3.0), (4.0, 5.0, 6.0), (7.0, 8.0, 9.0)))      # rank 2 of 3


@pytest.mark.parametrize("matrix", SINGULAR, ids=("rank1of2", "rank1of3", "rank2of3"))
def test_det_of_a_singular_matrix_has_the_cofactor_gradient(matrix):
    # det is a polynomial, so rule 1 of the note applies: the gradient exists and is the
    # cofactor matrix, singular A included (the limit of det(A) A^-T). torch 2.13 returns
    # zeros at an exactly singular matrix (and the cofactors 1e-12 away), so it is no
    # oracle here. This runs the op directly, whatever linalg.det's special samples are.
    det = opinfo.get("linalg.det").op
    a = E.tensor(np.array(matrix), requires_grad=True)
    grad, = E.autograd.grad(det(a), [a])
    assert np.allclose(grad.numpy(), cofactors(np.array(matrix)), atol=1e-12), grad.numpy()


def test_cofactors_are_the_derivative_of_det():
    a = np.array(SINGULAR[2]) + np.diag([0.3, -0.2, 0.1])    # any matrix: check one entry
    step = np.zeros((3, 3))
    step[1, 2] = 1e-6
    slope = (np.linalg.det(a + step) - np.linalg.det(a - step)) / 2e-6
    assert abs(slope - cofactors(a)[1, 2]) < 1e-8
    assert cofactors(np.array(SINGULAR[1])).tolist() == np.zeros((3, 3)).tolist()


def test_the_rules_are_not_the_ops_own_gradient():
    # the rule table must disagree with a wrong rule: abs'(0) = 1 (the right derivative)
    x = np.array([-1.0, 0.0, 2.0])
    assert RULES["abs"]["special points"](x)[0].tolist() == [-1.0, 0.0, 1.0]
    assert RULES["sqrt"]["special points"](np.array([0.0, 4.0]))[0].tolist() == [np.inf, 0.25]
