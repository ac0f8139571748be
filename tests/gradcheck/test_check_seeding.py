"""A check's generator comes from its seed through SplitMix64 words, and a
seed repeats the check's draws."""
import numpy as np
import pytest

import adcheck.refengine as E
from adcheck.gradcheck import check
from adcheck.gradcheck.core.seeding import _SplitMix, check_rng


def test_the_words_are_splitmix64s_published_outputs():
    # the first outputs of SplitMix64 from state 0 (Vigna's reference
    # splitmix64.c), written here as published, not computed
    words = _SplitMix(0).generate_state(3, np.uint64)
    assert [int(w) for w in words] == [0xE220A8397B1DCDAF, 0x6E789E6AA1B965F4,
                                       0x06C45D188009454F]


def test_narrow_words_are_the_wide_ones_halves():
    wide = _SplitMix(12345).generate_state(2, np.uint64)
    narrow = _SplitMix(12345).generate_state(3, np.uint32)
    assert narrow.dtype == np.uint32 and narrow.size == 3
    assert [int(w) for w in narrow] == [int(wide[0]) & 0xFFFFFFFF, int(wide[0]) >> 32,
                                        int(wide[1]) & 0xFFFFFFFF]


def test_a_seed_repeats_its_draws_and_neighbours_differ():
    first = check_rng(7).standard_normal(8)
    assert np.array_equal(first, check_rng(7).standard_normal(8))
    assert not np.array_equal(first, check_rng(8).standard_normal(8))
    # neighbouring seeds give uncorrelated streams, not shifted copies
    a, b = check_rng(100).standard_normal(4000), check_rng(101).standard_normal(4000)
    assert abs(np.corrcoef(a, b)[0, 1]) < 0.06
    assert not np.isin(a[:50], b).any()


@pytest.mark.parametrize("seed", [-1, 1.5, "3", True])
def test_a_seed_that_is_no_integer_at_least_zero_is_refused_by_name(seed):
    x = E.randn(3, dtype=E.float64, requires_grad=True)
    with pytest.raises(ValueError, match="seed must be an integer >= 0"):
        check(E.sin, (x,), seed=seed, explore=False)


def test_a_reports_seed_repeats_the_check():
    # fast mode's scalars v^T J u are made of the seed's random u and v
    x = E.randn(4, dtype=E.float64, requires_grad=True)
    first = check(E.exp, (x,), fast_mode=True, explore=False)
    again = check(E.exp, (x,), fast_mode=True, explore=False, seed=first.seed)
    other = check(E.exp, (x,), fast_mode=True, explore=False, seed=first.seed + 1)
    for mode in ("numerical", "fast-reverse"):
        block = first.jacobians[mode].blocks[0, 0]
        assert np.array_equal(block, again.jacobians[mode].blocks[0, 0])
        assert not np.array_equal(block, other.jacobians[mode].blocks[0, 0])
