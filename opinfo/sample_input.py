"""``SampleInput``: one call of an op, as data.

Its own module so that the sample generators (``opinfo.samples``) and the
``OpInfo`` (``opinfo.core``) can both import it without importing each other.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from adcheck import refengine
from adcheck.refengine.pytree import tree_leaves, tree_map


def identity(x):
    """The default ``output_process_fn_grad``: the output unchanged."""
    return x


@dataclass
class SampleInput:
    """One call of an op: ``op(input, *args, **kwargs)``.

    ``input`` is a tensor or a list of tensors (``cat``, ``stack``).
    ``output_process_fn_grad`` maps the op's output to what is differentiated
    and compared (for example the values of ``max(x, dim)``); it is applied to
    torch outputs too, so it uses tensor methods and operators only. ``name`` describes the
    sample; ``rule`` is set when the sample sits on a point where the op is
    not differentiable and a documented rule fixes the gradient (such
    samples come from ``OpInfo.special_inputs``, never ``sample_inputs``).
    ``seed`` is the seed its tensors were drawn with, ``index`` its position.
    """

    input: object
    args: tuple = ()
    kwargs: dict = field(default_factory=dict)
    output_process_fn_grad: Callable = identity
    name: str = ""
    rule: str | None = None
    seed: int | None = None
    index: int | None = None

    def tensors(self) -> list:
        """Every refengine tensor of the sample (input, args, kwargs), in order."""
        return [leaf for leaf in tree_leaves((self.input, self.args, self.kwargs))
                if isinstance(leaf, refengine.Tensor)]

    def numpy(self):
        """``(input, args, kwargs)`` with every tensor replaced by a NumPy array copy."""
        return map_tensors((self.input, self.args, self.kwargs),
                           lambda t: t.detach().numpy().copy())

    def __repr__(self) -> str:
        label = f" {self.name!r}" if self.name else ""
        return f"SampleInput#{self.index}{label}(seed={self.seed})"


def map_tensors(value, fn):
    """``value`` (nested lists, tuples, dicts) with ``fn`` applied to each refengine tensor."""
    return tree_map(lambda leaf: fn(leaf) if isinstance(leaf, refengine.Tensor) else leaf, value)
