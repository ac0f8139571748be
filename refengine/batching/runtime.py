"""Running an op on batched tensors: unwrap one level, apply the op's
batching rule, wrap the physical result again.

A batching rule (``OpDef.batch``) receives a ``BatchCall``: the op, its
arguments with the batched ones replaced by their physical tensors (batch
at dimension 0), which of them are batched, and the batch size. It returns
the physical result(s), batch at dimension 0, usually by calling the op (or
another op) once on reshaped arguments. Ops without a rule, and rules that
meet a case they do not handle (they raise ``NotBatchable``), run once per
batch element: slower, and always right.
"""
from __future__ import annotations

import itertools
import threading

from ..ops.dispatch import VMAP, _run as run_bound, call as run_op, call_inplace
from ..ops.registry import OPS
from ..tensor import Tensor
from .batched import BatchedTensor, NotBatchable, top_level
from .rules import elementwise, pad_to

_fallbacks = threading.local()
_levels = itertools.count(1)
_active_lock = threading.Lock()


def new_level() -> int:
    """Enter a vmap level: until it exits, the dispatcher looks for batched arguments."""
    with _active_lock:
        VMAP.active += 1
    return next(_levels)


def exit_level() -> None:
    """Leave a vmap level entered with ``new_level``."""
    with _active_lock:
        VMAP.active -= 1


class BatchCall:
    """One op call at one vmap level, in physical terms."""

    __slots__ = ("op", "env", "batched", "items", "size", "inplace", "level", "lower")

    def __init__(self, op, env: dict, level: int, inplace: bool):
        self.op, self.level, self.inplace = op, level, inplace
        self.env = dict(env)
        self.batched: set = set()       # tensor arguments batched at this level
        self.items: dict = {}           # list argument -> which items are batched
        self.lower = False              # a batched tensor left in env (another level)
        sizes = set()
        # every argument, not only op.inputs: a tensor may also come as a
        # scalar parameter (clamp's min, a fill value)
        for name, value in env.items():
            if isinstance(value, (list, tuple)):
                flags = [isinstance(v, BatchedTensor) and v._level == level for v in value]
                if any(flags):
                    self.items[name] = flags
                    self.env[name] = [v._value if f else v for v, f in zip(value, flags)]
                    sizes.update(v._value.shape[0] for v, f in zip(value, flags) if f)
                self.lower = self.lower or top_level(self.env[name]) > 0
            elif isinstance(value, BatchedTensor):
                if value._level != level:
                    self.lower = True
                    continue
                self.batched.add(name)
                value = self.env[name] = value._value
                sizes.add(value.shape[0])
                # (nested vmap: the physical tensor is batched at a level below)
                self.lower = self.lower or isinstance(value, BatchedTensor)
        if len(sizes) > 1:
            raise ValueError(f"vmap: the batched inputs of {op.name} have different batch sizes "
                             f"{sorted(sizes)}; every batched input must have the same size")
        self.size = sizes.pop()

    def rank(self, name: str) -> int:
        """The logical (per-example) number of dimensions of argument ``name``."""
        value = self.env[name]
        return value.ndim - 1 if name in self.batched else value.ndim

    def is_batched(self, name: str) -> bool:
        return name in self.batched or name in self.items

    def run(this, op=None, /, **changes):
        """Call ``op`` (default: this op) on the physical arguments, with ``changes``
        (``this`` rather than ``self``: ops have an argument named ``self``)."""
        op = op or this.op
        env = {**this.env, **changes}
        if op is this.op and not this.inplace and len(env) == len(this.env):
            # the op's own arguments, as its binder made them (the changes replace
            # some): bound already, so the dispatcher runs them as they are; with no
            # batched tensor left among them it need not look for one (VMAP.run
            # would find none and return NotImplemented)
            unbatched = not this.lower and not (changes and top_level(changes.values()))
            return run_bound(op, env, None, unbatched)
        args = {k: v for k, v in env.items() if k in op.signature.parameters}
        if this.inplace:
            self_ = args.pop("self")
            return call_inplace(op, self_, **args)
        return run_op(op, **args)

    def materialize(self, name: str):
        """Argument ``name`` with a batch dimension, expanded if it had none."""
        value = self.env[name]
        if name in self.batched:
            return value
        return value.unsqueeze(0).expand(self.size, *value.shape)


def run(op, env: dict, out) -> object:
    """The dispatcher's entry while vmap runs (``VMAP.run``): the op on the
    batched arguments of the top level, or ``NotImplemented`` without any."""
    if out is None and op.batch is elementwise:
        result = _elementwise_direct(op, env)
        if result is not None:
            return result
    level = top_level(env.values())
    if out is not None:
        level = max(level, top_level((out,)))
    if not level:
        return NotImplemented
    if out is not None:
        env = {**env, "self": out}
    call = BatchCall(op, env, level, inplace=out is not None)
    if out is not None and "self" not in call.batched:
        raise RuntimeError(
            f"vmap: {op.name}_() writes into an unbatched tensor a batched result; an in-place "
            "op needs its self to be batched too: use the out-of-place op instead")
    rule = op.batch
    result = None
    if rule is not None:
        try:
            result = rule(call)
        except NotBatchable:
            result = None
    if result is None:
        result = loop(call)
    if out is not None:
        return out
    if isinstance(result, tuple):
        return tuple(BatchedTensor(r, level) for r in result)
    return BatchedTensor(result, level)


def _elementwise_direct(op, env: dict):
    """The elementwise rule's plain case without a ``BatchCall``: tensors and
    numbers only, batched at one level with no level below, one batch size,
    no batched 0-d example (whose promotion the rule adjusts). Every op of a
    batched backward through an elementwise node is such a call, and the
    general path scans the arguments three times to reach the same physical
    call. ``None`` for anything else: the general path then decides.
    """
    level = size = 0
    ranks = {}          # batched argument -> its logical rank
    top = 0             # the largest logical rank
    for name, value in env.items():
        if isinstance(value, BatchedTensor):
            phys = value._value
            if (level and value._level != level) or isinstance(phys, BatchedTensor):
                return None
            level = value._level
            n = phys.ndim - 1
            if n == 0 or (size and phys.shape[0] != size):
                return None
            size = phys.shape[0]
            ranks[name] = n
        elif isinstance(value, Tensor):
            n = value.ndim
        elif isinstance(value, (list, tuple)):
            return None
        else:
            continue
        if n > top:
            top = n
    if not level:
        return None
    args = dict(env)
    for name, value in env.items():
        if name in ranks:
            args[name] = value._value if ranks[name] == top else pad_to(value._value, top)
    try:
        # (the rule's own call: bound already, no batched tensor left among them)
        result = run_bound(op, args, None, True)
    except NotBatchable:
        return None
    if isinstance(result, tuple):
        return tuple(BatchedTensor(r, level) for r in result)
    return BatchedTensor(result, level)


def loop(call: BatchCall):
    """The op once per batch element, results stacked: the rule of last resort."""
    op = call.op
    _count_fallback(op.name)
    select, stack = OPS["select"], OPS["stack"]
    outputs = []
    for b in range(call.size):
        args = {}
        for k, v in call.env.items():
            if k in call.batched:
                v = run_op(select, v, 0, b)
            elif k in call.items:
                v = [run_op(select, x, 0, b) if f else x for x, f in zip(v, call.items[k])]
            args[k] = v
        if call.inplace:
            self_ = args.pop("self")
            call_inplace(op, self_, **args)
            continue
        outputs.append(run_op(op, **args))
    if call.inplace:
        return call.env["self"]
    if isinstance(outputs[0], tuple):
        return tuple(run_op(stack, [o[i] for o in outputs], 0) for i in range(len(outputs[0])))
    return run_op(stack, outputs, 0)


def _count_fallback(name: str) -> None:
    counts = getattr(_fallbacks, "counts", None)
    if counts is not None:
        counts[name] = counts.get(name, 0) + 1


class record_fallbacks:
    """Context manager: which ops ran the loop fallback, and how often.

    >>> with record_fallbacks() as seen:
    ...     refengine.vmap(f)(x)
    >>> seen        # {} when every op had a batching rule
    """

    def __enter__(self) -> dict:
        self._previous = getattr(_fallbacks, "counts", None)
        _fallbacks.counts = {}
        return _fallbacks.counts

    def __exit__(self, *exc) -> None:
        seen = _fallbacks.counts
        _fallbacks.counts = self._previous
        if self._previous is not None:
            for k, v in seen.items():
                self._previous[k] = self._previous.get(k, 0) + v


VMAP.run = run   # the dispatcher's slot: from now on a batched argument reaches this module
