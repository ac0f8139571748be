"""opinfo: the operator registry (what to check about each op).

>>> from adcheck import opinfo
>>> info = opinfo.get("sin")
>>> sample = next(iter(info.sample_inputs(refengine.float64, requires_grad=True)))
>>> out = info.op(sample.input, *sample.args, **sample.kwargs)

Importing ``opinfo`` registers the built-in definitions (``opinfo.definitions``)
and the third-party ops of the ``adcheck.ops`` entry-point group.

Adding an op (in ``opinfo/definitions/<family>.py``, the family of its
refengine module)::

    from adcheck.opinfo import OpInfo, SampleInput, register
    from adcheck.opinfo.domains import POSITIVE
    from adcheck.opinfo.samples import make, spd, unary

    register(OpInfo("log", E.log, family="elementwise", torch_name="log", ref=np.log,
                    dtypes=FLOATING_AND_COMPLEX, sample_func=unary(POSITIVE)))

    def _cholesky_samples(opinfo, dtype):          # specs, made into tensors later
        yield SampleInput(spd(3), name="3x3")
        yield SampleInput(spd(2, batch=(2,)), name="batched")

A sample function yields ``SampleInput``s of ``TensorSpec``s (``make``,
``index``, ``mask``, ``matrix``, ``spd`` ...); each sample is drawn with its
own seed (``seed_for(name, index)``), so ``OpInfo.sample(i, dtype)`` rebuilds
sample ``i`` alone.
"""
if not __name__.startswith("adcheck."):     # the checkout's folder, imported by its short name
    raise ImportError(f"import adcheck.{__name__}, not {__name__}: adcheck's packages live "
                      "under the name 'adcheck' (see the README)")
from . import domains, samples
from .core import (CHECKS, DEFAULT_TOLERANCES, FLOATING, FLOATING_AND_COMPLEX, KnownFailure,
                   OpInfo, Tolerance, seed_for)
from .sample_input import SampleInput, identity, map_tensors
from .plugins import load_plugin
from .registry import (ENTRY_POINT_GROUP, PluginWarning, builtin_ops, families, get,
                       load_entry_points, names, op_db, register)
from .definitions import load_all as _load_definitions

_load_definitions()
load_entry_points()

__all__ = ["OpInfo", "SampleInput", "Tolerance", "KnownFailure", "CHECKS", "DEFAULT_TOLERANCES",
           "FLOATING", "FLOATING_AND_COMPLEX", "identity", "map_tensors", "seed_for", "op_db",
           "get", "register", "names", "families", "builtin_ops", "load_entry_points", "load_plugin",
           "ENTRY_POINT_GROUP", "PluginWarning", "domains", "samples"]
