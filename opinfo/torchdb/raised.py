"""Whose error it is when a check of an op_db sample raises inside torch.

A check of torch's formulas that ends in an exception is an error of the
run, unless torch itself raises the same on the sample, outside adcheck.
``confirm`` asks two witnesses, in this order:

1. torch's own gradcheck or gradgradcheck, run as PyTorch's test of the
   check runs it (``call.torch_runs``). If it raises the same exception,
   the sample fails in PyTorch's own test, and the verdict is a failure.
2. For the forward-mode checks, torch's derivative called directly with a
   tangent on one differentiable input at a time (the others carry none,
   which forward AD documents as a zero tangent). torch's gradcheck gives
   every input a tangent, zeros included, so it cannot see a formula that
   raises when some input has no tangent (``mse_loss``'s forward-over-reverse
   raises "ZeroTensors are immutable" then). If the direct call raises the
   same, the derivative raises on a valid call: a failure, with the
   reproducer.

When neither raises the same, the error stays an error of adcheck's run.
"""
from __future__ import annotations

from types import SimpleNamespace

#: how much of an exception's text must appear in the check's error message
MATCHED = 120


def _words(text: str) -> str:
    return " ".join(str(text).split())


def same(error: str, message: str, ours: str) -> bool:
    """Whether the exception ``error: message`` is the one our check's error
    text ``ours`` reports (its class and the start of its text)."""
    text = _words(message)[:MATCHED]
    return bool(text) and error in ours and text in _words(ours)


def confirm(func, inputs, runs: list, check: str, ours: str, reproduce: str) -> str | None:
    """The failure message for a check of ``func`` at ``inputs`` that raised
    ``ours``, when torch raises the same without adcheck (see the module
    docstring); ``None`` when it does not."""
    import warnings

    from adcheck.opinfo.torchdb.call import torch_verdict
    with warnings.catch_warnings():   # torch warns of every input not in double precision
        warnings.simplefilter("ignore")
        verdict = torch_verdict(SimpleNamespace(func=func, inputs=tuple(inputs)), runs)
    name, flags = runs[0]
    shown = ", ".join(f"{k}={flags[k]}" for k in ("fast_mode", "check_fwd_over_rev")
                      if k in flags)
    own = f"torch's own {name}({shown}), run as PyTorch's test runs it,"
    if not verdict.passed and same(verdict.error, verdict.message, ours):
        return (f"torch's derivative raises: {own} raises the same "
                f"({verdict.error}: {_words(verdict.message)[:240]}). Reproduce: {reproduce}")
    if check not in ("forward", "fwgrad_bwgrad"):
        return None
    raised = direct(func, inputs, second=check == "fwgrad_bwgrad")
    if raised is None or not same(*raised[1:], ours):
        return None
    k, error, message = raised
    what = "forward-over-reverse (the jvp of the vjp)" if check == "fwgrad_bwgrad" \
        else "forward mode"
    status = "passes" if verdict.passed else f"fails otherwise ({verdict.error})"
    return (f"torch's derivative raises: its {what} called directly with a tangent on input "
            f"{k} only (the others have none, a zero tangent) raises {error}: "
            f"{_words(message)[:240]}; {own} {status}, as it gives every input a tangent. "
            f"Reproduce: {reproduce}")


def direct(func, inputs, second: bool):
    """``(input index, error class, text)`` of the first exception torch raises
    computing the forward-mode derivative (of the vjp, with ``second``) of
    ``func`` with a random tangent on one input at a time; ``None`` if none."""
    for k in range(len(inputs)):
        try:
            _tangent_on(func, inputs, k, second)
        except Exception as exc:  # noqa: BLE001 - what torch raises is the evidence
            return k, type(exc).__name__, str(exc)
    return None


def _tangent_on(func, inputs, k: int, second: bool) -> None:
    """One forward-mode evaluation with a tangent on ``inputs[k]`` only."""
    import torch
    import torch.autograd.forward_ad as fwAD
    with fwAD.dual_level():
        args = [x.detach().clone().requires_grad_(second) for x in inputs]
        args[k] = fwAD.make_dual(args[k].detach(), torch.randn_like(args[k].detach()))
        if second:
            args[k].requires_grad_()
        with torch.set_grad_enabled(second):
            outs = func(*args)
        outs = [o for o in (outs if isinstance(outs, (tuple, list)) else (outs,))
                if isinstance(o, torch.Tensor) and o.requires_grad]
        if second and outs:
            grads = torch.autograd.grad(outs, args, [torch.ones_like(o) for o in outs],
                                        create_graph=True, allow_unused=True)
            for g in grads:
                if g is not None:
                    fwAD.unpack_dual(g)
