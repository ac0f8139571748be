"""What the first evaluation of a function held, measured once per function and shapes.

``Problem`` measures the bytes its first evaluation holds at its peak
(``heap.transient_bytes``), so that the budget can count them. The measure
costs a heap trim and five reads and writes of /proc files: about 35 us a
check, a twentieth of a small fast check, more in wall time on a loaded
machine. A check repeated on the same function at inputs of the same
shapes and dtypes (a test's loop over seeds, ``adcheck ops`` over the
samples of one op, a benchmark) would measure the same thing again, so the
measure is kept by ``key``: the function's code and what it closes over,
and the inputs' types, shapes, dtypes and whether they require grad.

The measure only sizes batches (``gradcheck.core.budget``): no verdict
reads it. A function is known by its code object and the identity of the
objects it closes over (its closure cells, its defaults, the object a
method is bound to), each held by a weak reference that must still name
it when the measure is looked up (an identity is reused only after its
object is gone); plain values (numbers, strings) count by value. A
function that closes over something that has no weak reference and is no
plain value (a list, a dict) is measured every time.
"""
from __future__ import annotations

import weakref

from adcheck.gradcheck.core import heap

#: (bytes measured, the weak references the key's identities need alive), by key
_KEPT: dict = {}
#: entries kept at most (cleared whole when full: a cache, not a record)
KEPT_SIZE = 256
_PLAIN = (bool, int, float, complex, str, bytes, type(None))


class _Unkeyed(Exception):
    """A value that cannot be part of a key."""


def _token(value, refs: list):
    """A hashable stand-in for ``value``: itself if plain, else its identity,
    with a weak reference to it appended to ``refs``."""
    if type(value) in _PLAIN:
        return value
    if type(value) is tuple:
        return tuple(_token(v, refs) for v in value)
    try:
        refs.append(weakref.ref(value))
    except TypeError:
        raise _Unkeyed from None
    return ("id", id(value))


#: the attribute by which a function adcheck builds names what it is a fixed
#: transform of (``secondorder``'s first derivative: a new closure over new lists
#: each check, so by its own code and cells it would be measured every time)
TRANSFORM_OF = "_adcheck_transform_of"


def _function_token(func, refs: list):
    """What identifies ``func``'s behaviour: its code and what it closes over."""
    transform = getattr(func, TRANSFORM_OF, None)
    if transform is not None:
        kind, of = transform
        return ("transform", kind, _function_token(of, refs))
    bound = getattr(func, "__self__", None)
    inner = getattr(func, "__func__", None)
    if bound is not None and inner is not None:   # a bound method (Function.apply)
        return ("method", _token(bound, refs), _function_token(inner, refs))
    code = getattr(func, "__code__", None)
    if code is None:
        return ("object", _token(func, refs))
    cells = []
    for cell in func.__closure__ or ():
        try:
            cells.append(_token(cell.cell_contents, refs))
        except ValueError:   # an empty cell (a name not yet bound)
            cells.append(("empty",))
    kwdefaults = func.__kwdefaults__ or {}
    return (_token(code, refs), tuple(cells), _token(func.__defaults__, refs),
            tuple((k, _token(v, refs)) for k, v in sorted(kwdefaults.items())))


def key(func, inputs: tuple, engine) -> tuple | None:
    """The key of ``func`` at ``inputs`` (tensors by type, shape, dtype and
    whether they require grad; other inputs as tokens) and the weak
    references it needs alive; ``None`` where ``func`` cannot be keyed."""
    refs: list = []
    try:
        parts = [engine.name, _function_token(func, refs)]
        for x in inputs:
            if engine.is_tensor(x):
                parts.append((type(x), tuple(x.shape), str(x.dtype), engine.requires_grad(x)))
            else:
                parts.append(_token(x, refs))
        found = tuple(parts)
        hash(found)
    except Exception:   # (_Unkeyed, an unhashable value, an engine's own refusal)
        return None
    return found, tuple(refs)


def first_evaluation(call, func, inputs: tuple, engine):
    """``(call(), bytes)`` as ``heap.transient_bytes`` gives them, the bytes
    measured only the first time ``func`` is evaluated at inputs like these."""
    keyed = key(func, inputs, engine)
    held = _held(keyed)
    if held is not None:
        return call(), held
    result, measured = heap.transient_bytes(call)
    if keyed is not None and measured is not None:
        if len(_KEPT) >= KEPT_SIZE:
            _KEPT.clear()
        _KEPT[keyed[0]] = (measured, keyed[1])
    return result, measured


def known_bytes(func, inputs: tuple, engine) -> int | None:
    """What ``first_evaluation`` measured for ``func`` at inputs like
    ``inputs``; ``None`` where it measured nothing that still holds."""
    return _held(key(func, inputs, engine))


def _held(keyed) -> int | None:
    """The bytes kept for ``keyed`` (``key``'s result), or ``None`` where none
    are or an identity of its key is gone."""
    found = None if keyed is None else _KEPT.get(keyed[0])
    if found is None:
        return None
    for ref in found[1]:   # (a loop: all() of a generator is a frame more)
        if ref() is None:
            return None
    return found[0]
