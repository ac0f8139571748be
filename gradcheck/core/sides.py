"""The two sides of automatic differentiation, described once.

Reverse mode pushes grad_outputs (vectors on an output) through vjps and
receives gradients on the inputs; forward mode pushes tangents (vectors on an
input) through jvps and receives tangents on the outputs. A ``Side`` says
which index carries the vectors, which receives the results, which product
computes them, and how the results sit in a Jacobian block (as its rows in
reverse mode, as its columns in forward mode). The reverse and forward
Jacobians, fast mode's projections and the checks that apply to both modes
(scaling, batched products) are each written once over a ``Side``.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from adcheck.gradcheck.core import coords
from adcheck.gradcheck.core.evaluation import Evaluator
from adcheck.gradcheck.core.jacobian import Layout
from adcheck.gradcheck.core.problem import Problem


@dataclass(frozen=True)
class Side:
    """One AD direction (see the module docstring)."""

    mode: str       # the Jacobian's label: "reverse" or "forward"
    product: str    # "vjp" or "jvp": the Evaluator's call and the kind counted
    carrier: str    # "output" or "input": what the vectors live on
    vector: str     # what a vector is called: "grad_output" or "tangent"
    part: str       # what one result is in a block: a "row" or a "column"

    @property
    def receiver(self) -> str:
        """What the results live on: the other of ``input`` and ``output``."""
        return "input" if self.carrier == "output" else "output"

    def carriers(self, problem: Problem) -> list:
        """The indices that carry vectors: outputs that require grad, or inputs."""
        return problem.diff_out if self.carrier == "output" else problem.diff_in

    def receivers(self, problem: Problem) -> list:
        """The indices that receive results (the other side of each pair)."""
        return problem.diff_in if self.carrier == "output" else problem.diff_out

    def base(self, problem: Problem, idx: int) -> np.ndarray:
        """The array a vector on ``idx`` has the shape and dtype of."""
        return problem.out_arrays[idx] if self.carrier == "output" else problem.arrays[idx]

    def carrier_size(self, layout: Layout, idx: int) -> int:
        return layout.out_size(idx) if self.carrier == "output" else layout.in_size(idx)

    def receiver_size(self, layout: Layout, idx: int) -> int:
        return layout.in_size(idx) if self.carrier == "output" else layout.out_size(idx)

    def receiver_complex(self, layout: Layout, idx: int) -> bool:
        return layout.in_complex[idx] if self.carrier == "output" else layout.out_complex[idx]

    def key(self, carrier_idx: int, receiver_idx: int) -> tuple:
        """The ``(out_idx, in_idx)`` pair of a carrier and a receiver."""
        if self.carrier == "output":
            return carrier_idx, receiver_idx
        return receiver_idx, carrier_idx

    def vectors(self, problem: Problem, idx: int, real_rows: np.ndarray) -> np.ndarray:
        """Vectors on ``idx`` from their real coordinates (one per row)."""
        base = self.base(problem, idx)
        return coords.from_real_rows(real_rows, base.shape, base.dtype)

    def products(self, ev: Evaluator, idx: int, vectors: np.ndarray, what: str,
                 each: str | None = None) -> dict:
        """The stacked products of ``vectors`` on ``idx``, by receiver."""
        return ev.products(self.product, idx, vectors, what, each)

    def single(self, ev: Evaluator, idx: int, vector: np.ndarray) -> dict:
        """The product of one vector, one plain call, by receiver."""
        if self.product == "vjp":
            return ev.vjp({idx: vector})
        return ev.jvp({idx: vector})

    def real_rows(self, problem: Problem, receiver: int, stacked, n: int) -> np.ndarray:
        """``(n, receiver real size)`` real coordinates of stacked results
        (zeros for ``None``: no gradient). A real receiver keeps the real part."""
        size = self.receiver_size(problem.layout, receiver)
        if stacked is None:
            return np.zeros((n, size))
        if self.receiver_complex(problem.layout, receiver):
            return coords.to_real_rows(stacked.astype(np.complex128))
        # (an array's own real part: np.real is a Python frame around it)
        return coords.to_real_rows(stacked.real if type(stacked) is np.ndarray
                                   else np.real(stacked))

    def block(self, real_rows: np.ndarray) -> np.ndarray:
        """The Jacobian block whose ``part``s are ``real_rows``."""
        return real_rows if self.part == "row" else real_rows.T


REVERSE = Side("reverse", "vjp", "output", "grad_output", "row")
FORWARD = Side("forward", "jvp", "input", "tangent", "column")
SIDES = {side.mode: side for side in (REVERSE, FORWARD)}
