"""The parts an ``Evaluator`` owns: the second-order twin, declared and owned
there, and nothing set on an Evaluator from outside (issue 29, item 5).

The twin's oracle is the first derivative written out in the test: for
f(x) = x sin x and grad_output g, the gradient is g (sin x + x cos x).
"""
from __future__ import annotations

import ast
from pathlib import Path

import numpy as np
import pytest

from adcheck.gradcheck.core.evaluation import Evaluator
from adcheck.gradcheck.core.problem import Problem
from adcheck.gradcheck.core.secondorder import first_derivative
from adcheck.gradcheck.core.twin import Twin

ROOT = Path(__file__).resolve().parents[2]
X = np.array([0.3, -1.1, 0.7])


def test_a_first_derivative_at_many_points_runs_through_its_twin_in_one_call():
    torch = pytest.importorskip("torch")
    x = torch.tensor(X, dtype=torch.float64, requires_grad=True)
    first, inputs = first_derivative(lambda t: t * torch.sin(t), (x,), None,
                                     np.random.default_rng(0))
    ev = Evaluator(Problem(first, inputs, order=2))
    g = ev.problem.arrays[1]
    points = X + np.linspace(0.0, 0.5, 4)[:, None]
    outs = ev.outputs_at(0, points, "points")
    np.testing.assert_allclose(outs[0], g * (np.sin(points) + points * np.cos(points)),
                               rtol=1e-12)
    # torch's vmap cannot differentiate inside: one batched call means the twin ran
    assert ev.twin.function() is not None
    assert ev.problem.batching["batched_calls"] == 1


@pytest.mark.parametrize("twin, used", [(lambda t: t + t, True), (lambda t: 3 * t, False)],
                         ids=["agrees", "disagrees"])
def test_a_twin_is_used_only_where_it_gives_the_functions_values(twin, used):
    torch = pytest.importorskip("torch")

    def double(t):
        return 2 * t
    double.functional = lambda: twin
    problem = Problem(double, (torch.tensor(X, requires_grad=True),))
    found = Twin(problem)
    assert (found.function() is twin) == used
    outs = found.outputs_at(0, np.stack([X, -X]))
    if used:
        np.testing.assert_allclose(outs[0], 2 * np.stack([X, -X]), rtol=1e-15)
    else:
        assert outs is None


#: names that hold an Evaluator in gradcheck's modules
_EVALUATOR = ("ev", "evaluator")


def _set_from_outside(source: str) -> list:
    """Lines where ``source`` sets an attribute of an Evaluator held in a name
    of ``_EVALUATOR`` (or ending ``_ev``), by assignment or ``setattr``."""
    def held(node) -> bool:
        return isinstance(node, ast.Name) and (node.id in _EVALUATOR or node.id.endswith("_ev"))
    found = []
    for node in ast.walk(ast.parse(source)):
        targets = (node.targets if isinstance(node, ast.Assign) else
                   [node.target] if isinstance(node, (ast.AugAssign, ast.AnnAssign)) else [])
        for target in targets:   # (a declared part's own contents may change: ev.memo[k])
            parts = target.elts if isinstance(target, ast.Tuple) else [target]
            found += [node.lineno for part in parts
                      if isinstance(part, ast.Attribute) and held(part.value)]
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                and node.func.id == "setattr" and node.args and held(node.args[0])):
            found.append(node.lineno)
    return found


def test_nothing_is_set_on_an_evaluator_from_outside():
    offenders = []
    for path in sorted((ROOT / "gradcheck").rglob("*.py")):
        if path.name == "evaluation.py":
            continue
        lines = _set_from_outside(path.read_text())
        offenders += [f"{path.relative_to(ROOT)}:{line}" for line in lines]
    assert offenders == []


@pytest.mark.parametrize("planted", [
    "def f(ev):\n    ev._twin = (None,)\n",
    "def f(wide_ev):\n    wide_ev.budget += 1\n",
    "def f(ev):\n    a, ev.origin = 1, 2\n",
    "def f(ev):\n    setattr(ev, 'origin', None)\n",
])
def test_the_scan_finds_an_attribute_set_from_outside(planted):
    assert _set_from_outside(planted) == [2]
