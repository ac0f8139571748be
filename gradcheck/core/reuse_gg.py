"""A second-order check's expected Jacobian in the grad_outputs, from the reverse
check of the same sample (``reuse.expected_jacobian``, inside ``reuse.shared``).

gradgrad checks the first derivative ``g(x, v) = J(x)^T v`` (the backward's
vjp) as a function of the inputs ``x`` and the grad_outputs ``v``; its
expected Jacobian is Richardson's differences in both. A backward linear in
``v`` has ``J_b(x)^T`` for its block in ``v``, where ``J_b`` is the backward
formula's own Jacobian (not the true derivative): exactly what the sample's
reverse check built, a vjp per unit grad_output, at the same ``x``. Taken
from there, only the columns of ``x`` are differenced.

Sound only where the backward is linear in ``v``. A backward that is not
(a planted ``grad_output ** 2``, or worse one whose nonlinearity autograd is
told is linear, which only differences in ``v`` show: tests/gradcheck/
test_reuse_ad.py) agrees with ``J_b^T v`` at the unit vectors and not at the
check's own random ``v``. So the block is taken only when ``g(x, v)``, which
the check evaluated at its point, is ``J_b^T v`` to rounding; else every
column is differenced as before. Only float64 (a narrower formula is
differenced on its float64 run, whose backward is not the one the reverse
check built; complex vjps conjugate), dense plans, and the reverse check's
Jacobian built at the same inputs with the same memory budget.
"""
from __future__ import annotations

import numpy as np

#: units of rounding by which ``g(x, v)`` may differ from ``J_b^T v`` (the same
#: products summed in another order); a backward further off is differenced
LINEAR_ULPS = 64


def grad_output_blocks(ev, reverse) -> dict | None:
    """The blocks of ``ev``'s first derivative in its grad_outputs, from
    ``reverse`` (the first-order reverse Jacobian at the same ``x``), or
    ``None`` when they cannot stand for its differences."""
    p, first = ev.problem, ev.problem.func
    n, used, diff_in1, diff_out1 = (getattr(first, name, None) for name in
                                    ("primals", "used", "diff_in", "diff_out"))
    if n is None or not used or len(p.inputs) != n + len(diff_out1):
        return None
    arrays = [p.arrays.get(i) for i in range(len(p.inputs))]
    outs = [p.out_arrays.get(j) for j in range(len(used[0]))]
    if any(a is None or a.dtype != np.float64 for a in arrays[n:] + outs) or \
            sorted(p.float_out) != list(range(len(used[0]))) or \
            any(n + k not in p.diff_in for k in range(len(diff_out1))):
        return None
    blocks = {}
    for j, position in enumerate(used[0]):
        i = diff_in1[position]
        predicted = np.zeros(outs[j].size)
        bound = np.abs(outs[j]).ravel().astype(np.float64)
        for k, o in enumerate(diff_out1):
            block = reverse.blocks.get((o, i))
            if block is None or block.shape != (arrays[n + k].size, outs[j].size) \
                    or not np.all(np.isfinite(block)):
                return None
            v = arrays[n + k].ravel()
            predicted += block.T @ v
            bound += np.abs(block.T) @ np.abs(v)
            blocks[j, n + k] = block.T.copy()
        got = outs[j].ravel()
        if not np.all(np.isfinite(got)) or \
                np.any(np.abs(got - predicted) > LINEAR_ULPS * np.finfo(np.float64).eps * bound):
            return None     # not linear in v here: differenced as before
    return blocks
