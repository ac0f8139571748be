"""A Function's own vmap rule where no scaled copy of the inputs is in its domain.

The vmap-rule check batches the given inputs with copies scaled entry by
entry. A Function that refuses rows not summing to one (an entropy of
probability rows) raises on every such copy, and the check used to return
nothing: a rule that sums over the batch passed unseen, and the report did
not say its rule went unchecked. Now the examples are the given inputs three
times, which still judges the rule's shapes, in_dims and out_dims, and the
report says so. Each verdict is confirmed against torch.func.vmap and a loop."""
from __future__ import annotations

import pytest

from adcheck.gradcheck import check

torch = pytest.importorskip("torch", reason="torch autograd.Functions (pip install torch)")


def _entropy(p):
    if not torch.allclose(p.sum(-1), torch.ones((), dtype=p.dtype), atol=1e-12):
        raise ValueError("each row must sum to 1")
    return -(p * p.log()).sum(-1)


def _entropy_function(name, rule):
    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(inputs[0])

    def backward(ctx, g):
        (p,) = ctx.saved_tensors
        return -g.unsqueeze(-1) * (p.log() + 1)

    return type(name, (torch.autograd.Function,), {
        "forward": staticmethod(_entropy), "setup_context": staticmethod(setup_context),
        "backward": staticmethod(backward), "vmap": staticmethod(rule)})


def _moved(p, d):
    return p if d is None else p.movedim(d, 0)


Entropy = _entropy_function("Entropy", lambda info, dims, p: (_entropy(_moved(p, dims[0])), 0))
# sums the batch away and says the result is unbatched
EntropyOverBatch = _entropy_function(
    "EntropyOverBatch", lambda info, dims, p: (_entropy(_moved(p, dims[0])).sum(0), None))


def _rows():
    torch.manual_seed(0)
    return torch.softmax(torch.randn(3, 4, dtype=torch.float64), -1).requires_grad_()


def _torch_vmap_agrees(function, p, copies=3):
    batch = p.detach().expand(copies, *p.shape).clone()
    mapped = torch.func.vmap(function.apply)(batch)
    looped = torch.stack([function.apply(row) for row in batch])
    return mapped.shape == looped.shape and torch.allclose(mapped, looped)


def test_scaled_copies_leave_the_domain():
    p = _rows()
    with pytest.raises(ValueError):
        Entropy.apply(p.detach() * 1.001)


def test_a_right_rule_passes_and_the_report_says_how_it_was_judged():
    p = _rows()
    assert _torch_vmap_agrees(Entropy, p)
    report = check(Entropy.apply, (p,), precise=True, explore=False)
    assert report.passed, report.message()
    assert any(r.check == "vmap-rule" and r.passed for r in report.results)
    assert len(report.partial) == 1
    assert "Entropy.vmap checked on 3 identical examples" in report.partial[0]
    assert "mixes examples was not" in report.partial[0]
    assert "identical examples" in report.message()
    assert report.to_dict()["partial"] == report.partial


def test_a_rule_summing_the_batch_fails_on_identical_examples():
    p = _rows()
    assert not _torch_vmap_agrees(EntropyOverBatch, p)
    report = check(EntropyOverBatch.apply, (p,), precise=True, explore=False)
    failures = [r for r in report.failures if r.check == "vmap-rule"]
    assert failures, report.message()
    assert "EntropyOverBatch.vmap" in failures[0].diagnosis


def test_copies_in_the_domain_are_no_partial_check():
    x = torch.randn(3, 4, dtype=torch.float64).abs().add(0.5).requires_grad_()
    free = _entropy_function("Free", lambda info, dims, p: (-(_moved(p, dims[0])
                                                            * _moved(p, dims[0]).log()).sum(-1), 0))
    free.forward = staticmethod(lambda p: -(p * p.log()).sum(-1))
    report = check(free.apply, (x,), precise=True, explore=False)
    assert report.passed, report.message()
    assert any(r.check == "vmap-rule" for r in report.results)
    assert report.partial == []
