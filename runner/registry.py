"""Registries: where the ops to check come from, behind one interface.

The runner reads a registry only through the methods of ``Registry``, and an
op only through its OpInfo-like attributes: ``name``, ``family``, ``dtypes``,
``torch_name``, ``mpmath_ref``, ``ref``, ``known_failures``,
``supports(capability, dtype)``, ``known_failure(name, dtype, sample)`` and
``tolerance(dtype)``. A registry also builds, for one sample, the call that
gradcheck checks (``call``: see ``runner.samplecall``). So a second source
plugs in by being passed where ``OPINFO`` is the default, without touching
selection, planning or the task loop: ``named("torch")`` is PyTorch's
``op_db`` (``runner.torchregistry``).

A registry derives from ``RegistryDefaults``, which declares every optional
hook of the protocol with its default (the engine it runs on, its dtypes,
default dtypes and checks, the keywords of a check, skips, what a missing
kernel or derivative means, a second opinion on a failure or an error, the
modules its workers preload, what a report records of it); it overrides the
ones it knows better. The runner calls the hooks directly, never by probing.

A registry object travels with every task to the worker processes, so it must
be picklable and cheap to copy: it holds no ops itself, only how to reach
them (``OpinfoRegistry`` reads the ``opinfo`` module of the process it is in).

Example::

    from adcheck.runner.registry import OPINFO
    info = OPINFO.get("sin")
    sample = next(iter(OPINFO.samples(info, OPINFO.dtype("float64"))))
    call = OPINFO.call(info, sample, "refengine")      # call.func(*call.inputs)
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

from adcheck.runner.errors import PluginError, RunnerError
from adcheck.runner.protocol import DTYPE_NAMES, Registry, RegistryDefaults  # noqa: F401 (re-exported)


#: dtypes refengine lacks, checked on torch only: each op's samples are made in the
#: refengine dtype named here and cast
TORCH_ONLY = {"bfloat16": "float32", "float16": "float32"}
#: the registries a run may name (``--registry``)
REGISTRY_NAMES = ("opinfo", "torch")


def dtype_name(dtype) -> str:
    """``"float64"`` for ``refengine.float64`` (or ``torch.float64``)."""
    return str(dtype).rsplit(".", 1)[-1]


@dataclass(frozen=True)
class CastDtype:
    """A dtype only torch has (``TORCH_ONLY``): samples are made in ``source``
    (a refengine dtype) and their floating point tensors cast to ``name`` for
    torch. The registry's questions about the op (supported modes, known
    failures, tolerances) are asked about ``source``."""

    name: str
    source: object

    def __str__(self) -> str:
        return f"torch.{self.name}"


def source_dtype(dtype):
    """The dtype an op's samples are made in for ``dtype`` (itself, or a
    ``CastDtype``'s source)."""
    return dtype.source if isinstance(dtype, CastDtype) else dtype


#: resolved plugin path -> names of the OpInfos it registered (a file loads once
#: per process)
_PLUGIN_OPS: dict = {}


class OpinfoRegistry(RegistryDefaults):
    """adcheck's own registry, the ``opinfo`` package (with its entry points and
    plugin files). Every process reads its own ``opinfo``; a registry shows the
    ops of the plugin files it loaded, not those another run in the same process
    loaded (``plugins``: the files it loaded, resolved)."""

    name = "opinfo"

    def __init__(self):
        self.plugins: tuple = ()

    @staticmethod
    def _module():
        from adcheck import opinfo
        return opinfo

    def load_plugins(self, paths: Iterable) -> list:
        added = []
        for path in paths:
            added += self.plugin_ops(path)
        return added

    def plugin_ops(self, path) -> list:
        """Load one plugin file (once per process); the names of its OpInfos."""
        opinfo = self._module()
        key = str(Path(path).resolve())
        if key not in _PLUGIN_OPS:
            try:
                _PLUGIN_OPS[key] = opinfo.load_plugin(path)
            except ValueError as exc:
                raise PluginError(str(exc)) from None
            except SystemExit as exc:   # sys.exit in a plugin must not end the run, nor pass
                raise PluginError(f"plugin {str(path)!r} called sys.exit({exc.code!r}) while "
                                  "loading; a plugin must only define or register OpInfos") \
                    from None
        if key not in self.plugins:
            self.plugins += (key,)
        return _PLUGIN_OPS[key]

    def _foreign(self) -> set:
        """The ops that plugin files this registry did not load registered in this
        process (another run's, or another registry's)."""
        return {name for key, names in _PLUGIN_OPS.items() if key not in self.plugins
                for name in names}

    def ops(self) -> list:
        foreign = self._foreign()
        return [info for info in self._module().op_db if info.name not in foreign]

    def get(self, name: str):
        if name in self._foreign():
            raise KeyError(f"no OpInfo named {name!r} (it comes from a plugin file this run "
                           "does not load)")
        return self._module().get(name)

    def families(self) -> list:
        return list(dict.fromkeys(info.family for info in self.ops()))

    def dtype(self, name: str):
        from adcheck import refengine
        if name in TORCH_ONLY:
            return CastDtype(name, getattr(refengine, TORCH_ONLY[name]))
        return getattr(refengine, name)

    def sample_names(self, info, dtype) -> list:
        return [spec.name for spec in info.sample_func(info, source_dtype(dtype))]

    def samples(self, info, dtype, index: int | None = None) -> Iterable:
        dtype = source_dtype(dtype)
        if index is None:
            return info.sample_inputs(dtype, requires_grad=True)
        return [info.sample(index, dtype, requires_grad=True)]

    def call(self, info, sample, engine: str, dtype=None):
        """``dtype``: a ``CastDtype`` to cast the sample's tensors to (torch only)."""
        from adcheck.runner.samplecall import SampleCall
        cast = dtype.name if isinstance(dtype, CastDtype) else None
        return SampleCall(info, sample, engine, cast)

    def __eq__(self, other) -> bool:
        # two runs with other plugin files see other ops: not the same registry
        return isinstance(other, OpinfoRegistry) and self.plugins == other.plugins

    def __hash__(self) -> int:
        return hash(self.name)   # (the plugins may still be loaded after hashing)

    def __repr__(self) -> str:
        return "OpinfoRegistry()"


#: the default registry
OPINFO = OpinfoRegistry()


def named(name: str, **options):
    """The registry called ``name`` (one of ``REGISTRY_NAMES``); ``options`` go to
    its constructor. ``RunnerError`` when it cannot be used here (PyTorch's op_db
    without torch or expecttest: the message names what to install)."""
    if name == "opinfo":
        return OpinfoRegistry()     # its own: plugin files another run loaded stay out
    if name == "torch":
        from adcheck.runner.torchregistry import TorchRegistry
        TorchRegistry.require()
        return TorchRegistry(**options)
    raise RunnerError(f"unknown registry {name!r}; choose from {', '.join(REGISTRY_NAMES)}")


def record(registry) -> dict:
    """What a report's settings record about ``registry`` (at least its name, under
    "registry"), so that baselines and merged reports never mix two registries."""
    return registry.record()


def describe(info) -> dict:
    """One op as data (the rows of ``adcheck list --format json``, the header of
    ``adcheck op``)."""
    from adcheck.gradcheck.core.modes import CAPABILITIES
    return {
        "name": info.name, "family": info.family, "torch_name": info.torch_name,
        "dtypes": [dtype_name(d) for d in info.dtypes],
        "modes": {mode: info.supports(mode) for mode in CAPABILITIES},
        "complex_autograd": bool(getattr(info, "supports_complex_autograd", False)),
        "numpy_ref": getattr(info, "ref", None) is not None,
        "mpmath_ref": info.mpmath_ref is not None,
        "known_failures": [{"check": kf.check, "reason": kf.reason,
                            "samples": None if kf.samples is None else list(kf.samples)}
                           for kf in getattr(info, "known_failures", ())],
    }
