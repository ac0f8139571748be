"""What a harvested sample is made of, for every engine's samples
(``targets`` for torch and refengine, ``jaxsample`` for JAX): the ``Sample``,
the function that applies a recorded Function with the other arguments held,
the names of its arguments and the notes of its application."""
from __future__ import annotations

import inspect
import weakref
from dataclasses import dataclass, field

from adcheck.gradcheck.harvest.closures import substituted
from adcheck.gradcheck.harvest.recording import Application, fresh, namespace


@dataclass
class Sample:
    """One application of an op, ready for ``check(func, inputs, input_names=names)``;
    ``skip``: why it is not checked (then ``func`` is ``None``)."""

    func: object
    inputs: tuple
    names: tuple
    shapes: str
    dtype: str
    notes: list = field(default_factory=list)
    skip: str | None = None
    #: checked in the model's own low-precision dtype (it does not run in double)
    narrow: bool = False


def _argument_names(cls, count: int) -> list:
    """The names of ``forward``'s arguments after ``ctx`` (when it takes one)."""
    try:
        params = list(inspect.signature(cls.forward).parameters)
    except (TypeError, ValueError):
        params = []
    if params and params[0] == "ctx":
        params = params[1:]
    return [params[i] if i < len(params) else f"arg{i}" for i in range(count)]


def _function(app: Application, template: list, positions: list, copy_inputs: bool,
              swapped: list | None = None):
    """``f(*tensors)``: the Function applied to the arguments at ``positions``,
    the others held; the model's parameters at ``swapped`` (default
    ``positions``) stand in for the model's own while it runs (``AsParameters``)."""
    cls, kwargs, extra = app.cls, app.kwargs, set(app.extra_outputs)
    held = {i: app.params[i] for i in (positions if swapped is None else swapped)
            if i in app.params}

    def harvested(*tensors):
        args = list(template)
        for i, t in zip(positions, tensors):
            args[i] = t
        for c, inside in app.closed.items():   # (its callable reads the check's tensors too)
            args[c] = substituted(template[c], {t: args[i] for t, i in inside.items()})
        if copy_inputs:     # a Function that writes into its inputs must not write into ours
            args = [a.clone() if namespace(a) is not None else a for a in args]
        args = [a if namespace(a) is not None else fresh(a) for a in args]
        swap = AsParameters(app.model, {name: args[i] for i, name in held.items()})
        swap.enter()
        try:
            out = cls.apply(*args, **fresh(kwargs))
        finally:
            swap.exit()
        swap.attach(out)
        if not extra:
            return out
        kept = tuple(o for i, o in enumerate(out) if i not in extra)
        return kept[0] if len(kept) == 1 else kept
    harvested.__name__ = app.name
    harvested.autograd_function = cls   # (its own vmap rule is checked too: verdict.vmaprule)
    return harvested


class AsParameters:
    """Each of the model's parameters named in ``by_name`` made the tensor the
    check passes for it, wherever the model holds it, while the Function's
    forward runs (``enter``/``exit``) and again while its backward runs (node
    hooks: ``attach``). A Function handed a parameter that also reads it
    through the model (an adjoint ODE or SDE solver's parameters, torchsde's
    and torchdiffeq's; a checkpoint) computed with the model's own: the
    check's tensor reached neither side, both derivatives were zero, and the
    check passed having judged nothing."""

    def __init__(self, model, by_name: dict):
        # (no model, or no parameter among the arguments: nothing to swap, nothing done;
        # a swap a raising backward left is put back first, else its tensor is taken
        # for the model's own and put back in its place afterwards)
        if model is not None and by_name:
            settle()
        params = dict(model.named_parameters()) if model is not None and by_name else {}
        # (a Function's node by weak reference: the id of a freed one may come back
        # on a new node; torch's own nodes, which only ``attach`` meets, by id)
        self.swaps, self.hooked, self.hooked_ids = [], weakref.WeakSet(), set()
        for name, tensor in by_name.items():
            original = params.get(name)
            for module in model.modules() if original is not None else ():
                store = module.__dict__.get("_parameters") or {}
                self.swaps += [(store, key, tensor, value) for key, value in store.items()
                               if value is original]

    def enter(self, *_) -> None:
        if not self.swaps:
            return
        settle()
        for store, key, tensor, _ in self.swaps:
            store[key] = tensor
        _PENDING.append(self)

    def exit(self, *_) -> None:
        if not self.swaps:
            return
        for store, key, _, value in reversed(self.swaps):
            store[key] = value
        if self in _PENDING:
            _PENDING.remove(self)

    def attach(self, out) -> None:
        """Swap again around the backward of the Function's outputs ``out``, and
        around that of every Function its backward applies (a double backward)."""
        if not self.swaps:
            return
        outs = out if isinstance(out, (tuple, list)) else (out,)
        self._hook([o.grad_fn for o in outs if namespace(o) is not None])

    def _hook(self, nodes) -> None:
        for node in nodes:
            if node is not None and not self._seen(node):
                node.register_prehook(self.enter)
                node.register_hook(self._after)

    def _seen(self, node) -> bool:
        """Whether ``node`` is hooked already (and from now on it is)."""
        try:
            seen = node in self.hooked
            self.hooked.add(node)
        except TypeError:   # (no weak reference to torch's own nodes)
            seen = id(node) in self.hooked_ids
            self.hooked_ids.add(id(node))
        return seen

    def _after(self, grad_inputs, _grad_outputs) -> None:
        """After a hooked backward: the swap undone, and the Functions that
        backward applied (xitorch's quad differentiates its integrand with
        another quad) hooked too, since their backward, a second derivative,
        reads the model's parameters as this one did."""
        self.exit()
        self._hook(_functions_below([g.grad_fn for g in grad_inputs
                                     if g is not None and namespace(g) is not None]))


def _functions_below(roots: list, limit: int = 10_000) -> list:
    """The nodes of custom Functions (a Python backward, which may read a
    model's parameters as it runs) in the graphs of ``roots``, up to ``limit``
    nodes walked."""
    found, seen, stack = [], set(), list(roots)
    while stack and len(seen) < limit:
        node = stack.pop()
        if node is None or id(node) in seen:
            continue
        seen.add(id(node))
        if any(c.__name__ == "BackwardCFunction" for c in type(node).__mro__):
            found.append(node)   # (torch's class of every Function's node)
        stack.extend(child for child, _ in getattr(node, "next_functions", ()))
    return found


#: swaps made for a backward that has not ended (it raised): undone by the next
#: swap, and by ``settle`` once a sample's checks are done
_PENDING: list = []


def settle() -> None:
    """Put back every parameter a swap left in place."""
    for swap in reversed(list(_PENDING)):
        swap.exit()


def _notes(app: Application) -> list:
    notes = []
    if app.mutated:
        which = ", ".join(str(i) for i in app.mutated)
        notes.append(f"writes into its input{'s' if len(app.mutated) > 1 else ''} {which} in "
                     "place: checked on copies")
    if app.extra_outputs:
        which = ", ".join(str(i) for i in app.extra_outputs)
        notes.append(f"outputs {which} are not tensors: checked in its tensor outputs")
    if app.depth:
        notes.append("applied inside another Function's forward: checked on its own")
    if app.transformed:
        notes.append("applied inside a torch.func transform (vmap, grad): checked on its own "
                     "at one example's inputs")
    if app.closed:
        names = _argument_names(app.cls, len(app.args))
        callables = ", ".join(names[c] for c in sorted(app.closed))
        held = ", ".join(dict.fromkeys(names[i] for inside in app.closed.values()
                                       for i in sorted(inside.values())))
        notes.append(f"the callable it takes ({callables}) reads tensors it takes too "
                     f"({held}): checked with the callable rebuilt around the check's copies")
    if app.checkpointed:
        notes.append("applied in a reentrant checkpoint's forward (under no_grad; its backward "
                     "runs it again with grad): checked as that recomputation runs it")
    return notes
