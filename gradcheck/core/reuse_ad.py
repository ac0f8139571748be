"""The AD Jacobians of one sample's checks, built once (``reuse.ad_kept``).

A sweep's reverse check of a sample builds the reverse-mode Jacobian (twice:
reentrancy), its forward check the forward-mode one, and its reference check
both again: the same products of the same function at the same point, only
judged against the mpmath reference instead of finite differences. Inside
``reuse.shared()`` (the sample's call is one pure computation), for a dense
plan, a later check of the same function at the same inputs and memory budget
takes the Jacobian an earlier one built.

What a build establishes besides the Jacobian, and what a check that takes
it instead sees:

- reentrancy: its second reverse build is the earlier check's second build,
  so it compares the same two Jacobians the earlier check compared (with its
  own ``nondet_tol``). Where the earlier check made no second build (its
  batches made again gave the first build's bits, ``gradcheck.core.repeat``),
  the first build stands for the second, as it did there.
- inputs or grad_outputs changed in place, a batch that fell back to the
  loop: a build that recorded any of these is not kept, and a second build
  that does makes its first unkept: the later check builds its own and
  reports what it sees.
- ops without a batching rule: their names join the later check's record
  (the result says which ops ran once per example, as it did).
- the vectors other checks ask for ahead ride in no batch of the taken
  Jacobian: they are made in a batch of their own when asked for.
"""
from __future__ import annotations


class _Built:
    """A kept Jacobian, its second build (reentrancy) once made, and the ops
    its batches looped over."""

    def __init__(self, jac, looped: dict):
        self.jac, self.again, self.looped = jac, None, looped


def _state(ev) -> tuple:
    """What a build may record on ``ev`` that a taken Jacobian would not."""
    p = ev.problem
    # (entries are only ever added: their keys say whether a build added one)
    return (frozenset(p.mutations), frozenset(p.grad_output_changes), p.batching["fallback"],
            frozenset(getattr(ev, "_unbatchable", ())))


class KeptProducer:
    """A producer of one side's Jacobian for the check of ``ev``: its first call
    on ``ev`` takes a kept Jacobian or builds and keeps one; its second (the
    reentrancy check's repeat) takes the kept second build, or builds and keeps
    it; any other call (another evaluator: the AD rounding's moved points) builds."""

    def __init__(self, ev, key: tuple, produce, store: list):
        self.ev, self.key, self.produce, self.store = ev, key, produce, store
        self.calls = 0
        self.entry = None       # the kept entry this check built or took
        self.taken = False

    def __call__(self, ev):
        if ev is not self.ev:
            return self.produce(ev)
        self.calls += 1
        if self.calls == 1:
            return self._first()
        if self.calls == 2 and self.entry is not None:
            return self._again()
        return self.produce(ev)

    def _first(self):
        from adcheck.gradcheck.core import reuse
        ev = self.ev
        entry = reuse._find(self.store, ev, self.key)
        if entry is not None:
            built = entry[4]
            looped = ev.problem.batching["looped_ops"]
            for name, count in built.looped.items():
                looped[name] = looped.get(name, 0) + count
            self.entry, self.taken = entry, True
            return built.jac
        before = _state(ev)
        looped = dict(ev.problem.batching["looped_ops"])
        jac = self.produce(ev)
        if _state(ev) == before:
            now = ev.problem.batching["looped_ops"]
            grew = {k: n - looped.get(k, 0) for k, n in now.items() if n != looped.get(k, 0)}
            self.entry = reuse._keep(self.store, reuse.KEPT_AD, ev, self.key, _Built(jac, grew))
        return jac

    def _again(self):
        built = self.entry[4]
        if self.taken:
            return built.jac if built.again is None else built.again
        before = _state(self.ev)
        again = self.produce(self.ev)
        if _state(self.ev) == before:
            built.again = again
        elif self.entry in self.store:
            self.store.remove(self.entry)
        return again
