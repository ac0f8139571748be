"""Six findings of the explore pass on op_db (bench/opdb_sweep_alldtypes.md),
each confirmed here as an error of torch 2.13's formula, not of adcheck: at
the point, torch's gradient along a direction lies outside what the
function's own difference quotients give from both sides (written here, not
adcheck's), and adcheck's check at that point fails."""
from __future__ import annotations

import pytest

torch = pytest.importorskip("torch", reason="the findings are torch's formulas")

from adcheck.gradcheck import check  # noqa: E402

H = 1e-6


def _sided(f, args, direction):
    """The function's difference quotients along ``direction`` from each side."""
    at = f(*args).item()
    ahead = f(*[a + H * d for a, d in zip(args, direction)]).item()
    behind = f(*[a - H * d for a, d in zip(args, direction)]).item()
    return (ahead - at) / H, (at - behind) / H


def _torch_directional(f, args, direction):
    leaves = [a.clone().requires_grad_(True) for a in args]
    grads = torch.autograd.grad(f(*leaves), leaves, allow_unused=True)
    return sum(float((g * d).sum()) for g, d in zip(grads, direction) if g is not None)


def _f64(*values):
    return torch.tensor(values, dtype=torch.float64)


def _scatter_amax(self, src):
    # include_self=False: self[0] is not part of the reduction, yet tied with it
    return torch.scatter_reduce(self, 0, torch.tensor([0, 0]), src, "amax",
                                include_self=False)[0]


def _clamp(x, low, high):
    return torch.clamp(x, low, high).sum()


def _softshrink(x):
    return torch.nn.functional.softshrink(x, 0.0).sum()


def _polar_real(magnitude, angle):
    return torch.polar(magnitude, angle).real


def _nextafter(x, toward):
    return torch.nextafter(x, toward)


def _poisson_full(target):
    # full=True adds Stirling's term only where target > 1
    return torch.nn.functional.poisson_nll_loss(_f64(0.5, 1.2), target, full=True)


CASES = {
    # the two tied sources move together; torch shares the gradient among three
    # (it counts self, which include_self=False leaves out): 2/3 in all
    "scatter_reduce amax, include_self=False": (
        _scatter_amax, (_f64(1.0, 1.0), _f64(1.0, 1.0)), (_f64(0.0, 0.0), _f64(1.0, 1.0)), 2 / 3),
    # x below bounds tied at 4: the output is the bounds; torch gives both 0
    "clamp with min == max above x": (
        _clamp, (_f64(3.0), _f64(4.0), _f64(4.0)), (_f64(0.0), _f64(1.0), _f64(1.0)), 0.0),
    # lambd = 0 makes softshrink the identity; torch's gradient at 0 is 0
    "softshrink with lambd=0 at 0": (_softshrink, (_f64(0.0),), (_f64(1.0),), 0.0),
    # real(polar(r, 0)) = r for every r; torch's gradient at r = 0 is 0
    "polar at magnitude 0": (_polar_real, (_f64(0.0), _f64(0.0)), (_f64(1.0), _f64(0.0)), 0.0),
    # nextafter(x, y) moves x by an ulp toward y: slope 1 in x on both sides of
    # the tie x == y (torch's 1 everywhere else); torch's at the tie is 0
    "nextafter at the tie x == y, along x": (
        _nextafter, (_f64(0.0), _f64(0.0)), (_f64(1.0), _f64(0.0)), 0.0),
    # the loss is smooth at target 0 (d/dtarget = -0.5 / 2); torch's is NaN there,
    # the masked term's 0 log 0 leaking through the mask
    "poisson_nll_loss, full=True, at target 0": (
        _poisson_full, (_f64(0.0, 0.3),), (_f64(1.0, 0.0),), float("nan"), -0.25),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_torchs_gradient_lies_outside_both_one_sided_derivatives(name):
    f, args, direction, torchs, *slope = CASES[name]
    slope = slope[0] if slope else 1.0
    ahead, behind = _sided(f, args, direction)
    assert ahead == pytest.approx(slope, abs=1e-8) and behind == pytest.approx(slope, abs=1e-8)
    assert _torch_directional(f, args, direction) == pytest.approx(torchs, abs=1e-12,
                                                                   nan_ok=True)


@pytest.mark.parametrize("name", sorted(CASES))
def test_adcheck_fails_torchs_formula_at_the_point(name):
    f, args = CASES[name][:2]
    report = check(f, tuple(a.clone().requires_grad_(True) for a in args), seed=0,
                   precise=True, explore=False)
    assert not report.passed, report.message()
