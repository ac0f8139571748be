"""The record of a run: how it was asked for, as its reports keep it (``RunRecord``).

One frozen object, made in one place (``RunRecord.of``: the run's
``Settings`` and what the command adds about itself), and read by every
report (the JSON's ``settings`` object, the HTML header, JUnit's properties)
and by ``runner.reproduction.reproducer``, which rebuilds each failed check
from it. Every option that changes how a check runs is a field, so the
rebuilt check is the one the run made. A record read back from a JSON report
(``from_dict``: ``adcheck merge``, a reproducer of a saved report) is the same
object.

It reads as the mapping it is written as (``record["engine"]``,
``record.get("kind")``), so that the formats treat a record and a report
loaded from JSON alike. It imports nothing heavy: the formats load it.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace

#: the timeout of a task when the command line gives none (``--timeout``), seconds
DEFAULT_TIMEOUT = 300.0


@dataclass(frozen=True)
class RunRecord(Mapping):
    """How one run of ``adcheck ops``, ``op``, ``check`` or a pytest marker was
    asked for (the JSON report's ``settings``; docs/options.md lists them)."""

    # -- how every check ran: what the reproducer rebuilds
    engine: str = "refengine"
    precise: bool = True
    seed: int = 0
    #: seconds a task may take (``None``: no limit); also the time ``jacobian="auto"`` plans for
    timeout: float | None = None
    jacobian: str = "auto"
    #: bytes each check may hold in arrays (``None``: gradcheck's default)
    memory_budget: int | None = None
    #: ``--explore``: its budget in seconds per check (0: the default), ``None``: off
    explore: float | None = None
    batching: bool = True
    # -- what was checked
    checks: tuple = ()
    dtypes: tuple | None = None
    patterns: tuple = ()
    family: tuple | None = None
    plugins: tuple = ()
    #: ``adcheck op NAME``: the op
    op: str | None = None
    #: ``adcheck check``: MODULE:OBJECT or the plugin file, and with ``--harvest``
    target: str | None = None
    harvest: bool = False
    #: ``adcheck check MODULE:OBJECT``: what the object is, its input sets and their layouts
    kind: str | None = None
    inputs: tuple | None = None
    layouts: tuple | None = None
    #: where the ops came from: "opinfo" (adcheck's own) or "torch" (PyTorch's op_db),
    #: and what the registry records about itself beyond its name (torch's version, ...)
    registry: str = "opinfo"
    registry_about: dict = field(default_factory=dict)
    # -- how the run went on and ended
    fail_fast: bool = False
    allow_empty: bool = False

    @classmethod
    def of(cls, settings, **about) -> RunRecord:
        """The record of a run made with ``settings`` (``runner.tasks.Settings``);
        ``about``: the fields the command knows (``dtypes``, ``target``, ...)."""
        policy = settings.policy
        own = dict(settings.registry.record())
        made = cls(engine=policy.engine, precise=policy.precise, seed=policy.seed,
                   timeout=settings.timeout, jacobian=policy.jacobian,
                   memory_budget=policy.options().memory_budget, explore=policy.explore,
                   batching=policy.batching, checks=tuple(settings.checks),
                   plugins=tuple(settings.plugins), registry=own.pop("registry"),
                   registry_about=own)
        return replace(made, **{k: _frozen(v) for k, v in about.items()})

    @classmethod
    def from_dict(cls, data: Mapping) -> RunRecord:
        """The record a report's ``settings`` object holds (what ``to_dict`` wrote,
        or an older report's subset of it); keys it does not know are the
        registry's own."""
        if isinstance(data, RunRecord):
            return data
        names = {f.name for f in fields(cls)} - {"registry_about"}
        known = {k: _frozen(v) for k, v in data.items() if k in names}
        return cls(**known, registry_about={k: v for k, v in data.items() if k not in names})

    def to_dict(self) -> dict:
        """The record as the JSON report's ``settings`` object."""
        data = {f.name: _plain(getattr(self, f.name)) for f in fields(self)
                if f.name != "registry_about"}
        return {**data, **self.registry_about}

    def __getitem__(self, key: str):
        return self.to_dict()[key]

    def __iter__(self):
        return iter(self.to_dict())

    def __len__(self) -> int:
        return len(self.to_dict())


def _frozen(value):
    """A list as a tuple, so that the record holds no list to change."""
    return tuple(value) if isinstance(value, list) else value


def _plain(value):
    """A tuple as a list, as JSON has it."""
    return list(value) if isinstance(value, tuple) else value
