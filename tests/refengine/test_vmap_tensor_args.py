"""``vmap`` called with tensors only (``batching/api.py``: no tree to flatten)
against torch.vmap, and the cases that still take the tree's path."""
from __future__ import annotations

from collections import namedtuple

import numpy as np
import pytest

import adcheck.refengine as E

A = np.arange(24, dtype=np.float64).reshape(4, 3, 2) / 7.0 - 1.0
W = np.array([0.5, -1.5, 2.0])


def _run(M, func, args, **options):
    return M.vmap(func, **options)(*[M.tensor(a) for a in args])


def _same(ours, theirs):
    if isinstance(theirs, tuple):
        assert type(ours) is type(theirs) or isinstance(ours, tuple)
        assert len(ours) == len(theirs)
        for a, b in zip(ours, theirs):
            _same(a, b)
        return
    assert tuple(ours.shape) == tuple(theirs.shape)
    # within 2 ulps: numpy's exp and torch's round alike on some CPUs and not on
    # others (without AVX-512, one entry of exp(A) is an ulp apart); a mapping
    # error moves the entries by far more (no two entries of A are close)
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=2 * np.finfo(A.dtype).eps,
                               atol=0)


@pytest.mark.parametrize("options, args", [
    ({}, (A,)),
    ({"in_dims": 1}, (A,)),
    ({"in_dims": (2, None)}, (A, W)),
    ({"in_dims": (0, None), "out_dims": 1}, (A, W[:2])),
    ({"in_dims": (0, 0), "out_dims": -1}, (A, A)),
])
def test_tensor_arguments_map_as_torchs(torch, options, args):
    ours = _run(E, lambda x, *r: E.exp(x) * (r[0] if r else 1.0), args, **options)
    theirs = _run(torch, lambda x, *r: torch.exp(x) * (r[0] if r else 1.0), args, **options)
    _same(ours, theirs)


def test_tuple_of_tensors_out_as_torchs(torch):
    def program(M):
        return _run(M, lambda x, w: (x * w, x.sum(0)), (A, W[:2]),
                    in_dims=(0, None), out_dims=1)
    _same(program(E), program(torch))


def test_in_dims_as_a_list_is_refused_as_torch_refuses_it(torch):
    # (torch 2.13 takes only an int or a tuple at the top; a list inside a tuple,
    # for a list argument, is tests/refengine/test_vmap_dims.py's)
    for M in (E, torch):
        with pytest.raises(ValueError, match="in_dims"):
            _run(M, M.mul, (A, W[:2]), in_dims=[0, None])


def test_named_tuple_out_keeps_its_type():
    Pair = namedtuple("Pair", "double half")
    out = E.vmap(lambda x: Pair(x * 2, x / 2))(E.tensor(A))
    assert type(out) is Pair
    np.testing.assert_array_equal(out.double.numpy(), A * 2)


def test_per_output_out_dims_as_torchs(torch):
    def program(M):
        return _run(M, lambda x: (x * 2, x.sum(0)), (A,), out_dims=(1, 0))
    _same(program(E), program(torch))


def test_in_dims_of_the_wrong_length_is_refused_naming_the_structure():
    with pytest.raises(ValueError, match="in_dims is not compatible with the structure"):
        E.vmap(E.add, in_dims=(0,))(E.tensor(A), E.tensor(A))


def test_a_number_among_the_arguments_takes_the_trees_path(torch):
    def program(M):
        return M.vmap(lambda x, s: x * s, in_dims=(0, None))(M.tensor(A), 3.0)
    _same(program(E), program(torch))


def test_a_non_tensor_result_is_refused():
    with pytest.raises(ValueError, match="must return tensors"):
        E.vmap(lambda x: 3)(E.tensor(A))
