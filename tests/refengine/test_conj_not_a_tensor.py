"""conj of something that is not a tensor is refused as torch refuses it."""
import numpy as np
import pytest

import adcheck.refengine as E


@pytest.mark.parametrize("value", [3.0, 2 + 1j, np.float64(3.0), np.ones(2)])
def test_conj_of_a_non_tensor_is_torchs_type_error(value, torch):
    with pytest.raises(TypeError) as theirs:
        torch.conj(value)
    with pytest.raises(TypeError) as ours:
        E.conj(value)
    assert str(ours.value) == str(theirs.value)


def test_conj_of_tensors_is_unchanged():
    z = E.tensor([1 + 2j, -3j])
    assert np.array_equal(E.conj(z).resolve_conj().numpy(), np.array([1 - 2j, 3j]))
    x = E.tensor([1.5, -2.0])
    assert E.conj(x) is x
