"""The subject of a user's target: its object with inputs built from a spec.

``adcheck check MODULE:OBJECT`` checks one ``TargetSubject`` per input spec:
the object resolved (``runner.target``), its tensors drawn from the spec
(``runner.spec``) with seeds derived from the run's, the spec's keyword
arguments bound to it. The worker makes it for each task
(``runner.tasks``), the command line to probe an input set before the run,
and ``runner.rebuild_target`` to rebuild a reported check. Below
``runner.tasks`` and ``runner.reproduction``, which both use it.
"""
from __future__ import annotations

import functools

from adcheck.runner.errors import RunnerError


def target_subject(target: str, inputs: str, engine: str, seed: int, index: int):
    """The ``TargetSubject`` of input set ``index`` (spec ``inputs``) of ``target``,
    as ``adcheck check`` makes it: the module built, the inputs drawn from
    seeds derived from ``seed``, the spec's keyword arguments (``dim=1``)
    bound to the object."""
    from adcheck.runner.checks import derive_seed
    from adcheck.runner.target import resolve
    found = resolve(target, engine, derive_seed(seed, "module", target))
    return subject_of(found, inputs, seed, index)


def subject_of(found, inputs: str, seed: int, index: int):
    """``target_subject`` for a target already resolved (``runner.target.resolve``)."""
    import dataclasses

    import numpy as np

    from adcheck.runner.checks import derive_seed
    from adcheck.runner.spec import build, example_keywords, parse_call, parse_keywords
    example = example_keywords(inputs)
    if example is None:
        specs, keywords = parse_call(inputs)
    else:
        specs, keywords = [], parse_keywords(example)
    if keywords:
        if found.kind.endswith("Module"):
            raise RunnerError(f"{found.spec} is a module: keyword arguments "
                              f"({', '.join(keywords)}) apply to functions and Functions; "
                              "bind them in a factory (def make(): return MyLayer(dim=1))")
        found = dataclasses.replace(found, func=_bound(found.func, keywords))
    if example is not None:
        tensors = example_tensors(found)
        dtype = "+".join(dict.fromkeys(str(t.dtype).rpartition(".")[2] for t in tensors))
        return _subject_class()(found, tensors, inputs, index, dtype)
    rng = np.random.default_rng(derive_seed(seed, "inputs", index))
    dtype = "+".join(dict.fromkeys(s.dtype for s in specs))
    return _subject_class()(found, tuple(build(specs, found.engine, rng)), inputs, index, dtype)


def example_tensors(found) -> tuple:
    """What ``example_inputs()`` in ``found``'s file returns, as a tuple of the
    engine's tensors. Where none requires grad, each floating point one is
    differentiated (a copy that requires grad), as with ``--inputs``."""
    from adcheck.gradcheck.engines import engine_for
    from adcheck.runner.target import engines_used, source_module
    file = found.spec.split(":")[0]
    make = getattr(source_module(found.spec), "example_inputs", None)
    if getattr(found, "engine", None) == "jax" or "jax" in engines_used(make):
        import jax   # (checked in float64, as --inputs' arrays are: JAX's 64-bit mode)
        jax.config.update("jax_enable_x64", True)
    if not callable(make):
        raise RunnerError(f"{file} defines no example_inputs(): define it, returning the "
                          "inputs (a tensor or a tuple of tensors), or give --inputs")
    made = make()
    made = tuple(made) if isinstance(made, (tuple, list)) else (made,)
    kinds = [type(x).__name__ for x in made if not hasattr(x, "shape")]
    if not made or kinds:
        raise RunnerError(f"example_inputs() in {file} returned "
                          f"{', '.join(kinds) or 'nothing'}: return a tensor or a tuple of "
                          "tensors, the object's positional inputs")
    E = engine_for(made)
    if any(E.requires_grad(x) for x in made):
        return made
    return tuple(E.from_numpy_like(E.to_numpy(x), x, E.is_differentiable_dtype(x))
                 for x in made)


def _bound(func, keywords: dict):
    """``func`` with ``keywords`` given on every call (the tensors stay positional)."""
    def bound(*tensors):
        return func(*tensors, **keywords)
    bound.__name__ = getattr(func, "__name__", "function")
    return bound


@functools.cache
def _subject_class():
    # made on first use: runner.checks imports gradcheck, which importing this
    # module must not
    from adcheck.runner.checks import CHECKS, TargetSubject

    class UserSubject(TargetSubject):
        """A ``TargetSubject`` for which code without a forward-mode rule (a
        Function without jvp, a JAX custom_vjp) is a skip of the forward
        checks wherever it is met: named directly, or called by a plain
        function or a module."""

        def fault_skip(self, check: str, exc: BaseException) -> str | None:
            from adcheck.runner.target import NO_BUILT_IN_RULE, no_forward_rule
            own = super().fault_skip(check, exc)
            if own is not None or CHECKS[check].ad != "forward":
                return own
            words = no_forward_rule(exc)
            if words is None:
                return None
            hint = ("the engine has none for that operation" if NO_BUILT_IN_RULE in words
                    else "add a jvp to check it")
            return (f"forward mode does not run through {self.name}: code it calls has no "
                    f"forward-mode rule ({words}); {hint}")
    return UserSubject
