"""Explore finds bugs that ordinary inputs hide, and shows the point.

Each bug is confirmed independently of adcheck at the point it reports:
finite differences written here, or mpmath.
"""
from __future__ import annotations

import json
import math

import mpmath
import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="PyTorch is not installed (pip install torch==2.13.0)")

from adcheck import refengine  # noqa: E402
from adcheck.gradcheck import check  # noqa: E402
from explore_zoo import ZOO  # noqa: E402

BY_NAME = {entry.name: entry for entry in ZOO}


def _explored(name, which="buggy", E=torch, budget=4.0, seed=0):
    # precise, as the command line: with torch's fixed tolerances an explored point
    # fails only outside them too (test_explore_defaults.py)
    entry = BY_NAME[name]
    func = entry.function(E, which)
    return check(func, entry.inputs(E, seed), seed=seed, precise=True, explore=True,
                 explore_budget=budget)


def _rebuilt(reproducer: str, E=torch) -> dict:
    scope = {"torch": torch, "adcheck": __import__("adcheck")}
    exec(reproducer, scope)
    return {int(k[5:]): v for k, v in scope.items() if k.startswith("input")}


def test_nan_at_an_exact_zero_is_found_where_the_plain_check_passes():
    entry = BY_NAME["sinc"]
    plain = check(entry.function(torch, "buggy"), entry.inputs(torch, 0), seed=0, explore=False)
    assert plain.passed     # randn never hands it the zero
    report = _explored("sinc")
    assert not report.passed
    found = report.counts["explore"]["findings"][0]
    assert "exact zero in input 0" in found["point"]
    x = _rebuilt(found["reproducer"])[0]
    k = int(np.flatnonzero(x.detach().numpy() == 0)[0])
    # the formula at the reported point: NaN; the function's own difference quotient: finite 0
    y = torch.sinc(x / math.pi)
    grad, = torch.autograd.grad(entry.function(torch, "buggy")(x).sum(), x)
    assert math.isnan(grad[k].item())
    h = 1e-6
    xs = x.detach().numpy().copy()
    fd = (np.sinc((xs[k] + h) / np.pi) - np.sinc((xs[k] - h) / np.pi)) / (2 * h)
    assert abs(fd) < 1e-6 and torch.isfinite(y).all()
    text = report.message()
    assert "at the explored point exact zero in input 0" in text and "reproduce with:" in text


def test_the_reproducer_rebuilds_the_point_exactly():
    report = _explored("gauss_tail")
    found = report.counts["explore"]["findings"][0]
    x = _rebuilt(found["reproducer"])[0]
    assert x.dtype == torch.float64 and x.requires_grad
    assert x.detach().numpy().tolist() == found["inputs"]["0"]


def test_a_tail_that_underflows_at_40_is_found_and_mpmath_confirms_it():
    report = _explored("gauss_tail")
    found = report.counts["explore"]["findings"][0]
    x = _rebuilt(found["reproducer"])[0]
    k = int(np.argmax(np.abs(x.detach().numpy())))
    assert abs(x[k].item()) >= 27     # where exp(-x^2) underflows
    grad, = torch.autograd.grad(BY_NAME["gauss_tail"].function(torch, "buggy")(x).sum(), x)
    with mpmath.workdps(60):
        t = mpmath.mpf(x[k].item())
        exact = mpmath.diff(lambda s: -s * s + mpmath.log1p(mpmath.exp(-s * s)), t)
    assert math.isfinite(float(exact)) and not math.isfinite(grad[k].item())


def test_a_cancellation_at_1e_8_invisible_to_atol_is_found():
    entry = BY_NAME["sinh_minus_x"]
    assert check(entry.function(torch, "buggy"), entry.inputs(torch, 0), seed=0,
                 explore=False).passed
    report = _explored("sinh_minus_x", budget=6.0)
    found = report.counts["explore"]["findings"][0]
    x = _rebuilt(found["reproducer"])[0]
    grad, = torch.autograd.grad(entry.function(torch, "buggy")(x).sum(), x)
    wrong = []
    for k, value in enumerate(x.detach().numpy()):
        with mpmath.workdps(60):   # the derivative of sinh(x) - x, without cancellation
            exact = float(mpmath.cosh(mpmath.mpf(float(value))) - 1)
        if abs(grad[k].item() - exact) > 0.1 * abs(exact):
            wrong.append(exact)
    # off by more than 10 % of itself, and too small for any absolute tolerance
    assert wrong and all(0 < abs(exact) < 1e-5 for exact in wrong)


def test_gradients_adding_up_to_two_at_a_tie_are_found():
    report = _explored("max")
    found = report.counts["explore"]["findings"][0]
    assert found["point"].startswith("tie")
    x = _rebuilt(found["reproducer"])[0]
    grad, = torch.autograd.grad(BY_NAME["max"].function(torch, "buggy")(x), x)
    # moving every entry by h moves the max by h: the gradient must add up to 1
    assert grad.sum().item() >= 2


def test_a_tie_across_inputs_is_named_as_such():
    report = _explored("maximum", budget=6.0)
    points = [f["point"] for f in report.counts["explore"]["findings"]]
    assert any("tie: input 1" in p and "== input 0" in p for p in points), points


def test_refengine_formulas_are_explored_too():
    report = _explored("prod", E=refengine)
    assert report.engine == "refengine" and not report.passed
    found = report.counts["explore"]["findings"][0]
    assert "exact zero" in found["point"] and "adcheck.refengine.tensor(" in found["reproducer"]


def test_the_json_report_records_what_was_tried():
    report = _explored("prod", budget=3.0)
    data = json.loads(json.dumps(report.to_dict()))
    tally = data["counts"]["explore"]
    assert tally["tried"] >= 1 and tally["findings"]
    assert {"outside_domain", "not_differentiable", "kinks", "timeouts"} <= set(tally)
    assert any(r["check"] == "explore" and "explored" in r["detail"] for r in data["results"])
