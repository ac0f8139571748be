"""A check's batches reuse the pages freed by the batch before (``gradcheck.core.heap``).

Counted in page faults (``ru_minflt``), not in time: 40 batches of four
arrays of 4 MiB, each written whole and freed together, as a batch's stacked
inputs, outputs and temporaries are. glibc's own thresholds (the mmap
threshold raised to 4 MiB, its trim threshold twice that) hand the 16 MiB
freed at the top of the heap back to the kernel after every batch, so each
batch faults in its 4,096 pages afresh (80,800 faults measured in a fresh
process); with the heap kept, none.
"""
from __future__ import annotations

import resource
import sys

import numpy as np
import pytest

from adcheck.gradcheck.core import heap

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux") or heap._libc() is None,
                                reason="mallopt is glibc's (Linux); elsewhere heap does nothing")

PAGES = 4 * 2**20 // 4096

#: the measure of one evaluation is the kernel's resident high-water mark, reset
#: through /proc/self/clear_refs (Linux 4.0 or later); a sandbox may refuse it
measurable = pytest.mark.skipif(
    heap._libc() is None or heap._reset_peak() is None,
    reason="/proc/self/clear_refs cannot reset the resident high-water mark here, so one "
           "evaluation's allocations are not measured (evaluation_bytes is 0)")


def _faults_of_batches(count: int) -> int:
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    for _ in range(count):
        # every page written, as a batch's arrays are
        blocks = [np.ones(4 * 2**20 // 8) for _ in range(4)]
        del blocks
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before


def test_freed_batches_are_reused_without_new_page_faults():
    assert heap.keep_freed_blocks()
    _faults_of_batches(2)   # the heap grows to hold one
    # fresh pages every batch would fault 40 * 4 * 1,024 times; reused ones not at all
    assert _faults_of_batches(40) < 4 * PAGES


def test_a_check_keeps_the_setting_and_returns_free_pages(monkeypatch):
    from adcheck.gradcheck import check
    import adcheck.refengine as E
    trims = []
    monkeypatch.setattr(heap, "release", lambda: trims.append(1))
    x = E.tensor(np.linspace(0.1, 1.0, 8), dtype=E.float64, requires_grad=True)
    assert check(E.sin, (x,), seed=0).passed
    assert trims == [1]     # once, at the end of the check
    assert heap._state["set"]


def _heavy_function(E, temporaries: int):
    """A function whose evaluation holds ``temporaries`` copies of its input at
    once (a stand-in for a convolution's unfolded image or a model's
    activations), which no count of its inputs and outputs shows."""
    w = E.tensor(np.linspace(0.5, 1.5, temporaries), dtype=E.float64)
    return lambda x: (x.unsqueeze(-1) * w).sin().sum(-1)


@measurable
def test_one_evaluations_own_allocations_are_measured():
    import adcheck.refengine as E
    from adcheck.gradcheck.core.problem import Problem
    x = E.tensor(np.linspace(-1, 1, 4096), dtype=E.float64, requires_grad=True)
    problem = Problem(_heavy_function(E, 128), (x,), "heavy")
    # the product and its sine, 4,096 x 128 each (4 MiB), held with the graph;
    # the kernel counts resident pages in batches, a few dozen pages late
    assert problem.evaluation_bytes >= 7.5 * 2**20
    assert problem.evaluation_bytes < 64 * 2**20


@measurable
def test_memory_freed_after_a_check_does_not_hide_the_next_evaluation():
    # what a long test session (or worker) does all the time: arrays from the
    # heap outlive one check's end and are freed later, leaving free pages that
    # are still resident; the next evaluation reused them unseen and measured
    # 0 bytes (the resident set never grew), so the measure must give them
    # back first, whatever the resident set did since
    import adcheck.refengine as E
    from adcheck.gradcheck.core.problem import Problem
    assert heap.keep_freed_blocks()
    held = [np.ones(2**20 // 8) for _ in range(24)]    # 24 MiB under the mmap threshold
    heap.release()                                      # a check ends while they live
    del held
    x = E.tensor(np.linspace(-1, 1, 4096), dtype=E.float64, requires_grad=True)
    problem = Problem(_heavy_function(E, 128), (x,), "heavy")
    assert problem.evaluation_bytes >= 7.5 * 2**20


@measurable
def test_free_space_left_in_the_heap_does_not_hide_an_evaluation():
    # a long-running process (a test session, a worker of ``adcheck ops``)
    # holds free blocks inside its heap; the evaluation's 4 MiB arrays fit in
    # these 8 MiB holes, so the heap's growth alone measured nothing (0 bytes
    # in CI, after 700 other tests)
    import adcheck.refengine as E
    from adcheck.gradcheck.core.problem import Problem
    assert heap.keep_freed_blocks()
    blocks = [np.ones(8 * 2**20 // 8) for _ in range(16)]
    del blocks[::2]
    x = E.tensor(np.linspace(-1, 1, 4096), dtype=E.float64, requires_grad=True)
    problem = Problem(_heavy_function(E, 128), (x,), "heavy")
    assert problem.evaluation_bytes >= 7.5 * 2**20
    del blocks


@measurable
def test_a_function_with_large_temporaries_keeps_to_the_budget():
    # vmapped batches of 32 evaluations, each with 8 MiB of temporaries, took a
    # probed check to 150 MiB (Python-traced) under a 48 MiB budget when
    # batches were sized by inputs and outputs alone; counting the measured
    # evaluation, 33 MiB
    import tracemalloc
    import adcheck.refengine as E
    from adcheck.gradcheck import check
    x = E.tensor(np.random.default_rng(0).uniform(-1, 1, 4096), dtype=E.float64,
                 requires_grad=True)
    tracemalloc.start()
    try:
        report = check(_heavy_function(E, 128), (x,), precise=True, check_forward_ad=True,
                       jacobian="probed", probes=4, memory_budget=48 * 2**20, seed=0)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert report.passed, report.message()
    assert peak < 48 * 2**20, f"peak {peak / 2**20:.1f} MiB"


@pytest.mark.parametrize("shape,order", [((3, 5), "F"), ((4, 2), "C"), ((0, 4), "F")])
def test_a_mapped_array_is_a_writable_array_of_its_own(shape, order):
    a, b = heap.mapped(shape, order=order), heap.mapped(shape, order=order)
    assert a.shape == shape and a.dtype == np.float64 and a.flags.writeable
    assert a.flags.f_contiguous if order == "F" else a.flags.c_contiguous
    values = np.arange(a.size, dtype=float).reshape(shape)
    a[...] = values
    b[...] = -1.0
    np.testing.assert_array_equal(a, values)   # (b shares none of a's memory)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="MAP_POPULATE is Linux's")
def test_a_mapped_arrays_pages_are_mapped_when_it_is_made():
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    a = heap.mapped((1024, 1024))   # 8 MiB: 2,048 pages of 4 KiB
    made = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    a.fill(1.0)
    written = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    assert made - before >= 1024 and written - made < 64


@measurable
def test_descriptors_closed_and_reused_by_another_file_are_reopened():
    # a long test session failed the test above with 0 bytes: something closed the
    # descriptors kept for /proc/self/status, statm and clear_refs, and other files
    # took their numbers; reading those found no counter
    import os
    import adcheck.refengine as E
    from adcheck.gradcheck.core.problem import Problem
    x = E.tensor(np.linspace(-1, 1, 4096), dtype=E.float64, requires_grad=True)
    assert Problem(_heavy_function(E, 128), (x,), "heavy").evaluation_bytes >= 7.5 * 2**20
    kept = [heap._open[name] for name in ("status", "statm", "clear")]
    source = os.open(__file__, os.O_RDONLY)
    try:
        for fd in kept:
            # closes the kept descriptor and gives its number to this file, whatever
            # other numbers are free (a long session has some lower ones free)
            os.dup2(source, fd)
        assert all(os.path.samestat(os.fstat(fd), os.fstat(source)) for fd in kept)
        assert Problem(_heavy_function(E, 128), (x,), "heavy").evaluation_bytes >= 7.5 * 2**20
    finally:
        os.close(source)
        for fd in kept:
            if os.path.samestat(os.fstat(fd), os.stat(__file__)):
                os.close(fd)
