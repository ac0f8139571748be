"""refengine.pytree: flatten, unflatten and map over nested containers, with the
semantics of torch.utils._pytree for lists, tuples, named tuples and dicts.

Expectations are written by hand, checked against torch's pytree where it
is installed, and a hypothesis property checks the round trip on random trees.
"""
from __future__ import annotations

import time
from collections import OrderedDict, defaultdict, namedtuple

import pytest
from hypothesis import given
from hypothesis import strategies as st

from adcheck.refengine.pytree import TreeSpec, tree_flatten, tree_leaves, tree_map, tree_unflatten

Pair = namedtuple("Pair", "values indices")


class MyList(list):
    """A list subclass: a leaf, as in torch's pytree."""


TREE = [1, (2, Pair(3, [4])), {"b": 5, "a": (6, None)}, "text"]


def test_leaves_come_depth_first_and_dicts_in_insertion_order():
    leaves, spec = tree_flatten(TREE)
    assert leaves == [1, 2, 3, 4, 5, 6, None, "text"]
    assert spec.num_leaves == 8
    assert tree_leaves(TREE) == leaves


def test_unflatten_rebuilds_types_keys_and_order():
    _, spec = tree_flatten(TREE)
    rebuilt = tree_unflatten(list("abcdefgh"), spec)
    assert rebuilt == ["a", ("b", Pair("c", ["d"])), {"b": "e", "a": ("f", "g")}, "h"]
    assert type(rebuilt[1][1]) is Pair and list(rebuilt[2]) == ["b", "a"]


def test_map_applies_to_leaves_only():
    assert tree_map(lambda v: v * 10, {"x": [1, 2], "y": (3,)}) == {"x": [10, 20], "y": (30,)}
    assert tree_map(str, Pair(1, (2,))) == Pair("1", ("2",))


def test_dict_variants_keep_their_class():
    ordered = OrderedDict(b=1, a=2)
    assert tree_map(lambda v: -v, ordered) == OrderedDict(b=-1, a=-2)
    assert type(tree_map(lambda v: v, ordered)) is OrderedDict
    counts = defaultdict(int, {"k": 1})
    mapped = tree_map(lambda v: v + 1, counts)
    assert type(mapped) is defaultdict and mapped.default_factory is int and mapped == {"k": 2}


def test_other_subclasses_none_and_strings_are_leaves():
    assert tree_flatten(MyList([1, 2]))[0] == [MyList([1, 2])]
    assert tree_leaves([time.gmtime(0)]) == [time.gmtime(0)]
    assert tree_flatten(None)[0] == [None]
    assert tree_flatten("abc")[0] == ["abc"]


def test_empty_containers_hold_no_leaves():
    leaves, spec = tree_flatten([[], (), {}])
    assert leaves == [] and spec.num_leaves == 0
    assert tree_unflatten([], spec) == [[], (), {}]


def test_is_leaf_stops_the_descent():
    singletons = lambda v: isinstance(v, list) and len(v) == 1  # noqa: E731
    assert tree_flatten([[1], [2, 3]], is_leaf=singletons)[0] == [[1], 2, 3]
    assert tree_map(repr, [[1], [2, 3]], is_leaf=singletons) == ["[1]", ["2", "3"]]


def test_wrong_number_of_leaves_is_named():
    _, spec = tree_flatten((1, 2))
    with pytest.raises(ValueError, match="holds 2 leaves but 3 were given"):
        tree_unflatten([1, 2, 3], spec)


def test_spec_is_data():
    _, spec = tree_flatten({"a": [1]})
    assert spec == TreeSpec("dict", dict, ["a"], (TreeSpec("list", list, None,
                                                              (TreeSpec("leaf"),)),))


def test_agrees_with_torch_pytree():
    torch_pytree = pytest.importorskip("torch.utils._pytree",
                                       reason="torch's pytree is the oracle here")
    # time.struct_time: a struct sequence that is not torch's, a leaf to torch
    for tree in (TREE, [[], (), {}], OrderedDict(b=[1], a=2), Pair(1, {"z": 2, "y": 3}),
                 MyList([1]), None, [time.gmtime(0)]):
        assert tree_leaves(tree) == torch_pytree.tree_leaves(tree)
        assert tree_map(repr, tree) == torch_pytree.tree_map(repr, tree)


def test_torch_return_types_agree_with_torch_pytree():
    torch = pytest.importorskip("torch", reason="torch's return types and pytree are the oracle")
    from torch.utils import _pytree as torch_pytree
    result = torch.max(torch.tensor([[1.0, 5.0], [7.0, 2.0]]), dim=1)   # (values, indices)
    assert [t.tolist() for t in tree_leaves(result)] == \
        [t.tolist() for t in torch_pytree.tree_leaves(result)]
    mapped = tree_map(lambda t: t + 1, [result])
    assert type(mapped[0]) is type(result)
    assert mapped[0].values.tolist() == [6.0, 8.0] and mapped[0].indices.tolist() == [2, 1]


leaves = st.one_of(st.integers(), st.none(), st.text(max_size=3), st.floats(allow_nan=False))
trees = st.recursive(
    leaves,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.lists(inner, max_size=4).map(tuple),
        st.tuples(inner, inner).map(lambda t: Pair(*t)),
        st.dictionaries(st.text(max_size=3), inner, max_size=4),
        st.dictionaries(st.text(max_size=3), inner, max_size=3).map(OrderedDict)),
    max_leaves=20)


@given(trees)
def test_flatten_then_unflatten_is_the_identity(tree):
    flat, spec = tree_flatten(tree)
    rebuilt = tree_unflatten(flat, spec)
    assert rebuilt == tree
    assert tree_flatten(rebuilt) == (flat, spec)
    assert tree_map(lambda v: v, tree) == tree
