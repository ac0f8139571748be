"""Tensors a Function's callable argument closes over, and the callable rebuilt
around others.

A Function may take a callable and, beside it, the tensors that callable
reads: zuko's ``GaussLegendre.apply(f, a, b, n, *phi)`` with
``f = partial(self.g, signal)`` and ``signal`` among ``phi``, so that its
backward differentiates ``f`` in ``phi``. A check that hands the Function its
own copies of ``phi`` leaves ``f`` reading the model's tensors: neither side
sees the copies, both derivatives in them are zero, and the check passes
having judged nothing (or the backward's ``autograd.grad`` raises "appears
to not have been used in the graph"). So the callables are rebuilt with the
check's tensors in place of the ones they hold: through ``functools.partial``
arguments, function closures and defaults, lists and tuples, and the
attributes of a bound method's object (zuko's ``SOSPolynomialTransform``
passes ``self.g``, which reads ``self.a``: the method is bound to a shallow
copy of the object holding the check's tensor, the object itself left as
it was), a few levels deep. Imports nothing of gradcheck.
"""
from __future__ import annotations

import copy
import functools
import types

#: how many levels of partials and closures are looked through
DEPTH = 4


def _children(value):
    """The values ``value`` holds that a rebuild can replace."""
    if isinstance(value, functools.partial):
        return [value.func, *value.args, *value.keywords.values()]
    if isinstance(value, types.FunctionType):
        cells = []
        for cell in value.__closure__ or ():
            try:
                cells.append(cell.cell_contents)
            except ValueError:   # (an empty cell)
                pass
        return cells + list(value.__defaults__ or ())
    if isinstance(value, (list, tuple)):
        return list(value)
    if isinstance(value, types.MethodType):
        return [value.__func__, *_fields(value.__self__).values()]
    return []


def _fields(owner) -> dict:
    """The instance attributes of a bound method's object (none for a class or
    a module of Python, whose attributes are no state of one call)."""
    if isinstance(owner, (type, types.ModuleType)):
        return {}
    return dict(getattr(owner, "__dict__", {}))


def held_ids(value, depth: int = DEPTH) -> set:
    """The ids of every object ``value`` holds, ``depth`` levels down."""
    found, layer = set(), [value]
    for _ in range(depth):
        layer = [child for v in layer for child in _children(v)]
        found.update(id(child) for child in layer)
    return found


def closed_over(args, is_tensor) -> dict:
    """``{callable position: {id(tensor): tensor position}}``: the tensor arguments
    (``is_tensor``) that a callable argument holds itself."""
    tensors = {id(a): i for i, a in enumerate(args) if is_tensor(a)}
    found = {}
    for c, value in enumerate(args):
        if tensors and callable(value) and not is_tensor(value):
            mapping = {t: i for t, i in tensors.items() if t in held_ids(value)}
            if mapping:
                found[c] = mapping
    return found


def substituted(value, replace: dict, depth: int = DEPTH):
    """``value`` rebuilt with ``replace[id(x)]`` for each ``x`` it holds (``value``
    itself where it holds none of them)."""
    if id(value) in replace:
        return replace[id(value)]
    if depth == 0 or not (held_ids(value, depth) & replace.keys()):
        return value
    def sub(v):
        return substituted(v, replace, depth - 1)
    if isinstance(value, functools.partial):
        return functools.partial(sub(value.func), *map(sub, value.args),
                                 **{k: sub(v) for k, v in value.keywords.items()})
    if isinstance(value, types.FunctionType):
        cells = []
        for cell in value.__closure__ or ():
            try:
                cells.append(types.CellType(sub(cell.cell_contents)))
            except ValueError:
                cells.append(types.CellType())
        defaults = None if value.__defaults__ is None else tuple(map(sub, value.__defaults__))
        rebuilt = types.FunctionType(value.__code__, value.__globals__, value.__name__,
                                     defaults, tuple(cells) if value.__closure__ else None)
        rebuilt.__kwdefaults__ = value.__kwdefaults__
        rebuilt.__dict__.update(value.__dict__)
        return rebuilt
    if isinstance(value, (list, tuple)):
        return type(value)(map(sub, value)) if type(value) in (list, tuple) else value
    if isinstance(value, types.MethodType):
        fields = _fields(value.__self__)
        changed = {k: sub(v) for k, v in fields.items()}
        owner = value.__self__
        if any(changed[k] is not v for k, v in fields.items()):
            owner = copy.copy(owner)
            owner.__dict__.update({k: v for k, v in changed.items() if v is not fields[k]})
        return types.MethodType(sub(value.__func__), owner)
    return value
