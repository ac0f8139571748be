"""A module's parameters while a backward recomputes its forward (checkpointing).

A module is checked as a function of copies of its parameters: each call
substitutes them for the module's own (``torch.func.functional_call``) and
puts the module's back on return. A forward that recomputes part of itself
during the backward (``torch.utils.checkpoint`` without reentrance, a
memory-saving step of many models) reads the module's parameters again
then, after the call has returned: it got the module's own, not the copies
the outputs were computed with. At the given inputs they hold the same
values, but where a check moves the parameters (an explored point, a
float64 copy of a float32 layer) the backward computed the derivative of
another function, or raised on the dtypes. ``record`` notes, for each output
of a call, the parameters it was computed with (``inherit``: and for what is
derived from them, a first derivative); ``during_backward`` puts them in the
module again while a backward of those outputs runs.
"""
from __future__ import annotations

import weakref
from contextlib import contextmanager, nullcontext

#: id(output) -> (a weak reference to it, the module, its parameters by name); an
#: entry goes when its output does (the reference's callback), so no parameters
#: are held past the outputs computed with them
_MADE_WITH: dict = {}


def record(outputs, module, params: dict) -> None:
    """Note that the torch tensors ``outputs`` were computed by ``module`` with
    ``params`` (a name -> tensor mapping, as ``functional_call`` takes it);
    only those with a graph, which a backward can run on."""
    for out in outputs:
        if getattr(out, "grad_fn", None) is not None:
            key = id(out)
            _MADE_WITH[key] = (weakref.ref(out, lambda _, key=key: _MADE_WITH.pop(key, None)),
                               module, params)


def inherit(derived, outputs) -> None:
    """Note that the tensors ``derived`` (a first derivative, outputs marked
    undefined) come from ``outputs``' module call: a backward of them runs with
    its parameters too."""
    entry = _entry(outputs)
    if entry is not None:
        record(derived, entry[1], entry[2])


def _entry(outputs):
    for out in outputs:
        entry = _MADE_WITH.get(id(out))
        if entry is not None and entry[0]() is out:
            return entry
    return None


def during_backward(outputs):
    """A context that puts back in the module the parameters ``outputs`` were
    computed with (``record``), for a backward of them; nothing to do (a null
    context) for outputs no module call made."""
    entry = _entry(outputs)
    return nullcontext() if entry is None else _reparametrized(entry[1], entry[2])


@contextmanager
def _reparametrized(module, params: dict):
    from torch.nn.utils.stateless import _reparametrize_module
    # (what functional_call does around the forward, tied weights included)
    with _reparametrize_module(module, params, tie_weights=True):
        yield
