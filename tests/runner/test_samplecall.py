"""SampleCall's walk over a sample's structure and over the op's results.

The tensors a sample nests in lists, tuples and dicts are gradcheck's inputs,
in order, and go back where they came from; the NaN guard reads every
tensor of the result, a torch result tuple (``torch.return_types``) included.
"""
from __future__ import annotations

import numpy as np
import pytest

from adcheck import refengine
from adcheck.opinfo import OpInfo, SampleInput
from adcheck.opinfo.samples import make
from adcheck.runner.samplecall import SampleCall


def _nested_samples(opinfo, dtype):
    yield SampleInput(make((2,), values=[1.0, 2.0]),
                      args=([make((2,), values=[3.0, 4.0]), make((2,), requires_grad=False,
                                                                 values=[5.0, 6.0])],),
                      kwargs={"scale": (make((), values=2.0),)})


def _combine(x, pair, *, scale):
    return (x + pair[0] * pair[1]) * scale[0]


def test_inputs_are_the_differentiable_tensors_in_order_and_go_back_in_place():
    info = OpInfo("combine", _combine, sample_func=_nested_samples, dtypes=(refengine.float64,))
    sample = next(iter(info.sample_inputs(refengine.float64, requires_grad=True)))
    call = SampleCall(info, sample)
    assert [t.tolist() for t in call.inputs] == [[1.0, 2.0], [3.0, 4.0], 2.0]
    x, y, s = (refengine.tensor(v, dtype=refengine.float64)
               for v in ([1.0, 1.0], [0.5, 0.5], 3.0))
    # by hand: (x + y * [5, 6]) * s, the constant [5, 6] kept from the sample
    assert call.func(x, y, s).tolist() == [(1 + 0.5 * 5) * 3, (1 + 0.5 * 6) * 3]


def _matrix_with_nan(opinfo, dtype):
    yield SampleInput(make((2, 2), values=[[1.0, float("nan")], [0.0, 1.0]]))


def test_the_nan_guard_reads_torch_result_tuples():
    torch = pytest.importorskip("torch", reason="the torch engine needs torch")
    info = OpInfo("slogdet_nan", lambda a: refengine.linalg.slogdet(a),
                  torch_fn=torch.linalg.slogdet, sample_func=_matrix_with_nan,
                  dtypes=(refengine.float64,))
    sample = next(iter(info.sample_inputs(refengine.float64, requires_grad=True)))
    call = SampleCall(info, sample, engine="torch")
    result = call.func(*call.inputs)
    assert type(result).__module__ == "torch.return_types"
    assert np.isnan(result.logabsdet.item())          # torch's own answer has the NaN
    assert call.nan_outputs() is not None and "is NaN" in call.nan_outputs()


def _flat_samples(opinfo, dtype):
    yield SampleInput(make((2,), values=[1.0, 2.0]),
                      args=(make((2,), requires_grad=False, values=[5.0, 6.0]), 3,
                            make((2,), values=[0.5, -1.0])),
                      kwargs={"shift": make((), values=0.25), "power": 2})


def _affine(x, const, k, y, *, shift, power):
    return (x * const + k * y ** power) - shift


def test_a_flat_sample_places_its_inputs_where_they_came_from():
    # the usual sample (a tensor input, args and kwargs of leaves), whose inputs
    # are put in their slots without walking the structure, against the same
    # formula evaluated by hand with NumPy
    info = OpInfo("affine", _affine, sample_func=_flat_samples, dtypes=(refengine.float64,))
    sample = next(iter(info.sample_inputs(refengine.float64, requires_grad=True)))
    call = SampleCall(info, sample)
    assert [t.tolist() for t in call.inputs] == [[1.0, 2.0], [0.5, -1.0], 0.25]
    x, y, shift = np.array([2.0, -1.0]), np.array([1.5, 0.5]), 0.75
    got = call.func(*(refengine.tensor(v, dtype=refengine.float64) for v in (x, y, shift)))
    np.testing.assert_array_equal(got.numpy(), x * np.array([5.0, 6.0]) + 3 * y ** 2 - shift)
    # the sample itself is untouched: its own inputs give its own value again
    np.testing.assert_array_equal(call.func(*call.inputs).detach().numpy(),
                                  np.array([1.0, 2.0]) * [5.0, 6.0] + 3 * np.array([0.5, -1.0]) ** 2
                                  - 0.25)


def test_the_mpmath_reference_of_a_flat_sample_gets_its_constants_in_place():
    # the reference's calls put each input and each other tensor (as mpmath values,
    # a fresh copy per call) in its slot without the walk: the same formula by hand
    import mpmath

    def mp_affine(x, const, k, y, *, shift, power):
        assert all(isinstance(v, mpmath.mpf) for v in (*x, *const, *y, shift))
        return np.array([a * c + k * b ** power - shift for a, c, b in zip(x, const, y)])
    info = OpInfo("affine", _affine, sample_func=_flat_samples, dtypes=(refengine.float64,),
                  mpmath_ref=mp_affine)
    sample = next(iter(info.sample_inputs(refengine.float64, requires_grad=True)))
    call = SampleCall(info, sample)
    x, y = np.array([mpmath.mpf(2), mpmath.mpf(-1)]), np.array([mpmath.mpf(1.5), mpmath.mpf(0.5)])
    reference = call.reference
    for _ in range(2):    # the constant's copy is the sample's each time
        got = reference(x, y, mpmath.mpf(0.75))
        assert [float(v) for v in got] == [2 * 5 + 3 * 1.5 ** 2 - 0.75, -1 * 6 + 3 * 0.5 ** 2 - 0.75]


def test_placing_the_reference_arguments_matches_the_walk_on_every_registry_sample():
    # every first sample of the built-in registry, flat or not: the arguments the
    # reference receives placed in their slots are the tree walk's, leaf for leaf
    from adcheck.refengine.pytree import tree_leaves
    from adcheck.runner.registry import OpinfoRegistry
    registry = OpinfoRegistry()
    flat = 0
    for info in registry.ops():
        for sample in list(info.sample_inputs(refengine.float64, requires_grad=True))[:1]:
            call = SampleCall(info, sample)
            if call._slots is None:
                continue
            flat += 1
            inputs = tuple(object() for _ in call.inputs)
            marks: dict = {}

            def other(t):
                return marks.setdefault(id(t), object())
            placed = call._placed(inputs, other)
            walked = call._rebuild(inputs, other)
            assert [id(v) for v in tree_leaves(list(placed))] == \
                [id(v) for v in tree_leaves(list(walked))], info.name
    assert flat > 150
