"""What a check's exception becomes in a sweep: only a call gradcheck declares
uncheckable is skipped; any other ValueError (a NumPy error inside adcheck,
say) is an error, so a sweep never exits 0 on a check that did not run."""
import numpy as np

import adcheck.gradcheck.api
import adcheck.refengine as E
from adcheck.gradcheck.core.options import Options
from adcheck.runner.checks import _verdict

SIN = Options(seed=0, name="sin")


def _inputs():
    return (E.from_numpy(np.linspace(0.1, 0.9, 4)).requires_grad_(),)


def test_no_input_requiring_grad_is_skipped_with_gradchecks_reason():
    status, message, *_ = _verdict(E.sin, (E.from_numpy(np.ones(3)),), SIN)
    assert status == "skipped"
    assert "no input requires grad" in message


def test_a_plain_value_error_inside_the_check_is_an_error(monkeypatch):
    def broken(*args, **kwargs):
        np.max(np.zeros((2, 0)), axis=-1)   # NumPy's ValueError, as a bug of ours would raise
    monkeypatch.setattr(adcheck.gradcheck.api, "run", broken)
    status, message, *_ = _verdict(E.sin, _inputs(), SIN)
    assert status == "error"
    assert "zero-size array" in message


def test_the_same_function_checks_when_nothing_is_broken():
    status, *_ = _verdict(E.sin, _inputs(), SIN)
    assert status == "passed"
