"""What a harvested sample is made of, for every engine's samples
(``targets`` for torch and refengine, ``jaxsample`` for JAX): the ``Sample``,
the function that applies a recorded Function with the other arguments held,
the names of its arguments and the notes of its application."""
from __future__ import annotations

import inspect
from dataclasses import dataclass, field

from adcheck.gradcheck.harvest.recording import Application, namespace


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


def _function(app: Application, template: list, positions: list, copy_inputs: bool):
    """``f(*differentiated)``: the Function applied with the other arguments held."""
    cls, kwargs, extra = app.cls, app.kwargs, set(app.extra_outputs)

    def harvested(*tensors):
        args = list(template)
        for i, t in zip(positions, tensors):
            args[i] = t
        if copy_inputs:     # a Function that writes into its inputs must not write into ours
            args = [a.clone() if namespace(a) is not None else a for a in args]
        out = cls.apply(*args, **kwargs)
        if not extra:
            return out
        kept = tuple(o for i, o in enumerate(out) if i not in extra)
        return kept[0] if len(kept) == 1 else kept
    harvested.__name__ = app.name
    harvested.autograd_function = cls   # (its own vmap rule is checked too: verdict.vmaprule)
    return harvested


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
    return notes
