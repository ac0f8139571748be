"""``assert_gradients``: one gradient check as a pytest assertion.

The check is ``gradcheck.check``; the failure message is the ``Report``'s
own text (``Report.message()``), followed by the seed that repeats the run.
gradcheck is imported on the first call, not when pytest loads the plugin.
"""
from __future__ import annotations

from pytest_adcheck.threads import checking


def failure_text(report) -> str:
    """The message of a failed check: the report's text and its seed."""
    return (f"{report.message()}\n"
            f"  (pass seed={report.seed} to repeat this run's random probes)")


def assert_gradients(func, inputs, **options):
    """Assert that the derivatives of ``func`` at ``inputs`` are right.

    ``func`` and ``inputs`` are what ``gradcheck.check`` takes: a
    ``Function.apply`` (refengine or torch) or a plain function of tensors,
    and a tensor or a tuple of tensors, those to check requiring grad.
    ``options`` are ``check``'s keywords, with their meaning
    (``check_forward_ad=True``, ``atol``, ``rtol``, ``fast_mode=True``,
    ``seed``, ``name`` ...). Three defaults are the command line's, not
    ``check``'s: ``precise=True`` (tolerances from an error estimate, which
    catch small formula errors that torch's fixed ones let through); forward
    mode too where the function has a forward rule (``check_forward_ad``
    given decides); and, unless ``order`` is given, the second derivatives
    are checked too (``order=2``) where the function has a double backward: a
    backward that builds no graph, or cannot (NumPy inside), is not checked
    at second order (``order=1`` checks the first derivatives only).

    With ``against=ref`` (a function of ordinary torch ops, run in float64),
    ``func`` is a low-precision kernel judged by ``gradcheck.kernels.check``
    instead (its keywords: ``name``, ``repeats``, ``check_forward_ad``,
    ``memory_budget``); the message is ``kernels.summary``'s.

    Returns the ``Report`` when every check passes. Otherwise raises
    ``AssertionError`` whose message is the report's text: each failing
    (output, input) pair with its largest error, where it is and the
    diagnosis, then both Jacobians of the first failing pair, then the seed
    that repeats the run. A call that cannot be checked raises gradcheck's
    ``ValueError``, and an exception raised by ``func`` or its derivative
    formulas surfaces as ``GradcheckError``, as from ``gradcheck.check``.

    Example::

        from pytest_adcheck import assert_gradients

        def test_my_sin():
            assert_gradients(MySin.apply, E.randn(3, dtype=E.float64, requires_grad=True))
    """
    __tracebackhide__ = True
    with checking():
        return _asserted(func, inputs, options)


def _asserted(func, inputs, options: dict):
    __tracebackhide__ = True
    if "against" in options:   # a kernel judged by its float64 reference
        from adcheck.gradcheck import kernels
        report = kernels.check(func, inputs, **options)
        if not report.passed:
            raise AssertionError(kernels.summary(report))
        return report
    from adcheck import gradcheck
    options = {"precise": True, **options}
    report = _first_order(gradcheck, func, inputs, options)
    if not report.passed:
        raise AssertionError(failure_text(report))
    if "order" not in options:
        second = _second_order(gradcheck, func, inputs, options)
        if second is not None and not second.passed:
            raise AssertionError(failure_text(second))
    return report


def _first_order(gradcheck, func, inputs, options):
    """``check``'s report, with forward mode unless ``options`` say otherwise
    or the function has no forward rule (a Function without ``jvp``)."""
    if "check_forward_ad" in options:
        return gradcheck.check(func, inputs, **options)
    from adcheck.gradcheck.errors import GradcheckError
    from adcheck.runner.target import no_forward_rule
    try:
        return gradcheck.check(func, inputs, **options, check_forward_ad=True)
    except GradcheckError as exc:
        if no_forward_rule(exc) is None:
            raise
    return gradcheck.check(func, inputs, **options)


def _second_order(gradcheck, func, inputs, options):
    """The ``order=2`` report of ``func``, or ``None`` where the function has no
    double backward (its backward builds no graph of the inputs, or raises when
    asked to) or no input whose gradient depends on one."""
    from adcheck.gradcheck.api import lacks_double_backward
    from adcheck.gradcheck.errors import GradcheckError, NoDoubleBackward
    try:
        report = gradcheck.check(func, inputs, **options, order=2)
    except GradcheckError as exc:
        if isinstance(exc.__cause__, NoDoubleBackward):
            return None
        raise
    except ValueError:   # UncheckableError: nothing to check at second order
        return None
    return None if lacks_double_backward(report) else report
