"""``adcheck check`` of an object that looks up rows by indices (an
embedding's ``weight[idx]``), with no ``--inputs``: every usual default set
(all floating point) fails on the indexing, and the command exited 2. Each
argument is now tried as ``randint(10, 12) int64`` (12 indices below 10, so
some repeat) beside ``randn(10, 4)``: the lookup is checked, and a backward
that writes its gradient by index assignment, right only where the indices
are distinct, fails naming that cause."""
from __future__ import annotations

import pytest

LOOKUP = '''
import adcheck.refengine as E
from adcheck.refengine.autograd import Function


class Assigned(Function):
    @staticmethod
    def forward(ctx, weight, idx):
        ctx.save_for_backward(idx)
        ctx.rows = weight.shape[0]
        return weight[idx]

    @staticmethod
    def backward(ctx, g):
        (idx,) = ctx.saved_tensors
        gw = E.zeros((ctx.rows, g.shape[-1]), dtype=g.dtype)
        gw[idx] += g
        return gw, None


class Accumulated(Assigned):
    @staticmethod
    def backward(ctx, g):
        (idx,) = ctx.saved_tensors
        gw = E.zeros((ctx.rows, g.shape[-1]), dtype=g.dtype)
        return gw.index_add_(0, idx, g), None


def first_indices(idx, weight):
    return weight[idx] * 2.0


def nothing_runs(a, b):
    raise ValueError("no input set suits me")


def softmax_along(x, dim):
    return E.softmax(x, dim=int(dim))


def lp_normalize(x, p, eps):
    return x / (x.abs() ** p).sum(-1, keepdim=True) ** (1 / p) + eps
'''


@pytest.fixture
def lookup(tmp_path):
    path = tmp_path / "lookup.py"
    path.write_text(LOOKUP)
    return path


def test_a_gradient_written_by_assignment_fails_on_the_default_repeated_indices(run, lookup):
    result = run("check", f"{lookup}:Assigned", "--check", "reverse", "-q")
    assert result.exit_code == 1, result.output
    assert "index assignment" in result.stdout and "index_add_" in result.stdout
    assert "Assigned indexes with input 1" in result.stderr
    assert "randint(10, 12) int64" in result.stderr
    # the sets refused for their float indices warn of nothing left unshown
    assert "cannot show a row-wise bug" not in result.stderr


def test_an_accumulating_backward_passes_on_them(run_json, lookup):
    result, doc = run_json("check", f"{lookup}:Accumulated", "--check", "reverse")
    assert result.exit_code == 0, result.output
    statuses = {(r["dtype"], r["status"]) for r in doc["results"]}
    # the lookup's real set and its complex one (a complex weight, integer indices)
    assert statuses == {("float64+int64", "passed"), ("complex128+int64", "passed")}


def test_the_indices_may_come_first(run, lookup):
    result = run("check", f"{lookup}:first_indices", "--check", "reverse", "-q")
    assert result.exit_code == 0, result.output
    assert "first_indices indexes with input 0" in result.stderr


def test_an_object_refusing_every_set_for_another_reason_still_exits_2(run, lookup):
    result = run("check", f"{lookup}:nothing_runs", "-q")
    assert result.exit_code == 2
    assert "runs on none of the default inputs" in result.output
    assert "randint" not in result.output


def test_a_parameter_named_like_an_option_is_said_to_go_with_args(run, lookup):
    # (softmax_along takes dim as a tensor no default set makes a single integer of)
    result = run("check", f"{lookup}:softmax_along", "-q")
    assert result.exit_code == 2
    assert "softmax_along takes dim" in result.output
    assert "--args 'dim=-1'" in result.output
    assert "randint" not in result.output      # (no index error: no index sets tried)
    given = run("check", f"{lookup}:softmax_along", "--args", "dim=-1", "-q")
    assert given.exit_code == 0, given.output


def test_options_that_run_as_tensors_are_checked_so_and_said_to_be(run, lookup):
    # (p and eps as random tensors: a function of them the user did not mean)
    result = run("check", f"{lookup}:lp_normalize", "-q")
    assert result.exit_code == 0, result.output
    assert "lp_normalize takes p, eps, which the default sets give as tensors" in result.stderr
    assert "--args 'p=2, eps=1e-05'" in result.stderr
    # (first order: at an explored exact zero, AD's second derivative of |x| ** 2 is 0,
    # the true one 2, abs' subgradient 0 composed: a finding about the function, not the args)
    given = run("check", f"{lookup}:lp_normalize", "--args", "p=2, eps=1e-05", "-q",
                "--check", "reverse,forward")
    assert given.exit_code == 0 and "give as tensors" not in given.stderr
