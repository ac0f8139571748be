"""Multithreaded autograd: concurrent backward, shared graphs, node locking.

Every case runs a bounded number of threads and joins them with a timeout, so
a deadlocked engine fails the case instead of hanging the suite.
"""
from __future__ import annotations

import math
import threading

from adcheck.conformance.case import MECHANICS, case

THREADS = 8
TIMEOUT = 30.0


def _run_threads(target, count=THREADS):
    """Run ``target(i)`` in ``count`` threads; return (results, errors) by index."""
    results, errors = [None] * count, [None] * count
    start = threading.Barrier(count)

    def body(i):
        try:
            start.wait(timeout=TIMEOUT)
            results[i] = target(i)
        except BaseException as exc:  # noqa: BLE001 - reported to the caller
            errors[i] = exc
    threads = [threading.Thread(target=body, args=(i,), daemon=True) for i in range(count)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=TIMEOUT)
    assert not any(t.is_alive() for t in threads), "a backward thread did not finish"
    return results, errors


@case("User could train their model with multithreading code (e.g. Hogwild training), "
      "and does not block on the concurrent backward computations", source=MECHANICS)
def concurrent_backward_on_independent_graphs(E):
    def train_fn(i):
        x = E.ones(5, 5, requires_grad=True)
        y = (x + 3) * (x + 4) * 0.5
        y.sum().backward()
        return x.grad.tolist()
    results, errors = _run_threads(train_fn)
    assert errors == [None] * THREADS, errors
    assert all(r == [[4.5] * 5] * 5 for r in results)


@case("When you run backward() or grad() via python or C++ API in multiple threads on "
      "CPU, you are expecting to see extra concurrency instead of serializing all the "
      "backward calls in a specific order during execution", source=MECHANICS)
def concurrent_grad_gives_exact_results(E):
    def work(i):
        x = E.tensor([float(i), 1.0], dtype=E.float64, requires_grad=True)
        out = (x ** 3).sum() * (i + 1)
        (g,) = E.autograd.grad(out, x)
        return g.tolist()
    results, errors = _run_threads(work)
    assert errors == [None] * THREADS, errors
    for i, g in enumerate(results):
        assert g == [3.0 * i * i * (i + 1), 3.0 * (i + 1)]


@case("If part of the autograd graph is shared between threads ... Specify "
      "retain_graph=True", source=MECHANICS)
def shared_graph_with_retain_graph(E):
    x = E.tensor([0.5, 1.5], dtype=E.float64, requires_grad=True)
    shared = x.exp()

    def work(i):
        out = (shared * (i + 1)).sum()
        (g,) = E.autograd.grad(out, x, retain_graph=True)
        return g.tolist()
    results, errors = _run_threads(work)
    assert errors == [None] * THREADS, errors
    base = E.exp(x.detach()).tolist()
    for i, g in enumerate(results):
        assert all(abs(a - (i + 1) * b) < 1e-12 for a, b in zip(g, base))


@case("In this case different threads execute grad() or backward() on the same graph "
      "might have issue of destroying the graph on the fly of one thread, and the other "
      "thread will crash in this case. Autograd will error out to the user similar to "
      "what call backward() twice with out retain_graph=True", source=MECHANICS)
def shared_graph_without_retain_graph_errors_cleanly(E):
    x = E.tensor([0.5, 1.5], dtype=E.float64, requires_grad=True)
    shared = x.exp()
    base = E.exp(x.detach()).tolist()

    def work(i):
        out = (shared * (i + 1)).sum()
        (g,) = E.autograd.grad(out, x)
        return g.tolist()
    results, errors = _run_threads(work)
    succeeded = [i for i, e in enumerate(errors) if e is None]
    assert succeeded, "no thread completed its backward"
    for i in succeeded:
        assert all(abs(a - (i + 1) * b) < 1e-12 for a, b in zip(results[i], base))
    for e in errors:
        if e is not None:
            assert isinstance(e, RuntimeError), repr(e)
            assert "backward through the graph a second time" in str(e), str(e)
    assert len(succeeded) < THREADS


@case("For built-in C++ Autograd Nodes (e.g. AccumulateGrad, CopySlices) and custom "
      "autograd::Function s, the Autograd Engine uses thread mutex locking to ensure "
      "thread safety on autograd Nodes that might have state write/read.",
      source=MECHANICS)
def shared_leaf_accumulation_is_locked(E):
    w = E.zeros(4, dtype=E.float64, requires_grad=True)
    rounds = 5

    def work(i):
        for _ in range(rounds):
            (w * 2.0).sum().backward()
    _, errors = _run_threads(work)
    assert errors == [None] * THREADS, errors
    assert w.grad.tolist() == [2.0 * THREADS * rounds] * 4


@case("The functional API torch.autograd.grad may be used to calculate the gradients "
      "instead of backward() to avoid non-determinism.", source=MECHANICS)
def grad_on_shared_parameters_is_deterministic(E):
    w = E.tensor([1.0, 2.0, 3.0], dtype=E.float64, requires_grad=True)

    def work(i):
        data = E.full((3,), float(i), dtype=E.float64)
        (g,) = E.autograd.grad((w * w * data).sum(), w)
        return g.tolist()
    results, errors = _run_threads(work)
    assert errors == [None] * THREADS, errors
    for i, g in enumerate(results):
        assert g == [2.0 * i, 4.0 * i, 6.0 * i]
    assert w.grad is None


@case("Custom Python autograd.Function s are automatically thread safe because of GIL.",
      source=MECHANICS)
def custom_functions_in_threads(E):
    class Scale(E.autograd.Function):
        @staticmethod
        def forward(ctx, x, k):
            ctx.k = k
            ctx.save_for_backward(x)
            return x * k

        @staticmethod
        def backward(ctx, grad):
            (x,) = ctx.saved_tensors
            return grad * ctx.k, None

    def work(i):
        x = E.ones(3, dtype=E.float64, requires_grad=True)
        Scale.apply(x, float(i + 1)).sum().backward()
        return x.grad.tolist()
    results, errors = _run_threads(work)
    assert errors == [None] * THREADS, errors
    assert results == [[float(i + 1)] * 3 for i in range(THREADS)]


@case("Since Autograd allows the caller thread to drive its backward execution for "
      "potential parallelism, it's important that we ensure thread safety on CPU with "
      "parallel backward() calls that share part/whole of the GraphTask.",
      source=MECHANICS)
def shared_copyslices_graph_in_threads(E):
    x = E.tensor([1.0, 2.0, 3.0, 4.0], dtype=E.float64, requires_grad=True)
    z = x * 1
    z[1:3].mul_(x[1:3].detach())      # the base's grad_fn is now a CopySlices
    z[0:2].exp_()

    def work(i):
        (g,) = E.autograd.grad((z * (i + 1)).sum(), x, retain_graph=True)
        return g.tolist()
    results, errors = _run_threads(work)
    assert errors == [None] * THREADS, errors
    expected = [math.e, 2 * math.exp(4.0), 3.0, 1.0]
    for i, g in enumerate(results):
        assert all(abs(a - (i + 1) * b) < 1e-9 * b for a, b in zip(g, expected)), g
