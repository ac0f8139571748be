"""A conformance case: one documented behaviour, checked on an engine module.

Each case is a function of the engine module (``refengine`` or ``torch``)
that asserts what the seed document says is observable. The ``@case``
decorator records which sentence it encodes and which engines can run it.

Example::

    @case("detach() returns a new Tensor ... that shares the same Storage",
          source=MECHANICS)
    def detach_shares_storage(E):
        x = E.ones(3, requires_grad=True)
        y = x.detach()
        y.add_(1)
        assert x.tolist() == [2.0, 2.0, 2.0]
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

# The three seed documents, named for citations.
MECHANICS = "000_6d5c5040595094ed.txt"      # "Autograd mechanics" (user notes)
AUTOGRAD_NOTE = "001_1404bd1b2d609d2f.txt"  # "Autograd mechanics" (dev notes)
FORWARD_AD = "002_a10a9bbbb7d038cf.txt"     # "Forward AD in PyTorch" RFC
# Behaviour the seeds do not state but torch pins down: the cite describes
# what torch 2.13 was observed to do (it is checked by running on torch).
TORCH_BEHAVIOUR = "torch 2.13"
SEEDS = (MECHANICS, AUTOGRAD_NOTE, FORWARD_AD)

ENGINES = ("refengine", "torch")


@dataclass(frozen=True)
class Case:
    """One documented behaviour as an executable check."""

    area: str
    name: str
    cite: str
    source: str
    func: Callable = field(repr=False, compare=False)
    # engine name -> reason it cannot run there (absent: it runs there)
    not_on: tuple = ()

    def runs_on(self, engine_name: str) -> bool:
        return engine_name not in dict(self.not_on)

    def reason_not_on(self, engine_name: str) -> str | None:
        return dict(self.not_on).get(engine_name)

    @property
    def id(self) -> str:
        return f"{self.area}::{self.name}"


CASES: list[Case] = []


def case(cite: str, *, source: str, not_on: dict[str, str] | None = None):
    """Register the decorated ``func(E)`` as a case citing ``cite``.

    ``not_on`` maps an engine name to the reason the case cannot run on it
    (for example nested dual levels, which torch refuses).
    """
    def register(func: Callable) -> Callable:
        area = func.__module__.rsplit(".", 1)[-1]
        entry = Case(area=area, name=func.__name__, cite=" ".join(cite.split()),
                     source=source, func=func,
                     not_on=tuple(sorted((not_on or {}).items())))
        if any(c.id == entry.id for c in CASES):
            raise ValueError(f"conformance case {entry.id} is defined twice")
        CASES.append(entry)
        return func
    return register
