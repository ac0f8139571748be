"""The torch adapter's ``to_numpy`` resolves conjugate and negative views, widens
the dtypes NumPy lacks exactly, and copies (values written here by hand)."""
from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
from adcheck.gradcheck.engines.torch import TorchEngine  # noqa: E402


def test_to_numpy_resolves_views_and_narrow_dtypes():
    E = TorchEngine()
    z = torch.tensor([1 + 2j, -3 - 4j], dtype=torch.complex128)
    assert np.array_equal(E.to_numpy(z.conj()), np.array([1 - 2j, -3 + 4j]))
    assert np.array_equal(E.to_numpy(torch._neg_view(z)), np.array([-1 - 2j, 3 + 4j]))
    b = torch.tensor([1.5, -2.25], dtype=torch.bfloat16, requires_grad=True)
    got = E.to_numpy(b * 1)
    assert got.dtype == np.float32 and np.array_equal(got, np.array([1.5, -2.25], np.float32))


def test_to_numpy_copies_unless_asked_not_to():
    t = torch.tensor([1.0, 2.0], dtype=torch.float64)
    copied = TorchEngine().to_numpy(t)
    copied[0] = 9.0
    assert t[0].item() == 1.0
    shared = TorchEngine().to_numpy(t, copy=False)
    shared[1] = 7.0
    assert t[1].item() == 7.0
