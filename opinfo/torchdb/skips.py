"""An OpInfo's skips and expected failures, as adcheck known failures.

op_db attaches decorators to the tests that exercise an op: ``skips`` and
``decorators`` hold ``DecorateInfo``s (decorators restricted to a test
class, a test name, a device type, dtypes, and an ``active_if`` flag) and
plain decorators that apply to every test. Of these, the ones that reach
PyTorch's gradient tests on CPU say that a gradient check is skipped or
expected to fail there; each becomes a ``TorchKnownFailure`` on the check
that test runs, named for the torch engine (``torch_reverse`` ...).

A decorator is read by applying it to a probe test and running the probe as
a CPU test would be run: a ``unittest.skip`` marks it, ``expectedFailure``
flags it, device-conditional skips (``onlyCUDA``, ``skipCPUIfNoLapack``)
raise ``SkipTest`` or let it run. So every decorator is judged by what it
does, not by its name. ``toleranceOverride`` and ``precisionOverride`` only
change ``assertEqual``'s tolerances (torch's gradient tests pass none to
gradcheck); they are kept as notes.
"""
from __future__ import annotations

import unittest
from dataclasses import dataclass, field

from adcheck.opinfo.core import KnownFailure

#: PyTorch's gradient tests: the adcheck check each runs, on which variant of the op
GRADIENT_TESTS = {
    "test_fn_grad": ("reverse", "function"),
    "test_fn_gradgrad": ("gradgrad", "function"),
    "test_forward_mode_AD": ("forward", "function"),
    "test_fn_fwgrad_bwgrad": ("fwgrad_bwgrad", "function"),
    "test_inplace_grad": ("reverse", "inplace"),
    "test_inplace_gradgrad": ("gradgrad", "inplace"),
    "test_inplace_forward_mode_AD": ("forward", "inplace"),
}

#: the test classes that hold them (``TestGradients`` held all of them before torch 2.0)
TEST_CLASSES = {
    "TestBwdGradients": ("test_fn_grad", "test_fn_gradgrad", "test_inplace_grad",
                         "test_inplace_gradgrad"),
    "TestFwdGradients": ("test_forward_mode_AD", "test_fn_fwgrad_bwgrad",
                         "test_inplace_forward_mode_AD"),
    "TestGradients": tuple(GRADIENT_TESTS),
}

#: the device whose tests we mirror
DEVICE = "cpu"


@dataclass(frozen=True)
class TorchKnownFailure(KnownFailure):
    """A known failure taken from op_db: ``kind`` is ``"skip"`` (torch does not
    run the test) or ``"xfail"`` (torch expects it to fail); ``tests`` names
    the PyTorch tests it came from; ``variant`` is ``"function"`` or ``"inplace"``."""

    kind: str = "skip"
    tests: tuple = ()
    variant: str = "function"


@dataclass(frozen=True)
class Effect:
    """What one decorator does to a CPU test: ``kind`` is ``"skip"``,
    ``"xfail"``, ``"slow"`` (runs only in PyTorch's slow-test job), ``"none"``
    or ``"unrecognised"``; ``reason`` its text; ``tolerances`` the
    ``assertEqual`` overrides it declares (dtype: (atol, rtol))."""

    kind: str
    reason: str = ""
    tolerances: dict = field(default_factory=dict)


class _ProbeTest:
    """Stands in for the test instance a decorated test receives on CPU."""

    device_type = DEVICE
    precision = 0.0
    rel_tol = 0.0
    bypass_device_restrictions = False

    def skipTest(self, reason):  # noqa: N802 - unittest's name
        raise unittest.SkipTest(reason)


def _override_tolerances(probe) -> dict:
    found = {}
    for dtype, value in (getattr(probe, "precision_overrides", None) or {}).items():
        found[dtype] = (float(value), 0.0)
    for dtype, value in (getattr(probe, "tolerance_overrides", None) or {}).items():
        found[dtype] = (float(value.atol), float(value.rtol))
    return found


def interpret(decorator) -> Effect:
    """Apply ``decorator`` to a probe test and run it as a CPU test would run."""
    from torch.testing._internal.common_utils import slowTest

    def probe(self, device, dtype, op):
        return "ran"

    if decorator is slowTest:
        return Effect("slow", "runs only in PyTorch's slow-test job")
    try:
        decorated = decorator(probe)
    except Exception as exc:  # noqa: BLE001 - any decorator of any torch version
        return Effect("unrecognised", f"{_name(decorator)} raised {type(exc).__name__}: {exc}")
    tolerances = _override_tolerances(probe) or _override_tolerances(decorated)
    if getattr(decorated, "__unittest_expecting_failure__", False):
        return Effect("xfail", "", tolerances)
    if getattr(decorated, "__unittest_skip__", False):
        return Effect("skip", str(getattr(decorated, "__unittest_skip_why__", "")), tolerances)
    if not callable(decorated):
        return Effect("unrecognised", f"{_name(decorator)} did not return a test")
    import torch
    try:
        decorated(_ProbeTest(), DEVICE, torch.float64, None)
    except unittest.SkipTest as exc:
        return Effect("skip", str(exc), tolerances)
    except Exception as exc:  # noqa: BLE001
        return Effect("unrecognised", f"{_name(decorator)} raised {type(exc).__name__}: {exc}")
    return Effect("none", "", tolerances)


def _name(decorator) -> str:
    return getattr(decorator, "__qualname__", type(decorator).__qualname__)


def _tests_of(info) -> tuple:
    """The gradient tests a ``DecorateInfo`` (or a plain decorator) reaches on CPU."""
    if not hasattr(info, "cls_name"):
        return tuple(GRADIENT_TESTS)
    if info.device_type not in (None, DEVICE):
        return ()
    if info.cls_name is not None and info.cls_name not in TEST_CLASSES:
        return ()
    tests = TEST_CLASSES.get(info.cls_name, tuple(GRADIENT_TESTS))
    if info.test_name is not None:
        tests = tuple(t for t in tests if t == info.test_name)
    return tests


def _active(info, op) -> bool:
    flag = getattr(info, "active_if", True)
    if callable(flag):
        try:
            return bool(flag({"device": DEVICE, "op": op}))
        except Exception:  # noqa: BLE001 - a predicate we cannot evaluate counts as active
            return True
    return bool(flag)


def _reason(effect: Effect, tests: tuple, dtypes) -> str:
    where = ", ".join(tests)
    on = "every dtype" if dtypes is None else ", ".join(str(d).rsplit(".", 1)[-1]
                                                         for d in dtypes)
    if effect.kind == "xfail":
        return f"expected to fail in PyTorch's op_db ({where} on {on})"
    text = effect.reason.strip()
    detail = f": {text}" if text and text not in ("Skipped!", "Skipped") else ""
    return f"skipped by PyTorch's op_db for {where} on {on}{detail}"


@dataclass
class Declared:
    """What op_db's decorators say about one op's gradient tests."""

    known_failures: list = field(default_factory=list)
    tolerances: dict = field(default_factory=dict)    # dtype: (atol, rtol), assertEqual only
    notes: list = field(default_factory=list)


def declared(op, variant: str = "function") -> Declared:
    """The known failures, tolerance overrides and notes of ``op``'s gradient
    tests for the ``variant`` (``"function"`` or ``"inplace"``)."""
    out = Declared()
    for info in op.decorators:
        tests = tuple(t for t in _tests_of(info) if GRADIENT_TESTS[t][1] == variant)
        if not tests or not _active(info, op):
            continue
        dtypes = getattr(info, "dtypes", None)
        dtypes = None if dtypes is None else tuple(dtypes)
        decorators = info.decorators if hasattr(info, "cls_name") else [info]
        for decorator in decorators:
            effect = interpret(decorator)
            for dtype, tol in effect.tolerances.items():
                out.tolerances[dtype] = tol
            if effect.kind in ("slow", "unrecognised"):
                out.notes.append(f"{', '.join(tests)}: {effect.kind}: {effect.reason}")
            if effect.kind not in ("skip", "xfail"):
                continue
            by_check: dict = {}
            for test in tests:
                by_check.setdefault(GRADIENT_TESTS[test][0], []).append(test)
            for check, names in by_check.items():
                out.known_failures.append(TorchKnownFailure(
                    f"torch_{check}", _reason(effect, tuple(names), dtypes), None, dtypes,
                    effect.kind, tuple(names), variant))
    return out
