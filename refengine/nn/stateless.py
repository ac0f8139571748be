"""``functional_call``: run a module with other tensors in place of its
parameters and buffers, as ``torch.func.functional_call`` does.

The module is left as it was: the tensors are swapped in for the call and
the originals put back afterwards, even when ``forward`` raises. Keys are
fully qualified names (``"0.weight"``, ``"layer.bias"``). What torch does,
this does (checked against torch 2.13 in ``tests/refengine/test_nn_stateless.py``):

- ``tie_weights=True``: a tensor registered under several names (a weight
  shared by two layers) is replaced under all of them when one name is
  given; giving two names of one tied tensor two different tensors is a
  ``ValueError``.
- ``strict=True``: every parameter and buffer must be given, and nothing
  else (``RuntimeError`` listing the unexpected and the missing keys).
- ``strict=False``: missing names keep the module's own tensors, and a key
  naming no parameter or buffer of an existing submodule is set as a plain
  attribute for the call.
- several dicts may be given (a tuple of them); a key in two of them is a
  ``ValueError``.

>>> lin = Linear(2, 1)
>>> functional_call(lin, {"weight": refengine.ones(1, 2), "bias": refengine.zeros(1)},
...                 (refengine.tensor([1., 2.]),))
tensor([3.])
"""
from __future__ import annotations

from contextlib import contextmanager

from .module import Module


def _merged(parameter_and_buffer_dicts) -> dict:
    if isinstance(parameter_and_buffer_dicts, dict):
        return dict(parameter_and_buffer_dicts)
    merged: dict = {}
    for one in parameter_and_buffer_dicts:
        repeated = sorted(set(one) & set(merged))
        if repeated:
            raise ValueError(f"{repeated} appeared in multiple dictionaries; behavior of "
                             "functional call is ambiguous")
        merged.update(one)
    return merged


def _registered(module: Module) -> dict:
    """Every name a parameter or buffer is registered under (tied ones included)."""
    named = list(module.named_parameters(remove_duplicate=False))
    named += module.named_buffers(remove_duplicate=False)
    return dict(named)


def _untied(module: Module, given: dict) -> dict:
    """``given`` with each tied tensor's other names filled in."""
    groups: dict = {}
    for name, tensor in _registered(module).items():
        groups.setdefault(id(tensor), []).append(name)
    out = dict(given)
    for names in groups.values():
        named = [n for n in names if n in given]
        if len({id(given[n]) for n in named}) > 1:
            raise ValueError(f"functional_call got multiple values for keys {named}, which "
                             "are tied. Consider using tie_weights=False")
        if named:
            out.update({n: given[named[0]] for n in names})
    return out


def _check_strict(module: Module, given: dict) -> None:
    names = _registered(module)
    unexpected = [k for k in given if k not in names]
    missing = [k for k in sorted(names) if k not in given]
    if unexpected or missing:
        lines = [f"Error(s) in reparametrizing for {type(module).__name__}:"]
        if unexpected:
            lines.append("\tUnexpected key(s): " + ", ".join(map(repr, unexpected)) + ".")
        if missing:
            lines.append("\tMissing key(s): " + ", ".join(map(repr, missing)) + ".")
        raise RuntimeError("\n".join(lines))


def _owner(module: Module, name: str) -> tuple:
    """``(submodule, attribute)`` that the dotted ``name`` refers to."""
    *path, leaf = name.split(".")
    owner = module
    for part in path:
        child = owner._modules.get(part) if isinstance(owner, Module) else None
        if child is None:
            raise AttributeError(f"{type(owner).__name__} has no attribute `{part}`")
        owner = child
    return owner, leaf


@contextmanager
def _swapped(module: Module, tensors: dict):
    """Put ``tensors`` in place of the module's own for the block, then restore."""
    undo = []
    try:
        for name, tensor in tensors.items():
            owner, leaf = _owner(module, name)
            store = next((s for s in (owner._parameters, owner._buffers) if leaf in s), None)
            if store is not None:
                undo.append((store, leaf, store[leaf]))
                store[leaf] = tensor
            else:  # not registered: a plain attribute for the call (torch, strict=False)
                undo.append((owner, leaf, owner.__dict__.get(leaf, _ABSENT)))
                object.__setattr__(owner, leaf, tensor)
        yield
    finally:
        for where, leaf, old in reversed(undo):
            if isinstance(where, Module):
                if old is _ABSENT:
                    where.__dict__.pop(leaf, None)
                else:
                    object.__setattr__(where, leaf, old)
            else:
                where[leaf] = old


_ABSENT = object()


def functional_call(module: Module, parameter_and_buffer_dicts, args=None, kwargs=None, *,
                    tie_weights: bool = True, strict: bool = False):
    """``module(*args, **kwargs)`` with the tensors of ``parameter_and_buffer_dicts``
    (a dict, or a tuple of dicts, keyed by qualified name) in place of the
    module's parameters and buffers; the module itself is unchanged after.

    ``args`` may be one tensor or a tuple; see the module docstring for
    ``tie_weights`` and ``strict``.
    """
    given = _merged(parameter_and_buffer_dicts)
    if tie_weights:
        given = _untied(module, given)
    if strict:
        _check_strict(module, given)
    if args is None:
        args = ()
    elif not isinstance(args, tuple):
        args = (args,)
    with _swapped(module, given):
        return module(*args, **(kwargs or {}))
