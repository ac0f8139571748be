"""The ``Sample`` of an application of a JAX ``custom_vjp`` or ``custom_jvp``.

JAX arrays are immutable, so the recorded arguments are the arrays the
model passed; every floating point array is differentiated (JAX has no
``requires_grad``). They are checked in float64, which needs JAX's 64-bit
mode (``jax_enable_x64``; without it the sample is not checked, and says
how to turn it on). An application met while JAX traces (under ``jit``,
``vmap`` or ``grad``) has tracers for inputs, not values: it is not checked,
and says to harvest the model without ``jit``.
"""
from __future__ import annotations

import sys

from adcheck.gradcheck.harvest.recording import Application, is_jax_array
from adcheck.gradcheck.harvest.calls import Sample, _argument_names, _function, _notes


def _inexact(a) -> bool:
    import jax.numpy as jnp
    return is_jax_array(a) and jnp.issubdtype(a.dtype, jnp.inexact)


def _wide(a, double: bool):
    import jax.numpy as jnp
    if not double or not _inexact(a):
        return a
    return a.astype(jnp.complex128 if jnp.issubdtype(a.dtype, jnp.complexfloating)
                    else jnp.float64)


def jax_sample(app: Application) -> Sample:
    """See the module docstring."""
    jax = sys.modules["jax"]
    positions = [i for i, a in enumerate(app.args) if _inexact(a)]
    # (every array is an input, an integer one not differentiated: "input k" is
    # the k-th array the function takes, as in a torch Function's samples)
    arrays = [i for i, a in enumerate(app.args) if is_jax_array(a)]
    arg_names = _argument_names(app.cls, len(app.args))
    names = tuple(arg_names[i] for i in arrays)
    shapes = ", ".join(str(tuple(app.args[i].shape)) for i in positions)
    notes = _notes(app)
    skip = None
    if not jax.config.jax_enable_x64:
        skip = ("JAX runs in 32-bit mode, so its inputs cannot be checked in double "
                "precision; call jax.config.update('jax_enable_x64', True) before harvesting")
    elif any(isinstance(a, jax.core.Tracer) for a in app.args):
        skip = ("applied while JAX traces the model (jit, vmap or grad): its inputs are not "
                "values; harvest the model without jax.jit")
    elif not positions:
        skip = "it takes no floating point array, so there is nothing to differentiate"
    elif len(app.extra_outputs) == app.outputs:
        skip = "it returns no array, so there is nothing to differentiate"
    if skip is not None:
        return Sample(None, (), names, shapes, "", notes, skip)
    template = [_wide(a, True) for a in app.args]
    inputs = tuple(template[i] for i in arrays)
    dtype = "+".join(dict.fromkeys(str(template[i].dtype) for i in positions))
    return Sample(_function(app, template, arrays, False), inputs, names, shapes, dtype, notes)
