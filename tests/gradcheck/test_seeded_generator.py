"""A check's generator (``gradcheck.core.seeded``) draws what
``np.random.default_rng(seed)`` draws, whether its seed's hashing was kept
from an earlier check or not, and each check gets a generator of its own."""
import numpy as np
import pytest

import adcheck.refengine as E
from adcheck.gradcheck import check
from adcheck.gradcheck.core import seeded

SEEDS = [0, 1, 123, 2**53 - 1, 2**63 + 5, 10**30]


@pytest.fixture
def empty(monkeypatch):
    monkeypatch.setattr(seeded, "_WORDS", {})


@pytest.mark.parametrize("seed", SEEDS)
def test_the_stream_is_default_rngs_first_time_and_kept(empty, seed):
    for _ in range(2):   # (the second time from the kept words)
        ours, numpys = seeded.generator(seed), np.random.default_rng(seed)
        assert ours.bit_generator.state == numpys.bit_generator.state
        np.testing.assert_array_equal(ours.standard_normal(17), numpys.standard_normal(17))
        assert ours.integers(2**63) == numpys.integers(2**63)
    assert seed in seeded._WORDS


def test_each_call_has_a_generator_of_its_own(empty):
    first, second = seeded.generator(7), seeded.generator(7)
    first.standard_normal(1000)   # (moves the first only)
    np.testing.assert_array_equal(second.standard_normal(3),
                                  np.random.default_rng(7).standard_normal(3))


def test_other_seeds_are_seeded_as_numpy_seeds_them(empty):
    for seed in (np.int64(5), [1, 2, 3], np.random.SeedSequence(9)):
        ours = seeded.generator(seed)
        assert ours.bit_generator.state == np.random.default_rng(seed).bit_generator.state
    assert seeded._WORDS == {}   # (only Python ints are kept)
    with pytest.raises(ValueError):
        seeded.generator(-1)   # (numpy's refusal, unchanged)


def test_the_cache_is_bounded(empty, monkeypatch):
    monkeypatch.setattr(seeded, "KEPT_SIZE", 3)
    for seed in range(7):
        seeded.generator(seed)
    assert len(seeded._WORDS) <= 3
    assert seeded.generator(2).bit_generator.state == \
        np.random.default_rng(2).bit_generator.state


def test_kept_words_serve_pcg64_only():
    words = seeded._Words(np.zeros(4, np.uint64))
    with pytest.raises(ValueError):
        words.generate_state(8, np.uint32)   # (another bit generator's request)


def _numbers(report):
    return {name: np.asarray(jac.blocks[key]) for name, jac in report.jacobians.items()
            for key in jac.blocks}


def test_a_check_draws_what_default_rng_draws(empty, monkeypatch):
    """The same fast check with the generator numpy's own seeding makes: every
    projection (they are the random probes' products) identical."""
    x = E.tensor(np.linspace(0.1, 0.9, 6).reshape(2, 3), dtype=E.float64, requires_grad=True)
    ours = [check(E.exp, (x,), fast_mode=True, check_forward_ad=True, seed=31)
            for _ in range(2)]   # (the second from the kept words)
    monkeypatch.setattr(seeded, "generator", np.random.default_rng)
    numpys = check(E.exp, (x,), fast_mode=True, check_forward_ad=True, seed=31)
    for report in ours:
        a, b = _numbers(report), _numbers(numpys)
        assert a.keys() == b.keys() and a
        for key in a:
            np.testing.assert_array_equal(a[key], b[key])


def test_a_fresh_seed_reproduces_its_check(empty):
    x = E.tensor(np.linspace(0.1, 0.9, 6), dtype=E.float64, requires_grad=True)
    first = check(E.sin, (x,), fast_mode=True)
    again = check(E.sin, (x,), fast_mode=True, seed=first.seed)
    a, b = _numbers(first), _numbers(again)
    for key in a:
        np.testing.assert_array_equal(a[key], b[key])
