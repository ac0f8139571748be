"""The reentrancy check's repeat of a first run, without assembling it again.

The reverse Jacobian (or its projections) is built twice and the two
compared (``checks.reentrant``): the second build runs the backward again on
the same batches as the first, so that both round alike. When every request
of the first run was one engine batch (``Prefetch.recorded``), the repeat is
those batches made again, in the same order, by the same calls (counted, and
checked for changed inputs and grad_outputs, as any batch). If each gives the
very bits it gave the first time, a second build would assemble the same
bits in the same way: the first Jacobian stands for the second, and nothing
is assembled twice. Otherwise (a bit differs, a batch fails now, the first
run was not all batches) the caller builds the second one as before, from
the batches the repeat made (``Prefetch.replay``): the same engine calls as
before, none more, so a backward that changes from call to call is compared
with its second call, as it was.
"""
from __future__ import annotations

from adcheck.gradcheck.core.problem import same_bits


def repeat_first_run(ev) -> bool:
    """Make the batches of ``ev``'s last first run inside ``riding`` again; True
    when each gave the bits it gave first. False: the caller builds the repeat
    under ``riding(again=True)``, served the batches made here."""
    recorded = ev.prefetched.recorded
    ev.prefetched.recorded = []   # (its products are not held past the repeat)
    if not recorded:
        return False
    made, same = [], True
    for kind, idx, batch, first, what in recorded:
        again = ev._batched_call(kind, idx, batch, what, False)
        if again is None:   # (the loop makes it in the caller's build, as before)
            same = False
            break
        made.append((kind, idx, batch, again))
        same = same and _same_bits(first, again)
    if same:
        return True
    ev.prefetched.replay(made)
    return False


def _same_bits(first: dict, again: dict) -> bool:
    """Whether two batches' products by receiver are equal bit for bit."""
    if first.keys() != again.keys():
        return False
    for r, a in first.items():
        b = again[r]
        if a is None or b is None:
            if a is not b:
                return False
        elif a.dtype != b.dtype or a.shape != b.shape or not same_bits(a, b):
            return False
    return True
