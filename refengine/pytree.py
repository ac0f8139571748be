"""Nested containers of values ("trees"): flatten, rebuild, map.

A *tree* is a value built from lists, tuples, named tuples, torch's result
tuples (``torch.return_types.max`` and the like) and dicts (``dict``,
``OrderedDict``, ``defaultdict``) nested to any depth; everything else,
``None`` included, is a *leaf*. These are the semantics of
``torch.utils._pytree`` for those types: a dict's children come in insertion
order, a named tuple or torch result tuple is rebuilt as its own class, and
a subclass of list, tuple or dict that is none of the above is a leaf (other
struct sequences such as ``time.struct_time`` too, as torch registers only
its own). ``is_leaf(value)``, when given, makes any value it returns True
for a leaf, container or not.

Example::

    from adcheck.refengine.pytree import tree_flatten, tree_map, tree_unflatten
    leaves, spec = tree_flatten({"x": [1, 2], "y": (3,)})   # [1, 2, 3]
    tree_unflatten([10, 20, 30], spec)                        # {'x': [10, 20], 'y': (30,)}
    tree_map(lambda v: v * 2, ([1], {"k": 2}))                # ([2], {'k': 4})
"""
from __future__ import annotations

from collections import OrderedDict, defaultdict
from dataclasses import dataclass
from typing import Any, Callable

__all__ = ["TreeSpec", "tree_flatten", "tree_leaves", "tree_map", "tree_unflatten"]


@dataclass(frozen=True)
class TreeSpec:
    """The shape of a tree without its leaves.

    ``kind`` is ``"leaf"``, ``"list"``, ``"tuple"``, ``"namedtuple"``,
    ``"structseq"`` or ``"dict"``; ``type`` the container's class;
    ``context`` what rebuilding needs besides the children (a dict's keys, a
    defaultdict's factory and keys); ``children`` the specs of the children,
    in order.
    """

    kind: str
    type: Any = None
    context: Any = None
    children: tuple = ()

    @property
    def num_leaves(self) -> int:
        """How many leaves a tree of this shape holds."""
        if self.kind == "leaf":
            return 1
        return sum(child.num_leaves for child in self.children)

    def is_leaf(self) -> bool:
        return self.kind == "leaf"


LEAF = TreeSpec("leaf")


def _node(value) -> tuple | None:
    """``(kind, type, context, children)`` of a container, ``None`` for a leaf."""
    cls = type(value)
    if cls is list:
        return "list", list, None, list(value)
    if cls is tuple:
        return "tuple", tuple, None, list(value)
    if not isinstance(value, (tuple, dict)):
        return None     # the common leaf (a number, a tensor) and list subclasses
    if isinstance(value, tuple) and hasattr(cls, "_fields"):
        return "namedtuple", cls, None, list(value)
    if _is_structseq(cls):
        return "structseq", cls, None, list(value)
    if cls in (dict, OrderedDict):
        return "dict", cls, list(value), list(value.values())
    if cls is defaultdict:
        return "dict", cls, (value.default_factory, list(value)), list(value.values())
    return None


def _is_structseq(cls) -> bool:
    """Whether ``cls`` is one of torch's result tuples: a struct sequence (a tuple
    subclass made in C, told apart by its field counts) of ``torch.return_types``."""
    return cls.__module__ == "torch.return_types" and cls.__bases__ == (tuple,) and all(
        isinstance(getattr(cls, name, None), int)
        for name in ("n_fields", "n_sequence_fields", "n_unnamed_fields"))


def _flatten(tree, is_leaf, leaves: list) -> TreeSpec:
    node = None if is_leaf is not None and is_leaf(tree) else _node(tree)
    if node is None:
        leaves.append(tree)
        return LEAF
    kind, cls, context, children = node
    return TreeSpec(kind, cls, context, tuple(_flatten(c, is_leaf, leaves) for c in children))


def tree_flatten(tree, is_leaf: Callable[[Any], bool] | None = None) -> tuple[list, TreeSpec]:
    """The leaves of ``tree`` in depth-first order, and its ``TreeSpec``."""
    leaves: list = []
    spec = _flatten(tree, is_leaf, leaves)
    return leaves, spec


def tree_leaves(tree, is_leaf: Callable[[Any], bool] | None = None) -> list:
    """The leaves of ``tree`` in depth-first order."""
    leaves: list = []
    _collect(tree, is_leaf, leaves)
    return leaves


def _collect(tree, is_leaf, leaves: list) -> None:
    # tree_flatten without building the spec, and without a call per number:
    # tensor() reads every number of its data through here
    node = None if is_leaf is not None and is_leaf(tree) else _node(tree)
    if node is None:
        leaves.append(tree)
        return
    for child in node[3]:
        if type(child) in _SCALARS or (is_leaf is not None and is_leaf(child)):
            leaves.append(child)
        else:
            _collect(child, is_leaf, leaves)


_SCALARS = frozenset((int, float, complex, bool, str, type(None)))


def _build(spec: TreeSpec, leaves):
    if spec.kind == "leaf":
        return next(leaves)
    children = [_build(child, leaves) for child in spec.children]
    if spec.kind == "list":
        return children
    if spec.kind == "tuple":
        return tuple(children)
    if spec.kind == "namedtuple":
        return spec.type(*children)
    if spec.kind == "structseq":
        return spec.type(children)     # built from one sequence, unlike a named tuple
    if spec.type is defaultdict:
        factory, keys = spec.context
        return defaultdict(factory, zip(keys, children))
    return spec.type(zip(spec.context, children))


def tree_unflatten(leaves, spec: TreeSpec):
    """The tree of shape ``spec`` holding ``leaves`` (in ``tree_flatten``'s order).

    Raises ``ValueError`` when the number of leaves does not match the spec.
    """
    leaves = list(leaves)
    if len(leaves) != spec.num_leaves:
        raise ValueError(f"tree_unflatten: the spec holds {spec.num_leaves} leaves but "
                         f"{len(leaves)} were given; pass one value per leaf of the "
                         "flattened tree")
    return _build(spec, iter(leaves))


def tree_map(fn: Callable, tree, is_leaf: Callable[[Any], bool] | None = None):
    """``tree`` with every leaf ``x`` replaced by ``fn(x)``; containers are rebuilt
    with the same types, keys and order."""
    leaves, spec = tree_flatten(tree, is_leaf)
    return tree_unflatten([fn(leaf) for leaf in leaves], spec)
