"""Selection and planning: which ops of a registry to check, as which tasks.

``select`` picks ops by name patterns (shell globs such as ``'log*'``),
families and engine; ``plan`` makes one ``OpTask`` per op and dtype (every
sample of it, or one chosen sample), in registry order. Both read the
registry only through ``runner.registry.Registry``; a bad pattern, family
or sample index raises ``RunnerError`` with a line that says what to do.

Example::

    from adcheck.runner.registry import OPINFO
    chosen = select(OPINFO, ("sin", "log*"), (), "refengine")
    tasks = plan(chosen.infos, None, Settings())
"""
from __future__ import annotations

import fnmatch
from dataclasses import dataclass, field, replace

from adcheck.runner.errors import RunnerError
from adcheck.runner.registry import OPINFO, TORCH_ONLY, dtype_name
from adcheck.runner.tasks import OpTask, Settings

#: the dtypes a plan takes when none are named
DEFAULT_DTYPES = ("float64", "complex128")
#: the dtypes ``--low-precision`` adds, by engine (bfloat16 and float16 exist on
#: torch only; their samples are the float32 ones, rounded)
LOW_PRECISION_DTYPES = {"refengine": ("float32", "complex64"),
                        "torch": ("float32", "complex64", "bfloat16", "float16")}


def planned_dtypes(names: list | None, low_precision: bool, engine: str) -> list | None:
    """The dtypes a sweep plans: ``names`` (``None``: the defaults), and with
    ``low_precision`` the engine's ``LOW_PRECISION_DTYPES`` too. A torch-only
    dtype on another engine is a ``RunnerError``."""
    if not low_precision and names is None:
        return None
    chosen = list(names or DEFAULT_DTYPES)
    if low_precision:
        chosen += [d for d in LOW_PRECISION_DTYPES.get(engine, ()) if d not in chosen]
    only = [d for d in chosen if d in TORCH_ONLY and engine != "torch"]
    if only:
        raise RunnerError(f"{', '.join(only)} exist on --engine torch only (refengine has "
                          "float32, float64, complex64 and complex128); add --engine torch")
    return chosen


@dataclass
class Selection:
    """The chosen ops, and those dropped because they name no torch op
    (``--engine torch`` cannot check them)."""

    infos: list = field(default_factory=list)
    without_torch: list = field(default_factory=list)


def select(registry=OPINFO, patterns: tuple = (), families: tuple = (),
           engine: str = "refengine") -> Selection:
    """The ops of ``registry`` matching every family filter and any pattern."""
    every = registry.ops()
    known_families = registry.families()
    for family in families:
        if family not in known_families:
            raise RunnerError(f"unknown family {family!r}; known families: "
                              f"{', '.join(known_families)}")
    infos = [i for i in every if i.family in families] if families else list(every)
    for pattern in patterns:
        if not any(fnmatch.fnmatchcase(i.name, pattern) for i in every):
            _unknown_op(registry, pattern)
    if patterns:
        infos = [i for i in infos if any(fnmatch.fnmatchcase(i.name, p) for p in patterns)]
    chosen = Selection(infos)
    if engine == "torch" and registry.engine != "torch":
        chosen.without_torch = [i.name for i in infos if i.torch_name is None]
        chosen.infos = [i for i in infos if i.torch_name is not None]
    return chosen


def _listing(registry) -> str:
    """The command that lists ``registry``."""
    name = registry.name
    return "adcheck list" if name == "opinfo" else f"adcheck list --registry {name}"


def get_op(registry, name: str):
    """The op called ``name``; ``RunnerError`` suggesting close names otherwise."""
    try:
        return registry.get(name)
    except KeyError as exc:
        raise RunnerError(f"{exc.args[0].rstrip('?')}; run '{_listing(registry)}' to see the "
                          "registry") from None


def _unknown_op(registry, pattern: str):
    try:
        registry.get(pattern)
    except KeyError as exc:
        hint = exc.args[0]
    else:  # pragma: no cover - get() found what fnmatch did not
        hint = f"no op matches {pattern!r}"
    raise RunnerError(f"{hint.rstrip('?')}; run '{_listing(registry)}' to see the registry")


def default_dtypes(registry, info) -> list:
    """The dtypes of ``info`` a run checks when it names none: the registry's
    choice, else the op's double-precision dtypes (float64, complex128)."""
    own = registry.default_dtypes(info)
    if own is not None:
        return list(own)
    return [dtype_name(d) for d in info.dtypes if dtype_name(d) in DEFAULT_DTYPES]


def _own_dtypes(settings: Settings, info) -> list:
    """The dtypes ``info`` has samples for: the registry's, and on torch the
    torch-only dtypes cast from refengine's (a registry of torch's own ops, which
    names its dtypes itself, gets none added)."""
    names = [dtype_name(d) for d in info.dtypes]
    if settings.policy.engine == "torch" and settings.registry.engine is None:
        names += [n for n, source in TORCH_ONLY.items() if source in names and n not in names]
    return names


def plan(infos: list, dtypes: list | None, settings: Settings,
         sample: int | None = None, together: bool = False) -> list:
    """One ``OpTask`` per op and dtype, in registry order. ``dtypes`` None: the
    registry's default dtypes of each op (``default_dtypes``). ``sample``: check
    only that sample of each (its index in the op's samples for the dtype). On
    torch, an opinfo op with float32 samples also has bfloat16 and float16 ones.
    ``together``: the tasks run as one sweep, every one of them (``adcheck ops``):
    they are ``settings.planned``, so that an in-place variant whose op is among
    them is compared with it instead of with differences."""
    if together and sample is None:
        # (only the ops a variant names: the settings travel with every task)
        bases = {getattr(info, "variant_of", None) for info in infos}
        pairs = plan([info for info in infos if info.name in bases], dtypes, settings)
        settings = replace(settings, planned=frozenset((t.op, t.dtype) for t in pairs))
    tasks = []
    for info in infos:
        names = _own_dtypes(settings, info)
        wanted = dtypes or default_dtypes(settings.registry, info)
        for name in (n for n in names if n in wanted):
            if sample is not None:
                _check_index(settings.registry, info, name, sample)
            tasks.append(OpTask(len(tasks), info.name, name, settings, sample))
    return tasks


def _check_index(registry, info, dtype: str, index: int) -> None:
    try:
        count = len(registry.sample_names(info, registry.dtype(dtype)))
    except Exception:  # noqa: BLE001 - a broken recipe is the task's error, reported there
        return
    if not 0 <= index < count:
        raise RunnerError(f"{info.name} has {count} samples for {dtype} (0 to {count - 1}); "
                          "pick --sample in that range")
