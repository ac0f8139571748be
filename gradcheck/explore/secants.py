"""Whether a direction's quotients are derivatives where its step exceeds an
entry's own magnitude.

A direction's step is set by its largest entry (``beside.fd_step``). Beside
an entry of 1.1e11 the step of the direction moving every entry together is
0.03, which moves a divisor of 5.5e-9 across millions of fmod's jumps: the
quotients are then secants of the function far from the point, in that
entry's own scale, and say nothing of its derivative there (-trunc(x / y) =
-1.45e8, exact between the jumps). Such a secant is a derivative only where
the function is linear in that entry over the step. torch's ``prod`` at an
entry of 2.2e-308 is: the product is linear in each entry, and only the step
of the joint direction shows its error (the entry's own step, 2.2e-308,
underflows the product's change), so those directions are kept and their
secants tested instead (``linear_alone``).
"""
from __future__ import annotations

import numpy as np

from adcheck.gradcheck.core.coords import to_real

#: relative agreement asked of the two extrapolated secants (``linear_alone``)
LINEAR_RTOL = 1e-2


def overstepped(arrays: dict, direction: dict, h: float) -> list:
    """The entries ``(input, flat index)`` of ``direction`` that are nonzero and
    smaller in magnitude than the step ``h``: moved by more than themselves."""
    out = []
    for i, ks in direction.items():
        values = np.abs(arrays[i].reshape(-1)[ks])
        out += [(i, k) for k, v in zip(ks, values) if 0 < v < h]
    return out


def linear_alone(ev, arrays: dict, entry: tuple, h: float, o: int, row: int,
                 noise_of) -> bool:
    """Whether output ``o``'s real coordinate ``row`` is linear in ``entry``
    alone over the step ``h``, on both sides: its secants at ``h``, ``h / 2``
    and ``h / 4`` extrapolated in pairs (``2 q(h/2) - q(h)``, ``2 q(h/4) -
    q(h/2)``) agree within ``LINEAR_RTOL`` of the largest secant and their
    rounding (``noise_of(slope)``: the entry's rounding over a unit step). A
    smooth function's pairs differ by ``O(h^2)``, a sawtooth's by its whole
    range; a side outside the domain or not finite is not linear."""
    i, k = entry
    base = float(to_real(ev.problem.out_arrays[o])[row])
    for sign in (-1.0, 1.0):
        secants = []
        for step in (h, h / 2, h / 4):
            moved = arrays[i].copy()
            moved.reshape(-1)[k] += sign * step
            try:
                out = ev.evaluate({**arrays, i: moved}, "exploring a secant beside the point")
            except Exception:
                return False
            with np.errstate(all="ignore"):
                secants.append(sign * (float(to_real(out[o])[row]) - base) / step)
        if not np.all(np.isfinite(secants)):
            return False
        coarse, fine = 2 * secants[1] - secants[0], 2 * secants[2] - secants[1]
        scale = max(abs(s) for s in secants)
        if abs(coarse - fine) > LINEAR_RTOL * scale + 8 * noise_of(scale) / (h / 4):
            return False
    return True
