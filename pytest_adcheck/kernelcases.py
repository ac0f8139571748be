"""``@pytest.mark.adcheck_kernel``: kernels judged against a reference, as test items.

A kernel author marks a test::

    @pytest.mark.adcheck_kernel(fused_rms, against=rms_reference,
                                inputs="randn(4, 16); rand(16) + 0.5",
                                dtypes=("bfloat16", "float16", "float32"))
    def test_fused_rms(adcheck_kernel):
        adcheck_kernel.assert_passes()

and gets one item per kernel, dtype and comparison (``value``, ``reverse``,
``forward``; with ``order=2`` also ``gradgrad`` and ``fwgrad_bwgrad``), with
ids such as ``test_fused_rms[fused_rms-bfloat16-reverse]``. The check is
``gradcheck.kernels.check`` (the one ``adcheck check --against`` and
``assert_gradients(against=)`` run), made once per kernel and dtype and shared
by that kernel's items; an item fails with ``kernels.summary`` of its own
comparisons. A comparison the kernel cannot have (a jvp it does not define)
is skipped with the check's note as the reason, as is every item of a
``device`` this machine does not have.

Keywords: ``against`` (required: the reference, a function of ordinary torch
ops run in float64), ``inputs`` (an ``adcheck check --inputs`` spec, its
floating inputs made in each dtype, or a callable ``inputs(dtype)`` returning
the tensors), ``dtypes`` (default bfloat16, float16, float32), ``checks`` (a
subset of the comparisons; a second-order one asks for ``order=2``),
``order``, ``fused``, ``repeats``, ``device``, ``seed`` (of the spec's random
inputs). Several kernels in one marker share its reference and inputs; markers
stack. Like the plugin, this module imports only pytest (and the plugin's own
``threads``, which imports nothing more) at load time.
"""
from __future__ import annotations

import pytest

from pytest_adcheck.threads import checking

MARKER = "adcheck_kernel"
CASE_ARG = "adcheck_kernel"
HELP = (f"{MARKER}(*kernels, against, inputs, dtypes=('bfloat16', 'float16', 'float32'), "
        "checks=None, order=1, fused=None, repeats=3, device=None, seed=0): one test per "
        "kernel, dtype and comparison (value, reverse, forward; gradgrad and fwgrad_bwgrad "
        "with order=2), each kernel judged against the float64 reference `against` as "
        "`adcheck check --against` does (docs/kernels.md); the test takes an "
        "`adcheck_kernel` argument and calls adcheck_kernel.assert_passes().")
KEYWORDS = ("against", "inputs", "dtypes", "checks", "order", "fused", "repeats", "device",
            "seed")
FIRST = ("value", "reverse", "forward")
SECOND = ("gradgrad", "fwgrad_bwgrad")
DTYPES = ("bfloat16", "float16", "float32")


class KernelError(Exception):
    """A marker that cannot be planned: the message says what to fix."""


class Group:
    """One marker's kernel at one dtype: the check, made once for its items."""

    def __init__(self, kernel, dtype: str, options: dict):
        self.kernel, self.dtype, self.options = kernel, dtype, options
        self.report = None
        self.error = None

    def run(self):
        """The ``Report`` (made on the first call), or the ``ValueError``'s text
        of a bad reference or input, as ``(report, error)``."""
        if self.report is None and self.error is None:
            from adcheck.gradcheck import kernels
            from adcheck.gradcheck.errors import GradcheckError
            o = self.options
            try:
                with checking():
                    self.report = kernels.check(
                        self.kernel, _inputs(o["inputs"], self.dtype, o["device"], o["seed"]),
                        against=o["against"], order=o["order"], fused=o["fused"],
                        repeats=o["repeats"], check_forward_ad=o["forward"])
            except (ValueError, TypeError, GradcheckError) as exc:
                self.error = f"{type(exc).__name__}: {exc}"
        return self.report, self.error


class KernelCase:
    """One item: a kernel (``group``) at one dtype, one comparison (``check``)."""

    def __init__(self, group: Group, check: str, name: str):
        self.group, self.check, self.name = group, check, name
        self.id = f"{name}-{group.dtype}-{check}"

    def __repr__(self) -> str:
        return f"KernelCase({self.id})"

    def assert_passes(self):
        """Fail with ``kernels.summary`` of this comparison when it fails, skip
        (with the check's reason) when it was not made; return the report."""
        __tracebackhide__ = True
        device = self.group.options["device"]
        if device is not None and not _available(device):
            pytest.skip(f"device {device!r} is not available on this machine")
        report, error = self.group.run()
        if error is not None:
            pytest.fail(f"{self.name} in {self.group.dtype}: {error}", pytrace=False)
        from adcheck.gradcheck.kernels import verdicts
        if report.settings.get("reference_failed"):
            raise AssertionError(verdicts.summary(report))
        mine = verdicts.selected(report, (self.check,))
        if not any(verdicts.name_of(r) == self.check for r in mine):
            notes = report.coverage.get("kernel", [])
            why = [n for n in notes if "jvp" in n] or notes or ["no such comparison"]
            pytest.skip(f"{self.name} in {self.group.dtype}: {self.check} not judged: "
                        + "; ".join(why))
        if not all(r.passed for r in mine):
            raise AssertionError(verdicts.summary(report, (self.check,)))
        return report


def _available(name: str) -> bool:
    import torch
    try:
        torch.zeros(1, device=torch.device(name))
    except (RuntimeError, TypeError, AssertionError):
        return False
    return True


def _inputs(inputs, dtype_name: str, device, seed: int) -> tuple:
    """The kernel's inputs in ``dtype_name`` on ``device`` (default the CPU)."""
    import torch
    dtype = getattr(torch, dtype_name)
    if callable(inputs):
        made = inputs(dtype)
        made = tuple(made) if isinstance(made, (tuple, list)) else (made,)
    else:
        import numpy as np

        from adcheck.runner.spec import build, parse
        made = tuple(x.to(dtype) if x.is_floating_point() else x
                     for x in build(parse(inputs), "torch", np.random.default_rng(seed)))
    if device is None:
        return made
    return tuple(x.detach().to(device).requires_grad_(x.requires_grad)
                 if isinstance(x, torch.Tensor) and x.is_floating_point() else
                 x.to(device) if isinstance(x, torch.Tensor) else x for x in made)


def _names(value, default: tuple, what: str, allowed: tuple) -> tuple:
    if value is None:
        return default
    items = (value,) if isinstance(value, str) else tuple(value)
    names = tuple(str(v).removeprefix("torch.") for v in items)
    unknown = [n for n in names if n not in allowed]
    if unknown or not names:
        raise KernelError(f"{what}: unknown {', '.join(map(repr, unknown)) or '(none given)'}; "
                          f"choose from {', '.join(allowed)}")
    return names


def _checks(kwargs: dict) -> tuple:
    """``(the comparisons, order)`` the marker asks for."""
    order = kwargs.get("order", 1)
    if order not in (1, 2) or isinstance(order, bool):
        raise KernelError(f"order must be 1 or 2, not {order!r}")
    default = FIRST + (SECOND if order == 2 else ())
    checks = _names(kwargs.get("checks"), default, "checks", FIRST + SECOND)
    return checks, (2 if any(c in SECOND for c in checks) else order)


def _options(marker) -> dict:
    unknown = set(marker.kwargs) - set(KEYWORDS)
    if unknown:
        raise KernelError(f"takes the keywords {', '.join(KEYWORDS)}, not "
                          f"{', '.join(sorted(unknown))}")
    kw = marker.kwargs
    if not marker.args or not all(callable(k) for k in marker.args):
        raise KernelError("give the kernels to judge as positional arguments: "
                          f"@pytest.mark.{MARKER}(my_kernel, against=my_reference, inputs=...)")
    if not callable(kw.get("against")):
        raise KernelError("against= must be the reference: a function of ordinary torch ops "
                          "with the kernel's signature, run in float64 (not an mpmath "
                          "reference)")
    inputs = kw.get("inputs")
    if isinstance(inputs, str):
        from adcheck.runner.spec import SpecError, parse
        try:
            parse(inputs)
        except SpecError as exc:
            raise KernelError(f"inputs: {exc}") from None
    elif not callable(inputs):
        raise KernelError("inputs= must be an 'adcheck check --inputs' spec, such as "
                          "\"randn(4, 16); rand(16) + 0.5\", or a callable inputs(dtype) "
                          "returning the kernel's tensors")
    checks, order = _checks(kw)
    return {"against": kw["against"], "inputs": inputs, "order": order,
            "fused": kw.get("fused"), "repeats": kw.get("repeats", 3),
            "device": kw.get("device"), "seed": kw.get("seed", 0), "checks": checks,
            "forward": "forward" in checks or "fwgrad_bwgrad" in checks,
            "dtypes": _names(kw.get("dtypes"), DTYPES, "dtypes", DTYPES)}


def plan(markers) -> list:
    """The ``KernelCase``s of a test's ``adcheck_kernel`` markers, in order:
    marker, kernel, dtype, comparison (``KernelError`` for a bad marker)."""
    from adcheck.gradcheck.core.problem import function_name
    cases, seen = [], {}
    for marker in markers:
        options = _options(marker)
        for kernel in marker.args:
            name = function_name(kernel)
            seen[name] = seen.get(name, 0) + 1
            if seen[name] > 1:   # the same name twice: ids must differ
                name = f"{name}{seen[name]}"
            for dtype in options["dtypes"]:
                group = Group(kernel, dtype, options)
                cases += [KernelCase(group, check, name) for check in options["checks"]]
    return cases


def parametrize(metafunc) -> None:
    """The ``pytest_generate_tests`` of a test marked ``adcheck_kernel``."""
    where = metafunc.definition.nodeid
    if CASE_ARG not in metafunc.fixturenames:
        pytest.fail(f"{where}: a test marked {MARKER} must take an argument named "
                    f"{CASE_ARG!r}", pytrace=False)
    problem = None
    try:
        cases = plan(metafunc.definition.iter_markers(MARKER))
    except KernelError as exc:
        problem = str(exc)
    if problem is not None:   # outside the except: the report shows no chained traceback
        pytest.fail(f"{where}: {MARKER}: {problem}", pytrace=False)
    metafunc.parametrize(CASE_ARG, cases, ids=[case.id for case in cases])
