"""Chunks change how much memory a check holds, never what it finds.

Every formula of the zoo, right and wrong, is checked twice with the same
seed: with whole Jacobian blocks, and forced into the chunked plan (the
blocks declared too large for the budget, two columns per chunk), where
each block is built, compared and dropped a chunk at a time. Verdicts,
failing pairs and diagnoses must agree, and the window a chunked failure
shows must hold the dense Jacobians' own entries.
"""
from __future__ import annotations

import gradcheck_zoo as zoo
import numpy as np
import pytest
from gradcheck_support import one_torch_thread  # noqa: F401  (a fixture)

from adcheck.gradcheck.core import budget
from adcheck.gradcheck import check
from adcheck.gradcheck.large import streamed

pytestmark = pytest.mark.usefixtures("one_torch_thread")

ENTRIES = [e for e in zoo.bugs() + zoo.correct()
           if "noisy" not in e.name and "nondeterministic" not in e.name
           and e.caught_by != "gradgrad"]
OPTIONS = {"precise": {"precise": True}, "adjoint": {"check_forward_ad": True}}


@pytest.fixture(params=["rows held", "rows per chunk"])
def chunked(monkeypatch, request):
    """Run a check with every block declared beyond the budget, 2 columns a
    chunk: reverse mode's rows made once and held, or (as when they do not
    fit) made again for every chunk."""
    held = request.param == "rows held"

    def run(*args, **kwargs):
        with monkeypatch.context() as m:
            m.setattr(budget, "fits", lambda *a, **k: False)
            m.setattr(streamed, "_width", lambda ev, in_idx: 2)
            m.setattr(streamed, "_held_width", lambda ev, in_idx: 2 if held else None)
            return check(*args, **kwargs)
    return run


def _verdicts(report) -> list:
    return sorted((r.check, r.mode, r.out_idx, r.in_idx, r.passed) for r in report.results)


@pytest.mark.parametrize("entry", ENTRIES, ids=lambda e: e.name)
def test_chunked_and_dense_checks_agree(E, entry, chunked):
    f, inputs = entry.build(E), entry.inputs(E)
    options = dict(OPTIONS.get(entry.caught_by, {"check_forward_ad": True}), seed=0)
    dense = check(f, inputs, **options)
    chunks = chunked(f, inputs, **options)
    assert (dense.plan, chunks.plan) == ("dense", "chunked")
    assert chunks.passed == dense.passed
    assert _verdicts(chunks) == _verdicts(dense)
    for mine in chunks.failures:
        if mine.check not in ("reverse", "forward"):
            continue
        theirs = next(r for r in dense.failures if (r.check, r.out_idx, r.in_idx)
                      == (mine.check, mine.out_idx, mine.in_idx))
        assert mine.where == theirs.where
        assert mine.max_error == pytest.approx(theirs.max_error, rel=1e-9)
        assert mine.diagnosis == theirs.diagnosis
        r0, c0 = mine.origin
        rows, cols = mine.expected.shape
        window = (slice(r0, r0 + rows), slice(c0, c0 + cols))
        np.testing.assert_array_equal(mine.expected, theirs.expected[window])
        np.testing.assert_array_equal(mine.actual, theirs.actual[window])


def test_a_chunked_check_stays_within_its_memory_budget():
    # Richardson over all 300 columns of a dense (cumsum) block at once held
    # 16 x 300 x 300 perturbed outputs (11.5 MB), above the 4 MiB budget here;
    # chunked, the peak of every array the check makes stays below it
    import adcheck.refengine as E
    x = E.tensor(np.random.default_rng(0).standard_normal(300), dtype=E.float64,
                 requires_grad=True)
    assert 16 * 300 * 300 * budget.BYTES > 4 * 2**20
    report, peak = _with_peak(lambda: check(lambda t: E.cumsum(t, 0), (x,), precise=True,
                                            jacobian="dense", memory_budget=4 * 2**20, seed=0))
    assert report.passed and report.plan == "chunked"
    assert peak < 4 * 2**20, f"peak {peak / 2**20:.2f} MiB"
    assert "chunks of columns" in report.coverage["chunked"]


@pytest.mark.parametrize("budget_mib, held", [(4, True), (1, False)])
def test_reverse_rows_are_made_once_when_the_budget_holds_them(budget_mib, held):
    # 400 x 400 reverse rows are 1.2 MiB: within what a 4 MiB budget leaves a
    # chunk, they are made once and held (4,096-long cumsum: a second pass of
    # 4,096 vjps is gone); under 1 MiB they are made again for each chunk
    import adcheck.refengine as E
    n = 400
    x = E.tensor(np.random.default_rng(0).standard_normal(n), dtype=E.float64,
                 requires_grad=True)
    report = check(lambda t: E.cumsum(t, 0), (x,), precise=True, jacobian="dense",
                   memory_budget=budget_mib * 2**20, seed=0)
    assert report.passed and report.plan == "chunked"
    vjps = report.counts["vjp"]
    # held: every row once, and once again for reentrancy (as a dense check makes its
    # Jacobian twice), and the adjoint's probes; else every row once per chunk besides
    assert (2 * n <= vjps < 3 * n) if held else vjps >= 3 * n
    assert ("rows made once and held" in report.coverage["chunked"]) == held


def test_a_compressed_check_of_100000_inputs_stays_within_its_memory_budget():
    # the dense block would be 80 GB, its stacked perturbations 16 times that
    import adcheck.refengine as E
    x = E.tensor(np.random.default_rng(1).uniform(-2, 2, 100_000), dtype=E.float64,
                 requires_grad=True)
    report, peak = _with_peak(lambda: check(E.sin, (x,), precise=True, check_forward_ad=True,
                                            memory_budget=96 * 2**20, seed=0))
    assert report.passed and report.plan == "compressed"
    assert peak < 96 * 2**20, f"peak {peak / 2**20:.1f} MiB"


def _with_peak(run):
    """``run()``'s result and the peak of Python-traced memory while it ran."""
    import tracemalloc
    tracemalloc.start()
    try:
        return run(), tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_compressed_cells_beyond_the_budget_are_chunked_and_stay_within_it():
    # two 40x40 operands: their cells (1,600 rows by 40 groups, per input) held
    # whole with their error estimates, both AD sides and the comparison took
    # 9 MiB; chunked by cell columns the check stays under a 6 MiB budget
    import adcheck.refengine as E
    rng = np.random.default_rng(2)
    a, b = (E.tensor(rng.standard_normal((40, 40)), dtype=E.float64, requires_grad=True)
            for _ in range(2))
    report, peak = _with_peak(lambda: check(E.matmul, (a, b), precise=True,
                                            check_forward_ad=True, memory_budget=6 * 2**20,
                                            seed=0))
    assert report.passed and report.plan == "compressed", report.message()
    assert "chunks of cell columns" in report.coverage["compressed"]
    assert peak < 6 * 2**20, f"peak {peak / 2**20:.2f} MiB"


@pytest.mark.parametrize("bug", [None, "no-cross", "entry", "extra", "jvp-entry"])
def test_chunked_and_whole_compressed_checks_find_the_same(E, bug, monkeypatch):
    # the softmax of test_gradcheck_compressed: the same verdicts, failing
    # entries and diagnoses whether its cells are held whole or declared
    # beyond the budget and compared 5 cell columns at a time
    from test_gradcheck_compressed import _input, softmax_function
    f = softmax_function(E, bug, **({"where": (30, 20), "size": 1e-2} if bug == "jvp-entry"
                                    else {}))
    options = dict(precise=True, check_forward_ad=True, seed=3, jacobian="compressed")
    whole = check(f, (_input(E),), **options)
    monkeypatch.setattr(budget, "CELL_COPIES", 2**40)
    monkeypatch.setattr(streamed, "_width", lambda ev, in_idx: 10)  # halved: 5
    chunks = check(f, (_input(E),), **options)
    assert "chunks of cell columns" in chunks.coverage["compressed"]
    assert "compressed" not in whole.coverage
    # (the adjoint identity is drawn in other coordinates: input coordinates
    # chunked, cells whole; each may see a small error the other misses)
    assert [v for v in _verdicts(chunks) if v[0] != "adjoint"] == \
        [v for v in _verdicts(whole) if v[0] != "adjoint"]
    assert chunks.passed == (bug is None)
    sides = [[r for r in report.failures if r.check in ("reverse", "forward")]
             for report in (chunks, whole)]
    for mine, theirs in zip(*sides):
        assert (mine.check, mine.where) == (theirs.check, theirs.where)
        assert mine.diagnosis == theirs.diagnosis


def test_one_comparison_counted_for_two_tallies_is_each_ones_own():
    # a block whose reverse and forward mode entries are equal bit for bit is
    # compared once for both (Tally.add(also=...)): each tally must end as
    # if it had compared the block itself, failures and diagnosis counts included
    from adcheck.gradcheck.verdict.compare import Tally
    rng = np.random.default_rng(0)
    expected = np.asfortranarray(rng.uniform(-1, 1, (300, 40)))
    actual = expected.copy(order="F")
    actual[7, 3] += 1e-3
    actual[250, 31] = np.nan
    base = np.asfortranarray(np.abs(expected) * 1e-8)
    alone, first, second = Tally(1e-15), Tally(1e-15), Tally(1e-15)
    for a, b in ((0, 17), (17, 40)):
        alone.add(expected[:, a:b], actual[:, a:b], base[:, a:b], 0, a)
        first.add(expected[:, a:b], actual[:, a:b], base[:, a:b], 0, a, also=[second])
    for tally in (first, second):
        mine, theirs = tally.result("c", "m", "n", 0, 0), alone.result("c", "m", "n", 0, 0)
        assert (mine.passed, mine.max_error, mine.where) == (theirs.passed, theirs.max_error,
                                                            theirs.where)
        assert not mine.passed and mine.where == (250, 31)
        assert tally.counts == alone.counts and tally.counts["wrong"] == 2
        np.testing.assert_array_equal(tally.sums, alone.sums)
        assert tally.candidates == alone.candidates and tally.first == alone.first == (7, 3)
