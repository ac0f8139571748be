"""How an operation is defined: once, with its forward, vjp and jvp together.

An ``OpDef`` is data (``registry``). Its forward is a NumPy function whose parameters use
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

import inspect
from typing import Callable

from ..autograd.tangents import absent
from ..dtypes import SCALAR_NAMES
from ..batching.rules import elementwise
from .dispatch import call
from .layout import NOT_ITERATED, arrange
# the data these helpers fill, re-exported for the op families
from .registry import METHODS, OPS, PUBLIC, OpDef, Rule, _register, public  # noqa: F401


def no_bool(message: str) -> Callable:
    """A ``refuse`` check: PyTorch rejects bool operands here (``message`` is its error)."""
    def check(tensors: dict) -> None:
        if any(getattr(t, "dtype", None) is not None and t.dtype.name == "bool"
               for t in tensors.values() if not isinstance(t, list)):
            raise RuntimeError(message)
    return check


def _complex_one(tensors: dict):
    """The first complex tensor among a call's ``tensors`` (lists of tensors
    aside), or ``None``."""
    for t in tensors.values():
        if not isinstance(t, list) and t.dtype.is_complex:
            return t
    return None


def no_complex(name: str) -> Callable:
    """A ``refuse`` check: the op is defined on real numbers only."""
    def check(tensors: dict) -> None:
        t = _complex_one(tensors)
        if t is not None:
            raise RuntimeError(f"{name} is not supported for complex tensors "
                               f"(got {t.dtype}): the complex numbers are not ordered")
    return check


def no_complex_kernel(kernel: str | None, message: str | None = None) -> Callable:
    """A ``refuse`` check: PyTorch has no kernel of this op for complex tensors
    and raises ``NotImplementedError`` in the forward, with ``message`` or its
    dispatcher's words for ``kernel``. NumPy would compute a value, and the
    rules (written for real numbers) would differentiate it wrongly."""
    def check(tensors: dict) -> None:
        t = _complex_one(tensors)
        if t is not None:
            raise NotImplementedError(
                message or f'"{kernel}" not implemented for \'{SCALAR_NAMES[t.dtype]}\'')
    return check


def defop(name: str, forward: Callable, *, vjp: dict | None, jvp=None, **options) -> OpDef:
    """Define an op with its rules written out (``vjp=None``: not differentiable)."""
    inputs = options.pop("inputs", None) or _tensor_params(forward)
    # an elementwise op is computed by torch's TensorIterator, whose result's
    # layout follows the operands' (layout.py), unless it is a view or a copy
    if options.get("batch") is elementwise and name not in NOT_ITERATED:
        options.setdefault("layout", arrange)
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
    # ``tangent_derivatives`` replaces some of them in the jvp only: the same
    # value written another way, for in-place ops whose operands alias (PyTorch
    # evaluates its formula on the written values)
    in_jvp = dict(derivatives, **{k: Rule(v) for k, v in
                                  options.pop("tangent_derivatives", {}).items()})

    def vjp_rule(d: Rule) -> Rule:
        return Rule(lambda **env: env["grad"] * d(env).conj(), ("grad",) + d.params)

    params = tuple(dict.fromkeys(
        [f"{k}_t" for k in in_jvp] + [p for d in in_jvp.values() for p in d.params]))

    def jvp(**env):
        total = None
        for k, d in in_jvp.items():
            t = env[f"{k}_t"]
            if absent(t):
                continue
            term = d(env) * t
            total = term if total is None else total + term
        return total
    options.setdefault("batch", elementwise)
    # ``jvp`` replaces the sum of terms: torch's formula evaluated otherwise (div's)
    rule = options.pop("jvp", None) or Rule(jvp, params)
    return defop(name, forward, vjp={k: vjp_rule(d) for k, d in derivatives.items()},
                 jvp=rule, inputs=tuple(derivatives), **options)


def deflinear(name: str, forward: Callable, *, vjp: dict, **options) -> OpDef:
    """Define a linear op: its jvp is the op itself applied to the tangents."""
    op: OpDef | None = None

    def jvp(**env):
        # ``params`` follow the forward's parameters in order: tangents for
        # the differentiable inputs, the arguments themselves for the rest
        return call(op, *[env[p] for p in params])
    inputs = options.pop("inputs", None) or _tensor_params(forward)
    nondiff = options.get("nondiff", ())
    params = tuple(f"{k}_t" if k in inputs and k not in nondiff else k
                   for k in inspect.signature(forward).parameters)
    op = defop(name, forward, vjp=vjp, jvp=Rule(jvp, params), inputs=inputs, **options)
    return op
