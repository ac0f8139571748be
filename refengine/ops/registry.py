"""What an op is, as data: ``OpDef`` and its ``Rule``s, and the registries
(``OPS`` by name; ``PUBLIC`` and ``METHODS`` for hand-written wrappers).

This module imports nothing of refengine: the dispatcher reads it, and the
helpers that derive rules (``opdef``) fill it.
"""
from __future__ import annotations

import inspect
from dataclasses import dataclass, field
from operator import itemgetter
from typing import Callable

OPS: dict[str, "OpDef"] = {}


class Rule:
    """A derivative rule: a function called with the names it asks for."""

    __slots__ = ("_positional", "fn", "params", "_get")

    def __init__(self, fn: Callable, params: tuple | None = None):
        self.fn = fn
        self._positional = False
        if params is None:
            found = inspect.signature(fn).parameters.values()
            params = tuple(p.name for p in found)
            # the parameters are the names: pass the values by position,
            # cheaper than building a keyword dict on every call
            self._positional = all(p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
                                   for p in found)
        self.params = params
        # the values looked up in C: a comprehension was a frame on every rule call
        self._get = itemgetter(*params) if len(params) > 1 else None

    def __call__(self, env: dict):
        get = self._get
        if get is None:     # one name or none (itemgetter of one name gives no tuple)
            if not self.params:
                return self.fn()
            name = self.params[0]
            return self.fn(env[name]) if self._positional else self.fn(**{name: env[name]})
        if self._positional:
            return self.fn(*get(env))
        return self.fn(**dict(zip(self.params, get(env))))


def _camel(name: str) -> str:
    return "".join(part.capitalize() for part in name.strip("_").split("_"))


@dataclass(eq=False)
class OpDef:
    """One operation: forward, derivative rules, and how it is exposed."""

    name: str
    forward: Callable
    inputs: tuple                      # tensor parameters, by name
    vjp: dict | None                   # input name -> Rule; None: not differentiable
    jvp: Rule | None
    node: str = ""                     # grad_fn name, e.g. "ExpBackward0"
    nondiff: tuple = ()                # tensor inputs never differentiated
    promote: tuple | None = None       # inputs promoted to a common dtype
    to_float: bool = False             # integer inputs compute in the default float
    result_dtype: Callable | None = None  # promoted dtype -> output dtype
    outputs: tuple = ("result",)
    diff_outputs: tuple | None = None  # names of differentiable outputs
    view: bool = False                 # the output shares the input's memory
    method: str | None = ""            # Tensor method name ("" means same as name)
    inplace: bool = False              # also define Tensor.NAME_
    function: bool = True              # also define refengine.NAME
    variant: Callable | None = None    # bound args -> node name, when it varies
    refuse: Callable | None = None     # input tensors -> raise for inputs PyTorch rejects
    # inputs that PyTorch takes as a Scalar when given a Python number (pow's
    # exponent, clamp's bounds): such a number is no input of the node
    scalar_inputs: tuple = ()
    batch: Callable | None = None      # vmap batching rule (refengine/batching); None: a loop
    # (op, results, tensors) -> the results laid out as torch lays them out (layout.py)
    layout: Callable | None = None
    signature: inspect.Signature = field(init=False, repr=False)

    def __post_init__(self):
        self.signature = inspect.signature(self.forward)
        if not self.node:
            self.node = f"{_camel(self.name)}Backward0"
        if self.method == "":
            self.method = self.name
        if self.diff_outputs is None:
            self.diff_outputs = self.outputs
        if self.vjp is not None:
            self.vjp = {k: (v if isinstance(v, Rule) or v is None else Rule(v))
                        for k, v in self.vjp.items()}
        if self.jvp is not None and not isinstance(self.jvp, Rule):
            self.jvp = Rule(self.jvp)
        # What every call would otherwise recompute. An OpDef is not changed
        # after it is defined, so these stay true.
        self.bind = _binder(self.signature)
        self._diff_inputs = tuple(n for n in self.inputs if n not in self.nondiff)
        rules = [*(self.vjp or {}).values(), self.jvp]
        self.reads_self = any(r is not None and "self" in r.params for r in rules)
        self._saved_names: dict = {}

    @property
    def differentiable(self) -> bool:
        return self.vjp is not None

    @property
    def diff_inputs(self) -> tuple:
        return self._diff_inputs

    def saved_names(self, needs: dict) -> list:
        """What the node must save, given which inputs need a gradient."""
        key = tuple(needs.items())
        names = self._saved_names.get(key)
        if names is None:
            names = []
            for inp, rule in self.vjp.items():
                if rule is None:
                    continue
                # torch saves an output that the formula of any tensor input reads,
                # whichever inputs need a gradient (an in-place write of x ** p then
                # fails backward even when p needs none); an input only for the
                # formulas it serves. A number input (not in needs) has no formula.
                # With one tensor input its formula's tensors are saved even when the
                # input has no edge (a no_grad view that requires grad), as torch does;
                # so is a tensor that the formulas of several inputs read (torch
                # guards a save on its input's edge only when one formula reads it).
                names.extend(p for p in rule.params if p not in ("grad", "grads") and p not in names
                             and (needs.get(inp) or (inp in needs and (
                                 p in self.outputs or len(needs) == 1
                                 or p in self._shared_params()))))
            names = self._saved_names[key] = tuple(names)
        return names


    def reaches_autograd(self, tensors: dict) -> bool:
        """Whether torch would run this op's autograd kernel on ``tensors``: an
        inference tensor carries no autograd dispatch key, so a call whose
        tensors are all inference tensors (a number passed as a Scalar is no
        tensor; one wrapped as a tensor, ``x * 2``, is a normal one) is computed
        unrecorded, even when one of them requires grad. ``clone`` is
        ``empty_like`` and ``copy_`` in torch: its copy has a normal destination."""
        for name, t in tensors.items():
            if isinstance(t, list):
                if any(not x._is_inference for x in t):
                    return True
            elif not t._is_inference and not (t._wrapped_number and name in self.scalar_inputs):
                return True
        return self.name == "clone"

    def _shared_params(self) -> set:
        """The names the rules of more than one input read."""
        seen, shared = set(), set()
        for rule in self.vjp.values():
            if rule is not None:
                mine = set(rule.params)
                shared |= seen & mine
                seen |= mine
        return shared


def _binder(signature: inspect.Signature) -> Callable:
    """``bind(args, kwargs) -> {name: value}``: ``signature.bind`` plus defaults.

    ``Signature.bind`` was the largest single cost of a call on a small
    array. Forwards take plain parameters, so the common call is matched
    here by position and name; anything unusual (a missing or unknown
    argument, a name given twice) goes to ``Signature.bind``, which binds it
    or raises the TypeError Python would.
    """
    def slow(args: tuple, kwargs: dict) -> dict:
        bound = signature.bind(*args, **kwargs)
        bound.apply_defaults()
        return dict(bound.arguments)

    params = list(signature.parameters.values())
    if any(p.kind is not p.POSITIONAL_OR_KEYWORD for p in params):
        return slow
    names = tuple(p.name for p in params)
    rest = [tuple((p.name, p.default) for p in params[k:]) for k in range(len(params) + 1)]
    empty = inspect.Parameter.empty

    def bind(args: tuple, kwargs: dict) -> dict:
        if len(args) >= len(names):
            return dict(zip(names, args)) if len(args) == len(names) and not kwargs \
                else slow(args, kwargs)
        env = dict(zip(names, args))
        used = 0
        for name, default in rest[len(args)]:
            if name in kwargs:
                env[name] = kwargs[name]
                used += 1
            elif default is not empty:
                env[name] = default
            else:
                return slow(args, kwargs)
        if used != len(kwargs):
            return slow(args, kwargs)
        return env
    return bind


def _register(op: OpDef) -> OpDef:
    if op.name in OPS:
        raise ValueError(f"refengine op {op.name!r} is defined twice")
    OPS[op.name] = op
    return op


PUBLIC: dict[str, Callable] = {}     # refengine.NAME written by hand (overloads)
METHODS: dict[str, Callable] = {}    # Tensor.NAME written by hand


def public(name: str | None = None, *, method: bool | str = True, function: bool = True):
    """Expose a hand-written wrapper (for overloads such as ``max(x, dim)``)."""
    def register(fn: Callable) -> Callable:
        key = name or fn.__name__
        if function:
            PUBLIC[key] = fn
        if method:
            METHODS[key if method is True else method] = fn
        return fn
    return register
