"""A torch autograd.Function's own vmap staticmethod, checked against one call per example.

torch.func.vmap runs such a Function through its rule, not its forward: a rule
that sums over the batch, ignores in_dims, breaks on an argument that is not
batched or returns the wrong out_dims gave wrong values under vmap while every
check passed (torch's gradcheck too: its batched checks map the backward). The
rules below are wrong or right by construction; each verdict is confirmed
against torch itself (torch.func.vmap against a loop of calls) in the test."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

from adcheck.gradcheck import check, gradcheck
from adcheck.gradcheck.errors import GradcheckError

torch = pytest.importorskip("torch", reason="torch autograd.Functions (pip install torch)")


def _function(name, forward, backward, vmap=None, generate=False):
    """A torch Function (forward, setup_context style) saving its inputs."""
    body = {
        "forward": staticmethod(forward),
        "setup_context": staticmethod(lambda ctx, inputs, output: ctx.save_for_backward(
            *[x for x in inputs if isinstance(x, torch.Tensor)])),
        "backward": staticmethod(backward),
        "generate_vmap_rule": generate,
    }
    if vmap is not None:
        body["vmap"] = staticmethod(vmap)
    return type(name, (torch.autograd.Function,), body)


def _colsum_backward(ctx, g):
    (x,) = ctx.saved_tensors
    return g.unsqueeze(0).expand_as(x)


def _moved(x, d):
    return x if d is None else x.movedim(d, 0)


ColSum = _function("ColSum", lambda x: x.sum(0), _colsum_backward,
                   lambda info, dims, x: (_moved(x, dims[0]).sum(1), 0))
# sums dimension 0 of the batched tensor: the batch
ColSumOverBatch = _function("ColSumOverBatch", lambda x: x.sum(0), _colsum_backward,
                            lambda info, dims, x: (_moved(x, dims[0]).sum(0), None))
# a square input: summing the wrong per-example dimension keeps every shape
ColSumWrongAxis = _function("ColSumWrongAxis", lambda x: x.sum(0), _colsum_backward,
                            lambda info, dims, x: (_moved(x, dims[0]).sum(2), 0))
Double = _function("Double", lambda x: 2 * x, lambda ctx, g: 2 * g,
                   lambda info, dims, x: (2 * x, 0))   # ignores in_dims[0]
DoubleRight = _function("DoubleRight", lambda x: 2 * x, lambda ctx, g: 2 * g,
                        lambda info, dims, x: (2 * x, dims[0]))


def _gate_backward(ctx, g):
    x, w = ctx.saved_tensors
    s = torch.sigmoid(w)
    return g * s, (g * x * s * (1 - s)).sum(0)


def _gate(x, w):
    return x * torch.sigmoid(w)


# x (rows, n) gated by w (n): the rule applies itself to whatever it is handed
# and says the batch is at 0, as rules that "just call apply" do
GateApply = _function("GateApply", _gate, _gate_backward)
GateApply.vmap = staticmethod(lambda info, dims, x, w: (GateApply.apply(x, w), 0))
# moves both batch dimensions, failing when w is not batched (in_dims None)
GateMoves = _function("GateMoves", _gate, _gate_backward,
                      lambda info, dims, x, w: (x.movedim(dims[0], 0)
                                                * torch.sigmoid(w.movedim(dims[1], 0))[:, None], 0))


def _gate_rule(info, dims, x, w):
    x, w = _moved(x, dims[0]), _moved(w, dims[1])
    if dims[0] is None:
        x = x.expand(info.batch_size, *x.shape)
    w = w.unsqueeze(-2) if dims[1] is not None else w
    return x * torch.sigmoid(w), 0


GateRight = _function("GateRight", _gate, _gate_backward, _gate_rule)


def _log_matvec(a, x):
    return torch.log(a @ x)


def _log_matvec_backward(ctx, g):
    a, x = ctx.saved_tensors
    q = g / (a @ x)
    return q[:, None] * x[None, :], a.mT @ q


def _log_matvec_rule(info, dims, a, x):
    a, x = _moved(a, dims[0]), _moved(x, dims[1])
    a = a if dims[0] is not None else a.expand(info.batch_size, *a.shape)
    x = x if dims[1] is not None else x.expand(info.batch_size, *x.shape)
    # one batched matmul: another summation order than the loop's matvecs
    return torch.log(torch.bmm(a, x.unsqueeze(-1)).squeeze(-1)), 0


LogMatvec = _function("LogMatvec", _log_matvec, _log_matvec_backward, _log_matvec_rule)


def _minmax_backward(ctx, gmin, gmax):
    (x,) = ctx.saved_tensors
    low = (x == x.min(-1, keepdim=True).values) * gmin.unsqueeze(-1)
    high = (x == x.max(-1, keepdim=True).values) * gmax.unsqueeze(-1)
    return low + high


MinMax = _function("MinMax", lambda x: (x.min(-1).values, x.max(-1).values), _minmax_backward,
                   lambda info, dims, x: ((_moved(x, dims[0]).min(-1).values,
                                           _moved(x, dims[0]).max(-1).values), (0, 0)))
# the outputs' batch dimensions swapped with the outputs themselves
MinMaxSwapped = _function(
    "MinMaxSwapped", lambda x: (x.min(-1).values, x.max(-1).values), _minmax_backward,
    lambda info, dims, x: ((_moved(x, dims[0]).max(-1).values,
                            _moved(x, dims[0]).min(-1).values), (0, 0)))
Generated = _function("Generated", lambda x: x.sum(0), _colsum_backward, generate=True)


def _x(*shape, dtype=torch.float64):
    rng = np.random.default_rng(3)
    return torch.tensor(rng.uniform(0.5, 1.5, shape), dtype=dtype, requires_grad=True)


def _matches_loop(F, inputs, in_dims) -> bool:
    """torch's own answer: torch.func.vmap of F.apply against F.apply per example."""
    rng = np.random.default_rng(0)
    size = 3
    batched, examples = [], [[] for _ in range(size)]
    for x, d in zip(inputs, in_dims):
        x = x.detach()
        if d is None:
            batched.append(x)
            for e in examples:
                e.append(x)
            continue
        copies = [x * torch.tensor(1 + 0.2 * rng.uniform(-1, 1, x.shape)) for _ in range(size)]
        batched.append(torch.stack(copies, d))
        for e, c in zip(examples, copies):
            e.append(c)
    with torch.no_grad():
        try:
            got = torch.func.vmap(F.apply, in_dims=in_dims)(*batched)
        except Exception:  # noqa: BLE001 - a rule that raises does not match
            return False
        loop = [F.apply(*e) for e in examples]
    got = got if isinstance(got, tuple) else (got,)
    loop = [r if isinstance(r, tuple) else (r,) for r in loop]
    for k, out in enumerate(got):
        expected = torch.stack([r[k] for r in loop])
        if out.shape != expected.shape or not torch.allclose(out, expected, rtol=1e-12,
                                                                 atol=1e-12):
            return False
    return True


def _vmap_failures(report):
    return [r for r in report.failures if r.check == "vmap-rule"]


WRONG = [
    # (Function, inputs, a layout torch itself gets wrong, words the failure says)
    (ColSumOverBatch, lambda: (_x(4, 5),), (0,), "every input batched at dimension 0"),
    (ColSumWrongAxis, lambda: (_x(4, 4),), (0,), "vmap gives"),
    (Double, lambda: (_x(4, 5),), (2,), "batched at its last dimension"),
    (GateApply, lambda: (_x(3, 4), _x(4)), (0, 0), "in_dims=(0, 0)"),
    (GateMoves, lambda: (_x(3, 4), _x(4)), (0, None), "raised"),
    (MinMaxSwapped, lambda: (_x(4, 5),), (0,), "vmap gives"),
]


@pytest.mark.parametrize("F, make, dims, words", WRONG, ids=[w[0].__name__ for w in WRONG])
def test_a_wrong_vmap_rule_fails_where_torch_disagrees_with_the_loop(F, make, dims, words):
    inputs = make()
    assert not _matches_loop(F, inputs, dims)           # torch's own vmap is wrong there
    report = check(F.apply, inputs, precise=True, seed=0)
    found = _vmap_failures(report)
    assert found, report
    text = " ".join(r.diagnosis for r in found)
    assert words in text and f"{F.__name__}.vmap must" in text
    # its derivatives are right: the rule is the only thing that fails
    assert all(r.check == "vmap-rule" for r in report.failures)


RIGHT = [
    (ColSum, lambda: (_x(4, 5),)),
    (DoubleRight, lambda: (_x(2, 3, 4),)),
    (GateRight, lambda: (_x(3, 4), _x(4))),
    (LogMatvec, lambda: (_x(6, 6), _x(6))),
    (MinMax, lambda: (_x(4, 5),)),
    (ColSum, lambda: (_x(4, 5, dtype=torch.float32),)),
]


@pytest.mark.parametrize("F, make", RIGHT, ids=[f"{r[0].__name__}-{i}" for i, r in enumerate(RIGHT)])
def test_a_right_vmap_rule_passes(F, make):
    inputs = make()
    layouts = [tuple(0 for _ in inputs), tuple(x.ndim for x in inputs)]
    layouts += [tuple(0 if j == i else None for j in range(len(inputs)))
                for i in range(len(inputs))] if len(inputs) > 1 else []
    for dims in layouts:
        assert _matches_loop(F, inputs, dims), dims   # torch agrees: the rule is right
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")              # (float32's precision warning)
        report = check(F.apply, inputs, precise=True, seed=0)
    assert not _vmap_failures(report), report
    assert any(r.check == "vmap-rule" for r in report.results)   # it was checked


def test_only_a_functions_own_rule_is_checked():
    x = _x(4, 5)
    # a generated rule (torch's own, from the forward), no Function, a rule turned off
    for func, on in ((Generated.apply, True), (lambda t: t.sum(0), True), (ColSum.apply, False)):
        report = check(func, (x,), seed=0, check_vmap_rule=on)
        assert not any(r.check == "vmap-rule" for r in report.results)


def test_gradcheck_raises_on_a_wrong_rule_torch_gradcheck_passes():
    x = _x(4, 5)
    assert torch.autograd.gradcheck(Double.apply, (x,), check_batched_grad=True)
    with pytest.raises(GradcheckError, match="own vmap rule differs"):
        gradcheck(Double.apply, (x,))
    assert gradcheck(DoubleRight.apply, (x,))


def test_a_domain_the_examples_keep():
    # log(a @ x) needs a @ x > 0: the copies keep every sign, so every example is
    # in the domain and the right rule is judged (not left unchecked)
    report = check(LogMatvec.apply, (_x(6, 6), _x(6)), seed=0)
    judged = [r for r in report.results if r.check == "vmap-rule"]
    assert judged and all(r.passed for r in judged)


# a torch.library custom op runs the rule given to register_vmap in the same way
@torch.library.custom_op("adcheck_vmap_test::colsum", mutates_args=())
def colsum_op(x: torch.Tensor) -> torch.Tensor:
    return x.sum(0)


@torch.library.custom_op("adcheck_vmap_test::colsum_right", mutates_args=())
def colsum_right_op(x: torch.Tensor) -> torch.Tensor:
    return x.sum(0)


for _op in (colsum_op, colsum_right_op):
    _op.register_fake(lambda x: x.new_empty(x.shape[1:]))
    _op.register_autograd(lambda ctx, g: g.unsqueeze(0).expand(ctx.n, *g.shape),
                          setup_context=lambda ctx, inputs, output: setattr(
                              ctx, "n", inputs[0].shape[0]))
colsum_op.register_vmap(lambda info, dims, x: (_moved(x, dims[0]).sum(0), 0))    # the batch
colsum_right_op.register_vmap(lambda info, dims, x: (_moved(x, dims[0]).sum(1), 0))


@pytest.mark.parametrize("op, wrong", [(colsum_op, True), (colsum_right_op, False)])
def test_a_custom_ops_registered_rule_is_checked(op, wrong):
    x = _x(4, 5)
    batched = torch.stack([x.detach(), 2 * x.detach()])
    looped = torch.stack([op(x.detach()), op(2 * x.detach())])
    got = torch.func.vmap(op)(batched)
    assert (got.shape != looped.shape) == wrong     # torch's own vmap, wrong or right
    for func in (op, torch.ops.adcheck_vmap_test.colsum if wrong
                 else torch.ops.adcheck_vmap_test.colsum_right):
        report = check(func, (x,), seed=0)
        found = _vmap_failures(report)
        assert bool(found) == wrong, report
        assert any(r.check == "vmap-rule" for r in report.results)
    if wrong:
        assert "the vmap rule registered for adcheck_vmap_test::colsum must" in \
            found[0].diagnosis


class _Head(torch.nn.Module):
    def forward(self, x):
        return colsum_op(x * 1.0)


def test_a_harvested_custom_op_has_its_rule_checked():
    from adcheck.gradcheck import harvest
    found = harvest(torch.nn.Sequential(torch.nn.Linear(5, 5), _Head()), (torch.randn(4, 5),),
                    seed=0)
    (name,) = [op.name for op in found.ops]
    (report, *_) = found.reports[name]
    assert {r.check for r in report.failures} == {"vmap-rule"}


# refengine runs a Function's own rule under refengine.vmap as torch does
# (conformance/function_vmap.py holds the two engines to the same answers)
def _ref_colsum(rule):
    from adcheck import refengine as E

    class RefColSum(E.autograd.Function):
        @staticmethod
        def forward(x):
            return x.sum(0)

        @staticmethod
        def setup_context(ctx, inputs, output):
            ctx.n = inputs[0].shape[0]

        @staticmethod
        def backward(ctx, g):
            return g.unsqueeze(0).expand(ctx.n, *g.shape)
    RefColSum.vmap = staticmethod(rule)
    return RefColSum


@pytest.mark.parametrize("wrong", [True, False])
def test_a_refengine_functions_own_rule_is_checked(wrong):
    from adcheck import refengine as E
    if wrong:
        F = _ref_colsum(lambda info, dims, x: (x.sum(0), 0))
    else:
        F = _ref_colsum(lambda info, dims, x: (x.movedim(dims[0], 0).sum(1), 0))
    x = E.tensor(np.random.default_rng(0).uniform(0.5, 1.5, (4, 5)), requires_grad=True)
    batch = E.tensor(np.random.default_rng(1).standard_normal((3, 4, 5)))
    got = E.vmap(F.apply)(batch)
    assert (tuple(got.shape) != (3, 5)) == wrong      # refengine's own vmap runs the rule
    report = check(F.apply, (x,), precise=True, seed=0)
    assert bool(_vmap_failures(report)) == wrong
    # the wrong rule's batches of the check's own evaluations are refused: its
    # derivatives are judged one evaluation at a time, right, and only the rule fails
    assert {r.check for r in report.failures} == ({"vmap-rule"} if wrong else set())
    if wrong:
        assert "own vmap rule" in report.batching["fallback"]
        again = check(lambda t: F.apply(t) * 2, (x,), precise=True, seed=0)
        assert again.passed and "own vmap rule" in again.batching["fallback"]
