"""A second registry, written against runner.registry's protocol only (the
required methods of ``Registry``; every optional hook keeps ``RegistryDefaults``'
default): two ops, one right and one wrong, with samples and calls of its own
(no opinfo)."""
from __future__ import annotations

from dataclasses import dataclass, field
from types import SimpleNamespace

import numpy as np

import adcheck.refengine as E
from adcheck.refengine.autograd import Function
from adcheck.runner.registry import RegistryDefaults


class TripledSquareGrad(Function):
    """x * x whose backward is 3 times too large."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return 3 * grad * 2 * x


@dataclass
class ToyOp:
    name: str
    func: object
    family: str = "toy"
    dtypes: tuple = (E.float64,)
    torch_name: str | None = None
    mpmath_ref: object = None
    known_failures: tuple = field(default_factory=tuple)

    def supports(self, capability: str, dtype=None) -> bool:
        return capability == "reverse" and (dtype is None or dtype in self.dtypes)

    def known_failure(self, name, dtype, sample=None):
        return None

    def tolerance(self, dtype):
        return SimpleNamespace(atol=1e-7, rtol=1e-5)


@dataclass
class ToySample:
    index: int
    name: str
    values: list


OPS = [ToyOp("toy_square", lambda x: x * x), ToyOp("toy_tripled", TripledSquareGrad.apply)]


class ToyRegistry(RegistryDefaults):
    """Ops from OPS; sample i is i + 2 values from a generator seeded with i."""

    name = "toy"

    def load_plugins(self, paths) -> list:
        return []

    def ops(self) -> list:
        return list(OPS)

    def get(self, name: str):
        for op in OPS:
            if op.name == name:
                return op
        raise KeyError(f"no toy op named {name!r}")

    def families(self) -> list:
        return ["toy"]

    def dtype(self, name: str):
        return getattr(E, name)

    def sample_names(self, info, dtype) -> list:
        return ["two values", "three values"]

    def samples(self, info, dtype, index=None):
        wanted = range(2) if index is None else [index]
        return [ToySample(i, self.sample_names(info, dtype)[i],
                          list(np.random.default_rng(i).normal(size=i + 2))) for i in wanted]

    def call(self, info, sample, engine: str):
        x = E.tensor(sample.values, dtype=E.float64, requires_grad=True)
        return SimpleNamespace(func=info.func, inputs=(x,), reference=None,
                               has_plain_output=lambda: True, nan_outputs=lambda: None)
