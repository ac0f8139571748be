"""coords.largest_finite: the scale of a block, NaN and inf entries being no scale."""
import numpy as np

from adcheck.gradcheck.core.coords import largest_finite


def test_the_largest_finite_magnitude_ignores_nan_and_inf():
    block = np.array([[1.0, -7.5, np.nan], [np.inf, 2.0, -np.inf]])
    assert largest_finite(block) == 7.5
    np.testing.assert_array_equal(largest_finite(block, axis=1), [7.5, 2.0])
    assert largest_finite(np.array([np.nan, np.inf])) == 0.0
    assert largest_finite(np.zeros((0, 3))) == 0.0
    assert isinstance(largest_finite(block), float)
