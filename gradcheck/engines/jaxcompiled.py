"""JAX code run compiled, so that checking it is not mostly dispatching and compiling.

Eager JAX dispatches each operation on its own and compiles it for each
shape it meets (about 60 ms each on a slow machine), and a check meets many
shapes and calls: a Richardson table, batches of every size, the first
derivative inside a second-order check (a ``jax.vjp`` of 17 ms per point
for a one-line ``custom_vjp``). Three things bring that down:

- ``Compiled``: the user's function under ``jax.jit``, compiled once per
  shape as a whole (its derivatives too: JAX differentiates and batches a
  jitted function as one), its non-array arguments static. It runs the
  function itself instead, for good, once tracing fails (Python control flow
  on values, a conversion to NumPy, a boolean mask) or finds outputs that
  are not arrays, and always for inputs narrower than double precision: XLA
  may keep a fused bfloat16 or float16 computation in float32, which is
  another function than the one run eagerly.
- ``mapped``: ``jax.vmap`` with the batch padded to a power of two, so that
  the batches' many sizes compile as a few.
- ``keep_compilations``: adcheck's own processes keep what they compiled on
  disk (JAX's persistent compilation cache), so that the next run of the same
  check compiles nothing (6.0 s -> 3.0 s for a ``custom_vjp`` of two sets).
"""
from __future__ import annotations

import os
from collections import OrderedDict
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

#: a batch padded to a power of two holds at most this many bytes (a larger one
#: runs as it comes: its compilation is small beside its work)
PAD_BYTES = 8 << 20

#: the dtypes whose computations XLA's fusion does not widen
_WIDE = frozenset({np.dtype(np.float64), np.dtype(np.complex128)})


def _is_array(value) -> bool:
    return isinstance(value, (jax.Array, np.ndarray))


def inexact(value) -> bool:
    """Whether ``value``'s dtype is floating point or complex."""
    return jnp.issubdtype(value.dtype, jnp.inexact)


def _wide(args) -> bool:
    """Whether every floating point array among ``args`` is of double precision."""
    return all(a.dtype in _WIDE for a in args if _is_array(a) and inexact(a))


def _hashable(values) -> bool:
    try:
        hash(tuple(values))
    except TypeError:
        return False
    return True


def _as_tuple(value) -> tuple:
    return tuple(value) if isinstance(value, (tuple, list)) else (value,)


def partial_of(func, args: list, positions: list):
    """``func`` as a function of the arguments at ``positions`` only (the others
    as in ``args``), returning a tuple."""
    def call(*values):
        full = list(args)
        for position, value in zip(positions, values):
            full[position] = value
        return _as_tuple(func(*full))
    return call


class Compiled:
    """``func`` run through ``jax.jit`` where it can be (see the module docstring).

    ``failed`` holds the exception that tracing raised, once it has (the
    function then always runs itself)."""

    def __init__(self, func):
        self.func = func
        self.failed: Exception | None = None
        #: (what, the static arguments' positions) -> its jax.jit
        self._jitted: dict = {}

    def __call__(self, *args):
        found = self._run("call", self._own, args)
        return self.func(*args) if found is _UNCOMPILED else found

    def _own(self):
        """The function as a new object: JAX keeps the traces of a jitted function
        by the function, and a trace of the user's own function would then not be
        made again where they jit it themselves (harvest records applications as
        a trace makes them)."""
        def call(*args):
            outputs = self.func(*args)
            if not all(isinstance(leaf, jax.Array) for leaf in jax.tree_util.tree_leaves(outputs)):
                raise _NotArrays   # (jit would make arrays of them: another function)
            return outputs
        call.__name__ = getattr(self.func, "__name__", "call")
        return call

    def vjp(self, args: list, positions: list, pull, where: tuple, grad_outputs: tuple):
        """``pull(outputs, pullback, where, grad_outputs)`` for ``jax.vjp`` of the
        function at ``args`` in the arguments at ``positions``, compiled as one
        (uncompiled, the pullback of a ``custom_vjp`` runs its rule eagerly);
        ``None`` where the function runs uncompiled."""
        positions, where = tuple(positions), tuple(where)

        def make():
            def pulled(grad_outputs, *args):
                outputs, pullback = jax.vjp(partial_of(self.func, list(args), positions),
                                            *(args[i] for i in positions))
                return pull(outputs, pullback, where, grad_outputs)
            return pulled
        found = self._run(("vjp", positions, pull, where), make, tuple(args),
                          (tuple(grad_outputs),))
        return None if found is _UNCOMPILED else found

    def _run(self, what, make, args: tuple, before: tuple = ()):
        """``make()`` of ``(*before, *args)`` under ``jax.jit``, the arguments
        that are not arrays static; ``_UNCOMPILED`` where it cannot be."""
        statics = tuple(i for i, a in enumerate(args) if not _is_array(a))
        if self.failed is not None or not _wide(args) or \
                not _hashable(args[i] for i in statics):
            return _UNCOMPILED
        jitted = self._jitted.get((what, statics))
        if jitted is None:
            jitted = self._jitted[what, statics] = jax.jit(
                make(), static_argnums=tuple(len(before) + i for i in statics))
        try:
            return jitted(*before, *args)
        except (jax.errors.JAXTypeError, jax.errors.JAXIndexError, _NotArrays) as exc:
            # (one that the function raises itself is raised again uncompiled)
            self.failed = exc
            return _UNCOMPILED


class _NotArrays(Exception):
    """Raised while tracing a function that returns more than arrays (a number,
    a NumPy array): it runs uncompiled, its outputs as it returns them."""


#: what ``Compiled._run`` returns where it ran nothing
_UNCOMPILED = object()

#: the ``Compiled`` made lately, by what they were made of: a check makes a new
#: problem at every point it explores, where the same function must not compile again
_MADE: OrderedDict = OrderedDict()
_KEPT = 32


def compiled(func, *key, make=None) -> Compiled:
    """The ``Compiled`` of ``make()`` (default ``func``), the same one for the
    same ``func`` and ``key`` while it is among the last few asked for."""
    whole = (id(func), *key)
    found = _MADE.get(whole)
    if found is None or found[0] is not func:
        found = _MADE[whole] = (func, Compiled(func if make is None else make()))
    _MADE.move_to_end(whole)
    while len(_MADE) > _KEPT:
        _MADE.popitem(last=False)
    return found[1]


def mapped(func, in_dims):
    """``jax.vmap(func, in_dims)``, its batch padded with copies of its last
    example to the next power of two and the outputs cut back. The extra
    examples are evaluated and dropped: a JAX function is pure, so a copy of
    an example gives that example's value again."""
    vmapped = jax.vmap(func, in_axes=in_dims)

    def call(*args):
        batched = [(a, d) for a, d in zip(args, in_dims) if d is not None]
        sizes = {a.shape[d] for a, d in batched}
        if len(sizes) != 1 or any(isinstance(a, jax.core.Tracer) for a, _ in batched):
            return vmapped(*args)      # (vmap itself says what is wrong with the sizes)
        n = sizes.pop()
        size = 1 << (n - 1).bit_length()
        if size == n or sum(a.nbytes for a, _ in batched) * size > n * PAD_BYTES:
            return vmapped(*args)
        take = np.minimum(np.arange(size), n - 1)
        padded = [a if d is None else jax.device_put(np.take(np.asarray(a), take, axis=d))
                  for a, d in zip(args, in_dims)]
        return jax.tree_util.tree_map(lambda o: jax.device_put(np.asarray(o)[:n]),
                                      vmapped(*padded))
    return call


def keep_compilations() -> None:
    """Keep JAX's compiled programs on disk between runs, in
    ``$XDG_CACHE_HOME/adcheck/jax`` (default ``~/.cache/adcheck/jax``), each
    however quickly it compiled (a check's are small, about 80 ms each on a
    slow machine, and many). Nothing where the user placed JAX's cache
    themselves (``JAX_COMPILATION_CACHE_DIR``) or turned it off
    (``JAX_ENABLE_COMPILATION_CACHE=false``), or where the folder cannot be
    made. It sets JAX's configuration: only adcheck's own processes (its
    workers, its command line) call it, never a program that calls gradcheck."""
    if jax.config.jax_compilation_cache_dir or not jax.config.jax_enable_compilation_cache:
        return
    home = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    folder = Path(home) / "adcheck" / "jax"
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError:
        return
    jax.config.update("jax_compilation_cache_dir", str(folder))
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0)
