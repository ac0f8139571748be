"""A custom ``autograd.Function`` under ``vmap``: its own ``vmap`` rule.

As in PyTorch, a Function that overrides the ``vmap`` staticmethod runs that
rule when its ``apply`` meets batched arguments: the rule gets ``info``
(``batch_size``, ``randomness``), ``in_dims`` (per argument, the batch
dimension of its physical tensor, or ``None``) and the physical arguments,
and returns ``(outputs, out_dims)``. The rule usually calls ``apply`` again
on the physical tensors, which records the Function's node as a plain call.

A Function without a rule of its own runs its forward on the batched
tensors, as PyTorch does with ``generate_vmap_rule=True`` (PyTorch refuses
it otherwise: docs/differences.md); where its result must be differentiable
(grad enabled, an argument requiring grad), it runs once per example on the
examples' slices and its results are stacked (``looped_call``), so that
each example's node records its own backward.
"""
from __future__ import annotations

from collections import namedtuple

from ..grad_mode import is_grad_enabled
from ..tensor import Tensor
from .batched import BatchedTensor, top_level

#: what a rule is told of the vmap it runs in (PyTorch's ``VmapInfo``)
VmapInfo = namedtuple("VmapInfo", ["batch_size", "randomness"])
#: the ``randomness`` each running vmap level was given, by level
RANDOMNESS: dict = {}
#: how many times a Function's own rule has run, in any thread (``rules_run``)
_RULES_RUN = [0]


def rules_run() -> int:
    """How many times a Function's own vmap rule has run so far: a caller that
    batches someone else's function can tell whether its result came through
    a rule of the user's (which may mix the examples) or through the ops' own."""
    return _RULES_RUN[0]


def custom_rule_call(cls, args: tuple, kwargs: dict):
    """``cls``'s rule on ``args`` where one of them is batched, its outputs
    batched again; ``NotImplemented`` where none is (a plain call)."""
    level = top_level(args)
    if not level:
        return NotImplemented
    in_dims, physical, size = [], [], None
    for a in args:
        if isinstance(a, BatchedTensor) and a._level == level:
            in_dims.append(0)
            physical.append(a._value)
            size = a._value.shape[0]
        else:
            in_dims.append(None)
            physical.append(a)
    _RULES_RUN[0] += 1
    info = VmapInfo(size, RANDOMNESS.get(level, "error"))
    result = cls.vmap(info, tuple(in_dims), *physical, **kwargs)
    if not (isinstance(result, tuple) and len(result) == 2):
        raise RuntimeError(f"{cls.__name__}.vmap must return a tuple (output, out_dims), got "
                           f"{type(result).__name__}")
    outputs, out_dims = result
    if isinstance(outputs, tuple):
        dims = out_dims if isinstance(out_dims, tuple) else (out_dims,) * len(outputs)
        if len(dims) != len(outputs):
            raise RuntimeError(f"{cls.__name__}.vmap returned {len(outputs)} outputs and "
                               f"{len(dims)} out_dims; give one out_dim per output")
        return tuple(_batched(o, d, level, cls) for o, d in zip(outputs, dims))
    if isinstance(out_dims, tuple):
        raise RuntimeError(f"{cls.__name__}.vmap returned one output and out_dims "
                           f"{out_dims!r}; give one int (or None) for one output")
    return _batched(outputs, out_dims, level, cls)


def _batched(output, out_dim, level: int, cls):
    """A rule's physical output with its batch at ``out_dim`` as a batched tensor
    (``None``: an output that does not depend on the batch, returned as it is)."""
    if out_dim is None or not isinstance(output, Tensor):
        return output
    if not isinstance(out_dim, int):
        raise RuntimeError(f"{cls.__name__}.vmap returned out_dims entry {out_dim!r}; each "
                           "is an int or None")
    return BatchedTensor(output.movedim(out_dim, 0), level)


def looped_call(cls, args: tuple, kwargs: dict):
    """``cls.apply`` once per example of the batched ``args``, its outputs
    stacked and batched again, where a result must be differentiable;
    ``NotImplemented`` elsewhere (the forward then runs on the batch)."""
    level = top_level(args)
    batched = [isinstance(a, BatchedTensor) and a._level == level for a in args]
    if not level or not is_grad_enabled() or not any(
            (a._value if b else a).requires_grad for a, b in zip(args, batched)
            if isinstance(a, (Tensor, BatchedTensor))):
        return NotImplemented
    size = next(a._value.shape[0] for a, b in zip(args, batched) if b)
    # (select and stack are differentiable: the graph runs from the batch to each
    # example's node and back)
    results = [cls.apply(*[a._value.select(0, k) if b else a for a, b in zip(args, batched)],
                         **kwargs) for k in range(size)]
    if not isinstance(results[0], tuple):
        return _stacked(results, level)
    return tuple(_stacked([r[i] for r in results], level) for i in range(len(results[0])))


def _stacked(outputs: list, level: int):
    from ..ops.opdef import OPS
    from ..ops.dispatch import call
    if not isinstance(outputs[0], Tensor):
        return outputs[0]
    return BatchedTensor(call(OPS["stack"], outputs), level)
