"""How an operation is defined: once, with its forward, vjp and jvp together.

An ``OpDef`` is data. Its forward is a NumPy function whose parameters use
PyTorch's names (``self``, ``other``, ``dim``); its derivative rules are
functions of refengine tensors whose parameter names say what they need
(``grad``, ``result``, ``self``, ``self_t``...), so a rule reads side by
side with PyTorch's formula and what a rule names is what the node saves.

The helpers below are named after the structure they exploit:

- ``defop``: forward, vjp per input and jvp all written out;
- ``defelementwise``: an elementwise function given by its derivative(s);
  the vjp ``grad * conj(D)`` and the jvp ``sum(D * input_t)`` are derived
  (valid for real functions and for holomorphic complex ones);
- ``deflinear``: a linear function; its jvp is the function of the tangents.
"""
from __future__ import annotations

import functools
import inspect
from dataclasses import dataclass, field
from typing import Callable

OPS: dict[str, "OpDef"] = {}


class Rule:
    """A derivative rule: a function called with the names it asks for."""

    __slots__ = ("_positional", "fn", "params")

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

    def __call__(self, env: dict):
        if self._positional:
            return self.fn(*[env[p] for p in self.params])
        return self.fn(**{p: env[p] for p in self.params})


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
                if needs.get(inp) and rule is not None:
                    names.extend(p for p in rule.params
                                 if p not in ("grad", "grads") and p not in names)
            names = self._saved_names[key] = tuple(names)
        return names


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


def no_bool(message: str) -> Callable:
    """A ``refuse`` check: PyTorch rejects bool operands here (``message`` is its error)."""
    def check(tensors: dict) -> None:
        if any(getattr(t, "dtype", None) is not None and t.dtype.name == "bool"
               for t in tensors.values() if not isinstance(t, list)):
            raise RuntimeError(message)
    return check


def no_complex(name: str) -> Callable:
    """A ``refuse`` check: the op is defined on real numbers only."""
    def check(tensors: dict) -> None:
        for t in tensors.values():
            if not isinstance(t, list) and t.dtype.is_complex:
                raise RuntimeError(f"{name} is not supported for complex tensors "
                                   f"(got {t.dtype}): the complex numbers are not ordered")
    return check


def _register(op: OpDef) -> OpDef:
    if op.name in OPS:
        raise ValueError(f"refengine op {op.name!r} is defined twice")
    OPS[op.name] = op
    return op


def defop(name: str, forward: Callable, *, vjp: dict | None, jvp=None, **options) -> OpDef:
    """Define an op with its rules written out (``vjp=None``: not differentiable)."""
    inputs = options.pop("inputs", None) or _tensor_params(forward)
    return _register(OpDef(name, forward, inputs, vjp, jvp, **options))


def _tensor_params(forward: Callable) -> tuple:
    params = list(inspect.signature(forward).parameters)
    return tuple(p for p in params if p in ("self", "other", "input"))[:2] or (params[0],)


def defelementwise(name: str, forward: Callable, derivatives: dict | Callable, **options) -> OpDef:
    """Define an elementwise op from its partial derivative(s).

    ``derivatives`` maps each input to ``D``, the ordinary (holomorphic)
    derivative as a rule. Then the vjp is ``grad * conj(D)`` (the conjugate
    Wirtinger convention) and the jvp is ``sum of D * input_t``. Do not use
    this for functions that are not holomorphic (abs, angle, sgn, real...).
    """
    if callable(derivatives):
        derivatives = {"self": derivatives}
    derivatives = {k: Rule(v) for k, v in derivatives.items()}

    def vjp_rule(d: Rule) -> Rule:
        return Rule(lambda **env: env["grad"] * d(env).conj(), ("grad",) + d.params)

    params = tuple(dict.fromkeys(
        [f"{k}_t" for k in derivatives] + [p for d in derivatives.values() for p in d.params]))

    def jvp(**env):
        total = None
        for k, d in derivatives.items():
            t = env[f"{k}_t"]
            if t is None:
                continue
            term = d(env) * t
            total = term if total is None else total + term
        return total
    from ..batching.rules import elementwise
    options.setdefault("batch", elementwise)
    return defop(name, forward, vjp={k: vjp_rule(d) for k, d in derivatives.items()},
                 jvp=Rule(jvp, params), inputs=tuple(derivatives), **options)


def deflinear(name: str, forward: Callable, *, vjp: dict, **options) -> OpDef:
    """Define a linear op: its jvp is the op itself applied to the tangents."""
    op: OpDef | None = None

    def jvp(**env):
        # ``params`` follow the forward's parameters in order: tangents for
        # the differentiable inputs, the arguments themselves for the rest
        return _dispatch_call()(op, *[env[p] for p in params])
    inputs = options.pop("inputs", None) or _tensor_params(forward)
    nondiff = options.get("nondiff", ())
    params = tuple(f"{k}_t" if k in inputs and k not in nondiff else k
                   for k in inspect.signature(forward).parameters)
    op = defop(name, forward, vjp=vjp, jvp=Rule(jvp, params), inputs=inputs, **options)
    return op


@functools.cache
def _dispatch_call() -> Callable:
    from .dispatch import call  # late: dispatch imports this module
    return call


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
