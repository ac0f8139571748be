"""``vmap``'s ``in_dims`` and ``out_dims`` as torch.vmap takes and refuses them:
the kinds of containers (a list only for a list, a tuple for a tuple), the
entries (an int or None), and ``None`` in ``out_dims`` for an output that does
not depend on the batch (returned as it is, as torch does)."""
from __future__ import annotations

from collections import namedtuple

import numpy as np
import pytest

import adcheck.refengine as E

Pair = namedtuple("Pair", "a b")
X = np.arange(6.0).reshape(3, 2) / 5.0 - 0.4


def _cases(M):
    """Each case: a call of ``M``'s vmap on ``X`` (``M`` refengine or torch)."""
    x = M.tensor(X)
    return {
        "in_dims a list": lambda: M.vmap(M.sin, in_dims=[0])(x),
        "in_dims a string": lambda: M.vmap(M.sin, in_dims="a")(x),
        "in_dims None": lambda: M.vmap(M.sin, in_dims=None)(x),
        "an in_dim a float": lambda: M.vmap(M.sin, in_dims=(0.5,))(x),
        "in_dims too long": lambda: M.vmap(M.sin, in_dims=(0, 0))(x),
        "a list inside a tuple, for a list": lambda: M.vmap(
            lambda a: a[0] + a[1], in_dims=([0, None],))([x, x[0]]),
        "a tuple inside a tuple, for a list": lambda: M.vmap(
            lambda a: a[0] + a[1], in_dims=((0, None),))([x, x[0]]),
        "a named tuple inside a tuple, for a tuple": lambda: M.vmap(
            lambda a: a[0] + a[1], in_dims=(Pair(0, None),))((x, x[0])),
        "a named tuple inside a tuple, for it": lambda: M.vmap(
            lambda a: a.a + a.b, in_dims=(Pair(0, None),))(Pair(x, x[0])),
        "a tuple inside a tuple, for a named tuple": lambda: M.vmap(
            lambda a: a.a + a.b, in_dims=((0, None),))(Pair(x, x[0])),
        "out_dims a list, for a tuple": lambda: M.vmap(lambda a: (a, a), out_dims=[0, 0])(x),
        "out_dims a tuple, for a list": lambda: M.vmap(lambda a: [a, a], out_dims=(0, 1))(x),
        "out_dims a list, for a list": lambda: M.vmap(lambda a: [a, a], out_dims=[0, 1])(x),
        "out_dims (1,), for one tensor": lambda: M.vmap(lambda a: a, out_dims=(1,))(x),
        "out_dims a float": lambda: M.vmap(lambda a: a, out_dims=0.5)(x),
        "out_dims a string": lambda: M.vmap(lambda a: a, out_dims="a")(x),
        "out_dims None, unbatched": lambda: M.vmap(lambda a: M.ones(2), out_dims=None)(x),
        "out_dims None, batched": lambda: M.vmap(lambda a: a, out_dims=None)(x),
        "out_dims (0, None)": lambda: M.vmap(lambda a: (a * 2, M.ones(2)),
                                             out_dims=(0, None))(x),
    }


def _outcome(call):
    """The exception's class, or the result as arrays (nested as returned)."""
    try:
        result = call()
    except Exception as exc:   # (the class is the outcome compared)
        return type(exc)
    if isinstance(result, (tuple, list)):
        return type(result).__name__, [np.asarray(r.numpy()) for r in result]
    return np.asarray(result.numpy())


CASES = list(_cases(E))


@pytest.mark.parametrize("case", CASES)
def test_vmap_takes_or_refuses_the_dims_as_torch(torch, case):
    ours, theirs = _outcome(_cases(E)[case]), _outcome(_cases(torch)[case])
    if isinstance(theirs, type):
        assert ours is theirs, f"{case}: torch raises {theirs.__name__}, refengine gives {ours}"
        return
    assert not isinstance(ours, type), f"{case}: torch maps it, refengine raises {ours}"
    if isinstance(theirs, tuple):
        assert ours[0] == theirs[0]
        for a, b in zip(ours[1], theirs[1], strict=True):
            np.testing.assert_allclose(a, b, rtol=1e-15)
    else:
        np.testing.assert_allclose(ours, theirs, rtol=1e-15)


def test_an_unbatched_output_with_out_dims_none_is_returned_as_it_is():
    ones = E.ones(2)
    got = E.vmap(lambda a: ones, out_dims=None)(E.tensor(X))
    assert got is ones
    doubled, same = E.vmap(lambda a: (a * 2, ones), out_dims=(0, None))(E.tensor(X))
    np.testing.assert_array_equal(doubled.numpy(), X * 2)
    assert same is ones


@pytest.mark.parametrize("case, words", [
    ("in_dims a list", "in_dims must be an int or a tuple"),
    ("an in_dim a float", "each entry is an integer dimension or None"),
    ("out_dims a float", "out_dims must be an int, None, or a tuple"),
    ("out_dims None, batched", "give it the dimension to put the batch at"),
    ("out_dims a list, for a tuple", "expected an int, None, or a tuple of 2 entries"),
])
def test_a_refused_dims_says_what_to_give(case, words):
    with pytest.raises(ValueError, match=words):
        _cases(E)[case]()
