"""The JAX adapter. Imported only when the inputs are JAX arrays.

JAX has no tape: a derivative is taken of a function, not of an output. So
the adapter sees the function (``wrap_function``) and turns each of its
calls into what the checks expect of a tape-based engine:

- called under ``enable_grad()`` (``Problem`` does so once, at the given
  inputs), the function runs through ``jax.vjp``; the pullback is kept with
  the outputs, and ``grad(outputs, ...)`` applies it;
- called on inputs that ``make_dual`` gave a tangent, it runs through
  ``jax.jvp``, and ``tangent(output)`` reads the output tangents;
- otherwise (finite differences) it simply runs.

What requires grad: every floating point or complex JAX array input, except
one marked with ``nograd(x)``; integer inputs never. Outputs of a floating
point or complex dtype count as differentiable.

Precision: gradcheck needs float64. JAX makes float32 arrays unless its
64-bit mode is on, so a floating point input while ``jax_enable_x64`` is off
is refused with a ``ValueError`` saying how to turn it on. With 64-bit mode
on, float32 inputs are accepted with the same warning as on other engines.

Complex numbers. Both engines push tangents forward the same way (the
R-linear derivative: ``f_z t + f_zbar conj(t)``), so jvps are compared as
they are. The pullbacks differ. adcheck (PyTorch's convention) returns, for
a grad_output ``v``, the ``g`` with ``Re(conj(g) t) = Re(conj(v) J t)`` for
every ``t``: ``g = v conj(f_z) + conj(v) f_zbar``, which is ``2 dL/dzbar`` for
``L = Re(conj(v) f)``. JAX's ``vjp`` transposes under ``Re(a b)`` instead:
``vjp(c) = c f_z + conj(c) conj(f_zbar)``, which is ``2 dL/dz`` for
``L = Re(c f)``. Hence ``g(v) = conj(vjp(conj(v)))``, which ``grad`` applies;
for real arrays both conjugations do nothing. A ``jax.custom_vjp`` rule is
therefore written in JAX's convention (``ct * cos(x)`` for ``sin``, no
``conj``), and adcheck judges it after this conversion.

Second order (``gradgradcheck``, ``order=2``): the first derivative calls
``grad(..., create_graph=True)`` on outputs it computed itself; the adapter
then takes a fresh ``jax.vjp`` of the wrapped function at the inputs given,
which JAX can differentiate again.
"""
from __future__ import annotations

import weakref
from contextlib import contextmanager

import jax
import jax.numpy as jnp
import numpy as np

from adcheck.gradcheck.engines.base import Engine
from adcheck.gradcheck.engines.jaxcompiled import Compiled, compiled, inexact, mapped, partial_of
from adcheck.gradcheck.errors import UncheckableError

#: float inputs held fixed (``nograd``), by id, alive only while the array is
_HELD = weakref.WeakValueDictionary()

X64_HINT = ("enable JAX's 64-bit mode at startup, before creating arrays: "
            "jax.config.update('jax_enable_x64', True) (or set JAX_ENABLE_X64=1), then "
            "make the inputs float64 or complex128")


def nograd(array):
    """Mark a floating point JAX array as an input gradcheck must not differentiate.

    JAX arrays have no ``requires_grad``: every float input is checked unless
    marked here (the counterpart of ``requires_grad=False``). Returns
    ``array`` itself.
    """
    _HELD[id(array)] = array
    return array


def _zero_cotangent(output):
    """The cotangent that selects nothing from ``output``."""
    if isinstance(output, jax.Array) and inexact(output):
        return jnp.zeros_like(output)
    return np.zeros(np.shape(output), dtype=jax.dtypes.float0)


class _Dual:
    """An input with a tangent (what ``make_dual`` returns); only the wrapped
    function sees it, and unpacks it into ``jax.jvp``."""

    __slots__ = ("primal", "tangent")

    def __init__(self, primal, tangent):
        self.primal, self.tangent = primal, tangent


def _adjoint(outputs, pullback, where: tuple, grad_outputs) -> tuple:
    """adcheck's vjp from JAX's ``pullback`` of ``outputs`` (see the module
    docstring): ``grad_outputs`` given for the outputs at ``where``, none for
    the others, gradients of every differentiated argument."""
    cotangents = [_zero_cotangent(o) for o in outputs]
    for k, go in zip(where, grad_outputs):
        cotangents[k] = jnp.conj(go)
    return tuple(jnp.conj(g) for g in pullback(tuple(cotangents)))


class _Pullback:
    """One recorded call: the function, its arguments, the positions
    differentiated, its outputs, and ``jax.vjp``'s pullback."""

    def __init__(self, func, args: list, positions: list, outputs: tuple, pullback):
        self.func, self.args, self.positions = func, args, positions
        self.inputs = [args[i] for i in positions]
        self.outputs, self.pullback = outputs, pullback

    def owns(self, outputs) -> bool:
        return all(any(o is mine for mine in self.outputs) for o in outputs)

    def pull(self, where: tuple, grad_outputs) -> tuple:
        """``_adjoint`` of this call: compiled where the function is."""
        found = None
        if isinstance(self.func, Compiled):
            found = self.func.vjp(self.args, self.positions, _adjoint, where, grad_outputs)
        return _adjoint(self.outputs, self.pullback, where, grad_outputs) if found is None \
            else found


class _Wrapped:
    """The user's function as the checks call it (see the module docstring)."""

    def __init__(self, engine: JaxEngine, func, differentiates_inside: bool):
        # (a first derivative calls an engine from inside: a trace of it would keep
        # tracers in that engine)
        self.engine = engine
        self.func = func if differentiates_inside else compiled(func)

    def __call__(self, *args):
        if any(isinstance(a, _Dual) for a in args):
            return self._jvp(args)
        if self.engine.grad_enabled:
            return self._vjp(args)
        return self.func(*args)

    def _vjp(self, args):
        positions = [i for i, a in enumerate(args)
                     if self.engine.is_tensor(a) and self.engine.requires_grad(a)]
        if not positions:
            return self.func(*args)
        record = self.engine.record(self.func, list(args), positions)
        return record.outputs

    def _jvp(self, args):
        positions = [i for i, a in enumerate(args) if isinstance(a, _Dual)]
        primals = [a.primal if isinstance(a, _Dual) else a for a in args]
        outputs, tangents = jax.jvp(partial_of(self.func, primals, positions),
                                    tuple(args[i].primal for i in positions),
                                    tuple(args[i].tangent for i in positions))
        self.engine.tangents.extend(zip(outputs, tangents))
        return outputs


class JaxEngine(Engine):
    """Adapter for JAX arrays (``jax.Array``), on whatever device JAX uses."""

    name = "jax"
    module = jax
    supports_batched_grad = True
    supports_batched_forward_grad = True
    #: a call under ``enable_grad()`` records its pullback, which vmap cannot map: a
    #: first derivative is mapped through its functional twin (``functional_vjp``)
    vmap_differentiates = False
    #: a custom_vjp's bwd computes every cotangent: it is told nothing to gate on
    has_needs_input_grad = False
    convert_hint = "jnp.asarray(x)"
    requires_grad_hint = ("every float or complex JAX array input is differentiated unless "
                          "marked with gradcheck.engines.jax.nograd(x); pass at least one "
                          "float64 or complex128 array that is not marked")

    def __init__(self):
        self.grad_enabled = False
        self.wrapped: _Wrapped | None = None
        #: the calls recorded under enable_grad(), and the tangents of the current dual level
        self.pullbacks: list[_Pullback] = []
        self.tangents: list = []

    def wrap_function(self, func, differentiates_inside: bool = False):
        self.wrapped = _Wrapped(self, func, differentiates_inside)
        return self.wrapped

    def record(self, func, args: list, positions: list) -> _Pullback:
        """Run ``func`` through ``jax.vjp`` in the arguments at ``positions``."""
        inputs = [args[i] for i in positions]
        outputs, pullback = jax.vjp(partial_of(func, args, positions), *inputs)
        record = _Pullback(func, args, positions, outputs, pullback)
        self.pullbacks.append(record)
        return record

    def is_tensor(self, value) -> bool:
        return isinstance(value, jax.Array)

    def to_numpy(self, tensor, copy: bool = True) -> np.ndarray:
        """A NumPy copy; bfloat16 as float32 (NumPy's own functions do not know
        ml_dtypes' bfloat16), which holds every value exactly."""
        if tensor.dtype == jnp.bfloat16:
            tensor = tensor.astype(jnp.float32)
        return np.array(tensor, copy=True)   # (a jax array is immutable: always a copy)

    def from_numpy(self, array: np.ndarray, requires_grad: bool = False, dtype=None,
                   copy: bool = True):
        copy = np.array(array, copy=True)
        # (jnp.asarray without a dtype compiles a copy for each new shape; device_put
        # moves the array as it is)
        return jax.device_put(copy) if dtype is None else jnp.asarray(copy, dtype=dtype)

    def epsilon(self, tensor) -> float:
        return float(jnp.finfo(tensor.dtype).eps)

    def dtype_name(self, tensor) -> str:
        return str(tensor.dtype)

    def requires_grad(self, tensor) -> bool:
        if not inexact(tensor) or _HELD.get(id(tensor)) is tensor:
            return False
        if not jax.config.jax_enable_x64:
            raise UncheckableError(
                f"gradcheck needs double precision, but JAX runs in 32-bit mode "
                f"(jax_enable_x64 is off), so this {tensor.dtype} input cannot be checked "
                f"reliably; {X64_HINT}")
        return True

    def is_differentiable_dtype(self, tensor) -> bool:
        return bool(inexact(tensor))

    def no_grad(self):
        return self._grad_mode(False)

    def enable_grad(self):
        return self._grad_mode(True)

    @contextmanager
    def _grad_mode(self, enabled: bool):
        previous, self.grad_enabled = self.grad_enabled, enabled
        try:
            yield
        finally:
            self.grad_enabled = previous

    def detach(self, tensor):
        return tensor    # (a value: there is no graph to cut it from)

    def handed(self, grad_output):
        """JAX's arrays are values: no leaf to refuse a change in place."""
        return grad_output

    def grad(self, outputs, inputs, grad_outputs, create_graph: bool = False) -> tuple:
        """adcheck's vjp (see the module docstring) from the recorded pullback."""
        if create_graph:
            return self._differentiable_grad(outputs, inputs, grad_outputs)
        record = self._pullback_of(outputs)
        return self._pull(record, outputs, grad_outputs, inputs)

    def _differentiable_grad(self, outputs, inputs, grad_outputs) -> tuple:
        """``grad`` inside a first derivative: ``outputs`` are the float outputs of
        the wrapped function at ``inputs`` (its differentiated arguments, the
        others as in the first recorded call); a new ``jax.vjp`` there is
        traceable, so JAX can differentiate the result again."""
        first = self.pullbacks[0]
        args = list(first.args)
        for position, value in zip(first.positions, inputs):
            args[position] = value
        func = self.wrapped.func
        record = _Pullback(func, args, first.positions, *jax.vjp(
            partial_of(func, args, first.positions), *inputs))
        floats = [o for o in record.outputs if isinstance(o, jax.Array) and inexact(o)]
        if len(floats) != len(outputs):
            raise RuntimeError(f"expected the {len(floats)} float outputs of the function, "
                               f"got {len(outputs)}")
        return self._pull(record, floats, grad_outputs, record.inputs)

    def batched_grad(self, outputs, inputs, grad_outputs) -> tuple:
        """``grad`` for a leading batch dimension of ``grad_outputs`` (``jax.vmap``)."""
        record = self._pullback_of(outputs)
        pull = mapped(lambda *gos: self._pull(record, outputs, gos, inputs),
                       (0,) * len(grad_outputs))
        return pull(*grad_outputs)

    def _pullback_of(self, outputs) -> _Pullback:
        for record in reversed(self.pullbacks):
            if record.owns(outputs):
                return record
        raise RuntimeError("these outputs were not computed by a recorded call of the "
                           "function under check (JAX differentiates functions, not outputs)")

    @staticmethod
    def _pull(record: _Pullback, outputs, grad_outputs, inputs) -> tuple:
        where = tuple(next(k for k, mine in enumerate(record.outputs) if mine is output)
                      for output in outputs)
        pulled = record.pull(where, tuple(grad_outputs))
        grads = []
        for x in inputs:
            k = next((k for k, mine in enumerate(record.inputs) if mine is x), None)
            grads.append(None if k is None else pulled[k])
        return tuple(grads)

    @contextmanager
    def dual_level(self):
        self.tangents = []
        try:
            yield
        finally:
            self.tangents = []

    def make_dual(self, tensor, tangent):
        return _Dual(tensor, tangent)

    def tangent(self, tensor):
        for output, tangent in self.tangents:
            if output is tensor:
                return None if tangent.dtype == jax.dtypes.float0 else tangent
        return None

    def vmap(self, func, in_dims):
        # a call that records its pullback cannot run under vmap; a functional
        # first derivative records nothing
        if self.grad_enabled and not getattr(func, "records_nothing", False):
            return None
        return mapped(func, in_dims)

    def functional_vjp(self, func, diff_in, out_idx, grad_idx):
        """The first derivative as one function of ``(*inputs, *grad_outputs)``:
        ``jax.vjp`` of the user's function itself (not of a recorded call), in
        adcheck's convention (see the module docstring), which ``jax.vmap`` maps."""
        func = func.func if isinstance(func, _Wrapped) else func
        diff_in, out_idx, grad_idx = tuple(diff_in), tuple(out_idx), tuple(grad_idx)

        def make():
            def first(*args):
                ins, grad_outputs = list(args[:-len(out_idx)]), args[-len(out_idx):]
                outputs, pullback = jax.vjp(partial_of(func, ins, diff_in),
                                            *(ins[i] for i in diff_in))
                grads = _adjoint(outputs, pullback, out_idx, grad_outputs)
                return tuple(grads[k] for k in grad_idx)
            return first
        twin = compiled(func, "first derivative", diff_in, out_idx, grad_idx, make=make)
        twin.records_nothing = True
        return twin

    def batched_jvp(self, func, primals, in_idx, tangents) -> tuple:
        func = func.func if isinstance(func, _Wrapped) else func
        call = partial_of(func, list(primals), [in_idx])
        return mapped(lambda t: jax.jvp(call, (primals[in_idx],), (t,))[1], (0,))(tangents)
