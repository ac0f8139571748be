"""gradcheck.core.quiet silences what np.errstate(invalid="ignore") silences, no
more, and puts the caller's error state back."""
import warnings

import numpy as np

from adcheck.gradcheck.core.quiet import quiet, restore


def _warns(op) -> bool:
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        op()
    return bool(seen)


def _invalid():
    return np.array([np.inf]) - np.array([np.inf])


def _divide():
    return np.array([1.0]) / np.array([0.0])


def test_invalid_operations_are_silenced_and_division_by_zero_is_not():
    token = quiet()
    try:
        assert not _warns(_invalid)
        assert _warns(_divide)
    finally:
        restore(token)
    assert _warns(_invalid)


def test_the_callers_own_settings_are_kept_and_put_back():
    with np.errstate(divide="ignore", over="raise"):
        before = np.geterr()
        token = quiet()
        try:
            assert np.geterr() == {**before, "invalid": "ignore"}
        finally:
            restore(token)
        assert np.geterr() == before
