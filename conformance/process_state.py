"""State shared by the threads of a process: the default dtype, the random
generator, and a retained gradient that several backward passes fill."""
from __future__ import annotations

import sys
import threading

from adcheck.conformance.case import MECHANICS, TORCH_BEHAVIOUR, case

TIMEOUT = 30.0


def _in_thread(target) -> None:
    errors = []

    def body():
        try:
            target()
        except BaseException as exc:  # noqa: BLE001 - reported to the caller
            errors.append(exc)
    t = threading.Thread(target=body, daemon=True)
    t.start()
    t.join(timeout=TIMEOUT)
    assert not t.is_alive() and not errors, errors


@case("the default dtype is one for the process: a thread sees the default the main thread "
      "set, and the main thread sees one a thread set", source=TORCH_BEHAVIOUR)
def default_dtype_is_process_wide(E):
    seen = []
    try:
        E.set_default_dtype(E.float64)
        _in_thread(lambda: seen.append((E.get_default_dtype(), E.ones(1).dtype)))
        assert seen == [(E.float64, E.float64)]
        E.set_default_dtype(E.float32)
        _in_thread(lambda: E.set_default_dtype(E.float64))
        assert E.get_default_dtype() is E.float64
    finally:
        E.set_default_dtype(E.float32)


@case("manual_seed seeds the one default generator: draws in another thread follow a seed "
      "set in the main thread, and a seed set in a thread decides the main thread's draws",
      source=TORCH_BEHAVIOUR)
def manual_seed_is_process_wide(E):
    drawn = []
    E.manual_seed(5)
    _in_thread(lambda: drawn.append(E.rand(3).tolist()))
    E.manual_seed(5)
    assert drawn == [E.rand(3).tolist()]
    _in_thread(lambda: E.manual_seed(11))
    after = E.rand(2).tolist()
    E.manual_seed(11)
    assert after == E.rand(2).tolist()


@case("If you are calling backward() from multiple threads concurrently and have shared "
      "inputs (i.e. Hogwild CPU training), then non-determinism should be expected.",
      source=MECHANICS,
      not_on={"torch": "torch 2.13 fills a retained .grad without a lock: threads that fill "
                       "it at once lose updates or crash the process (segmentation fault); "
                       "see docs/differences.md"})
def retained_grad_shared_by_threads_loses_no_update(E):
    # the order of the additions may vary; their number may not: every
    # backward pass adds its gradient to the retained .grad of the shared y
    x = E.ones(3, requires_grad=True)
    y = x * 2
    y.retain_grad()
    passes, threads = 100, 4
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)           # switch threads as often as possible
    try:
        workers = [threading.Thread(target=lambda: [(y * 1).sum().backward(retain_graph=True)
                                                    for _ in range(passes)], daemon=True)
                   for _ in range(threads)]
        for w in workers:
            w.start()
        for w in workers:
            w.join(timeout=TIMEOUT)
    finally:
        sys.setswitchinterval(interval)
    assert not any(w.is_alive() for w in workers)
    total = float(passes * threads)
    assert y.grad.tolist() == [total] * 3 and x.grad.tolist() == [2 * total] * 3
