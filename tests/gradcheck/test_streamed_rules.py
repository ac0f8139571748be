"""A chunked check judges by the dense check's rules (issue 29, item 2).

Each test runs one function twice with the same seed, whole and forced into
the chunked plan (blocks declared beyond the budget, two columns a chunk,
eight vjps a batch), and asks for the same finding from both: reentrancy on
every row, not only the first batch of them, and the same diagnosis of an
output detached from its inputs.
"""
from __future__ import annotations

import gradcheck_zoo as zoo
import numpy as np
import pytest

import adcheck.refengine as E
from adcheck.gradcheck import check
from adcheck.gradcheck.core import budget
from adcheck.gradcheck.large import streamed

N = 40
LATE = 30   # the first row whose vjp is nondeterministic
NOISE = np.random.default_rng(7)


def _chunked(monkeypatch, held: bool, run):
    with monkeypatch.context() as m:
        m.setattr(budget, "fits", lambda *a, **k: False)
        m.setattr(budget, "batch_size", lambda *a, **k: 8)
        m.setattr(streamed, "_width", lambda ev, in_idx: 2)
        m.setattr(streamed, "_held_width", lambda ev, in_idx: 2 if held else None)
        return run()


def _late_noise():
    """sin, whose vjp of rows ``LATE`` and after is multiplied by fresh noise
    at each call (1 + 1e-3 z): those rows differ between two runs."""
    late = np.arange(N) >= LATE

    def backward(E, x, g):
        noise = E.from_numpy(1 + 1e-3 * NOISE.standard_normal(N) * late)
        return g * E.cos(x) * noise
    return zoo.function(E, "late_noise", lambda E, x: E.sin(x), backward).apply


@pytest.mark.parametrize("held", [True, False], ids=["rows held", "rows per chunk"])
def test_reentrancy_is_checked_on_every_row(monkeypatch, held):
    x = E.tensor(np.linspace(-1.0, 1.0, N), dtype=E.float64, requires_grad=True)
    f = _late_noise()

    def run():
        return check(f, (x,), jacobian="dense", seed=0)
    dense = run()
    chunks = _chunked(monkeypatch, held, run)
    assert chunks.plan == "chunked"
    for report in (dense, chunks):
        repeats = [r for r in report.results if r.check == "reentrant"]
        assert len(repeats) == 1 and not repeats[0].passed
        assert repeats[0].where[0] >= LATE
        assert repeats[0].diagnosis.startswith("nondeterministic")


def test_a_detached_output_is_diagnosed_alike(monkeypatch):
    x = E.tensor(np.linspace(-1.0, 1.0, 6), dtype=E.float64, requires_grad=True)

    def f(t):
        return E.sin(t), E.tensor(np.cos(t.detach().numpy()))

    def run():
        return check(f, (x,), jacobian="dense", seed=0)
    dense = run()
    chunks = _chunked(monkeypatch, True, run)
    assert chunks.plan == "chunked"
    found = [[(r.out_idx, r.in_idx, r.passed, r.diagnosis) for r in report.results
              if r.check == "detached"] for report in (dense, chunks)]
    assert found[0] == found[1] and found[0][0][:3] == (1, 0, False)
    assert "check_detached=False" in found[0][0][3]


X0 = 0.25


def _pole_after(t):
    """``2 t``, but ``inf`` for the first entry as soon as it moves above ``X0``
    (where it is): finite at the given inputs, not within a step of them."""
    inf = E.tensor(np.inf, dtype=E.float64)
    return 2 * t + E.where(t > X0, inf, E.tensor(0.0, dtype=E.float64))


def _nan_backward():
    """``sin``, whose vjp is NaN in its first entry."""
    first = np.zeros(6)
    first[0] = np.nan

    def backward(E, x, g):
        return g * E.cos(x) + E.from_numpy(first)
    return zoo.function(E, "nan_backward", lambda E, x: E.sin(x), backward).apply


@pytest.mark.parametrize("precise", [True, False], ids=["precise", "atol-rtol"])
@pytest.mark.parametrize("which", ["numerical", "reverse"])
def test_nan_or_inf_in_a_block_fails_alike(monkeypatch, precise, which):
    # a chunk's NaN (extrapolated over a pole) or inf (a central difference over
    # it) used to pass a chunked check: a NaN tolerance compared as no failure,
    # an infinite scale made every tolerance infinite, and no chunk counted them
    x = E.tensor(np.array([X0, -0.1, -0.2, -0.3, -0.4, -0.5]), dtype=E.float64,
                 requires_grad=True)
    f = _pole_after if which == "numerical" else _nan_backward()

    def run():
        return check(f, (x,), jacobian="dense", seed=0, precise=precise)
    with np.errstate(invalid="ignore"):
        dense = run()
        chunks = _chunked(monkeypatch, True, run)
    assert chunks.plan == "chunked"
    found = [sorted((r.check, r.mode, r.passed, r.diagnosis) for r in report.results
                    if not r.passed) for report in (dense, chunks)]
    assert found[0] == found[1]
    assert ("nonfinite", which, False) in [f[:3] for f in found[0]]
    assert "first at [0, 0]" in dict((f[:2], f[3]) for f in found[0])["nonfinite", which]
    assert dense.magnitudes == pytest.approx(chunks.magnitudes)
    assert np.isfinite(list(chunks.magnitudes.values())).all()
