"""The AD Jacobians a sample's first-order checks built, kept for its later
checks (``reuse.ad_kept``): the reverse one for its gradgrad check
(``gradcheck.core.reuse_gg`` reads it), both for its reference check, which
compares them with the mpmath reference instead of building them again
(``reuse.ad_taken``).

Taking them was tried before alone and measured slower (bench/ops_sweep.md,
2026-11-29, H34d): the vectors other checks ask for ahead (scaling,
undefined gradients) ride in the batches of a build, and without one they
needed batches of their own. Those checks are now judged once a sample
(``reuse.judged``): a check that takes the Jacobians asks for no vectors.

A build that changed an input or a grad_output in place, or whose batches fell
back to the loop, is not kept: its products are not the backward's plain ones.
"""
from __future__ import annotations


def _state(ev) -> tuple:
    """What a build may record on ``ev`` besides its Jacobian."""
    p = ev.problem
    # (entries are only ever added: their keys say whether a build added one)
    return (frozenset(p.mutations), frozenset(p.grad_output_changes), p.batching["fallback"],
            frozenset(getattr(ev, "_unbatchable", ())))


class KeptProducer:
    """A producer of the reverse Jacobian for the check of ``ev``: its first
    call on ``ev`` builds, and hands what it built to ``keep(ev, key, jac)``
    when the build recorded nothing else on ``ev``; every other call (the
    reentrancy repeat, another evaluator) only builds."""

    def __init__(self, ev, key: tuple, produce, keep):
        self.ev, self.key, self.produce, self.keep = ev, key, produce, keep
        self.called = False

    def __call__(self, ev):
        if ev is not self.ev or self.called:
            return self.produce(ev)
        self.called = True
        before = _state(ev)
        jac = self.produce(ev)
        if _state(ev) == before:
            self.keep(ev, self.key, jac)
        return jac
