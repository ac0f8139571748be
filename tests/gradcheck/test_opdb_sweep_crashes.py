"""Two crashes the whole-op_db sweep found (674 errors in 21 minutes): a probed
check of an empty input divided by zero sizing its Richardson groups (acos
sample 1), and the diagnosis of a NaN in a window of a larger block indexed
the window with the whole block's coordinates (logcumsumexp fwgrad_bwgrad)."""
import numpy as np
import pytest

from adcheck.gradcheck.verdict.diagnosis import diagnose


def test_a_nan_in_a_window_is_named_in_the_whole_block():
    e = np.zeros((4, 6))
    a = np.zeros((4, 6))
    a[1, 2] = np.nan
    text = diagnose(e, a, np.full((4, 6), 1e-9), "forward", False, False,
                    origin=(100, 30), whole=False)
    assert "first at [101, 32]" in text and "NaN" in text


@pytest.mark.parametrize("order", [1, 2])
def test_a_probed_check_of_an_empty_input_gives_a_verdict(order):
    torch = pytest.importorskip("torch", reason="op_db's empty sample is a torch tensor; "
                                "torch is not installed")
    from adcheck import gradcheck
    x = torch.empty(0, dtype=torch.float64, requires_grad=True)
    report = gradcheck.check(torch.acos, (x,), precise=True, seed=0, order=order,
                             jacobian="probed", probes=4)
    assert report.passed   # nothing to be wrong about, and no ZeroDivisionError
