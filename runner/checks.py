"""Running the checks of one sample: the one place a check becomes a result.

A *subject* is what one sample gives gradcheck: a sample of a registry op
(``OpSubject``) or an input set of a user's object (``TargetSubject``). It says
what gradcheck calls, why a check does not apply, which keywords a check means
for it (``gradcheck.core.modes``), its seed and its declared known failure.
``run_checks`` runs every requested check on one subject, one ``CheckResult``
per check (or one "setup" error); ``check_sample`` is that for a registry op.

Seeds derive from the base seed, the op, dtype, sample and check
(``derive_seed``), so every process and every ``--jobs`` gives the same run.
"""
from __future__ import annotations

import hashlib
import time
from types import SimpleNamespace

from adcheck.gradcheck.core.modes import CHECK_NAMES, CHECKS, DEFAULT_CHECKS, check_named  # noqa: F401
from adcheck.gradcheck.core.options import Options
from adcheck.gradcheck.core.reuse import shared
from adcheck.gradcheck.explore.quick import sharing
from adcheck.runner.policy import USERS, Policy, check_options, options  # noqa: F401
from adcheck.gradcheck.errors import NoDoubleBackward
from adcheck.runner.judgement import cannot_judge, overflow_only, overflow_reason
from adcheck.runner.results import DECLARED, JACOBIAN_PAIRS, STALE, TASK_CHECK, CheckResult


#: what the code under check may raise that is its fault, not the run's: any
#: ``Exception``, and ``SystemExit`` (``sys.exit`` must not end the run, nor pass)
FAULTS = (Exception, SystemExit)


def fault_text(exc: BaseException) -> str:
    """One line naming what the code under check raised."""
    if isinstance(exc, SystemExit):
        code = "" if exc.code is None else repr(exc.code)
        return f"SystemExit: the code under check called sys.exit({code})"
    return f"{type(exc).__name__}: {' '.join(str(exc).split())}"


def no_double_backward(name: str, check: str, exc: BaseException) -> str | None:
    """Why a second-order check that raised ``exc`` does not apply: the backward
    cannot build a graph (NumPy inside, torch.compile's): a choice."""
    cause = exc.__cause__
    if CHECKS[check].order != 2 or not isinstance(cause, NoDoubleBackward):
        return None
    why = cause.reason or (f"its backward raised {fault_text(cause.__cause__)} when asked to "
                           "build a graph")
    return f"second order not checked: {name} has no double backward ({why})"


def builds_no_graph(name: str, check: str, report) -> str | None:
    """Why a failed second-order ``report`` does not apply: the backward builds no graph."""
    from adcheck.gradcheck.api import lacks_double_backward
    if CHECKS[check].order != 2 or not lacks_double_backward(report):
        return None
    return f"second order not checked: {name} has no double backward"


def derive_seed(base: int, *parts) -> int:
    """A seed for one check, stable across runs, platforms and ``--jobs``."""
    text = ":".join(str(p) for p in (base, *parts))
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "little") >> 1


class Subject:
    """What ``run_checks`` asks of what it checks, beyond ``call``, ``skip_reason``,
    ``keywords`` and ``seed``: each hook with its default (none applies)."""

    def unsupported(self, message: str, exc: BaseException | None = None) -> str | None:
        """Why an error means the code does not run in this dtype (a skip), or ``None``."""
        return None

    def fault_skip(self, check: str, exc: BaseException) -> str | None:
        """Why a check that raised ``exc`` does not apply (a skip), or ``None``."""
        return None

    def missing_derivative(self, message: str) -> str | None:
        """The failure a check's error ``message`` is (a derivative declared but
        missing), or ``None``."""
        return None

    def confirm_error(self, check: str, call, message: str) -> str | None:
        """The failure a check's error is when the code raises the same on its own,
        or ``None``."""
        return None

    def dispute(self, check: str, call, report) -> str | None:
        """Another verdict on a failed check, or ``None``."""
        return None

    def known_failure(self, check: str):
        """The ``KnownFailure`` declared for this check, or ``None``."""
        return None

    def failure_skip(self, check: str, report) -> str | None:
        """Why a failed check does not apply to this subject (a skip), or ``None``."""
        return None


class OpSubject(Subject):
    """One sample of a registry op, in one dtype, on one engine."""

    def __init__(self, registry, info, sample, dtype, engine: str,
                 planned: frozenset = frozenset()):
        from adcheck.runner.registry import CastDtype, dtype_name, source_dtype
        self.registry, self.info, self.sample = registry, info, sample
        #: the ``(op, dtype)`` pairs the run checks in full (``Settings.planned``)
        self.planned = planned
        #: the dtype the op is asked about; ``cast``: the torch-only dtype checked
        self.dtype = source_dtype(dtype)
        self.cast = dtype if isinstance(dtype, CastDtype) else None
        self.engine = engine
        self.name, self.family, self.index = info.name, info.family, sample.index
        self.dtype_name = dtype_name(dtype)
        self.dtype_name_source = dtype_name(self.dtype)
        self.sample_name = sample.name or repr(sample)

    def call(self):
        """``(call, problem)``: the call, and why the sample cannot be checked (a NaN
        output the reference does not have) or ``None``. Raises what the op raises."""
        cast = {} if self.cast is None else {"dtype": self.cast}
        call = self.registry.call(self.info, self.sample, self.engine, **cast)
        return call, (call.nan_outputs() if call.inputs else None)

    def unsupported(self, message: str, exc: BaseException | None = None) -> str | None:
        """Why an error means the op does not run in this dtype, else ``None``:
        ``exc``, raised by the op's forward, is one the registry calls a missing
        kernel (``unsupported_forward``); or, for a torch-only dtype, torch has
        no kernel for the op in it (``no_kernel``). ``message`` alone never
        decides: a derivative that raises where the forward runs is an error."""
        if exc is not None:
            reason = self.registry.unsupported_forward(exc, self.dtype)
            if reason is not None:
                return reason
        return None if self.cast is None else self.no_kernel()

    def no_kernel(self) -> str | None:
        """For a torch-only dtype: why torch has no kernel for the op in it, found
        by running the forward on the sample cast to it (it raises) and on the
        sample as made (it runs); ``None`` when the forward runs in the dtype or
        fails in both. Run once per subject, and only after an error."""
        if not hasattr(self, "_no_kernel"):
            cast = _forward_fault(self.registry, self.info, self.sample, self.engine, self.cast)
            wide = None if cast is None else _forward_fault(self.registry, self.info,
                                                            self.sample, self.engine)
            self._no_kernel = None if cast is None or wide is not None else (
                f"torch runs this op not in {self.cast.name} on CPU (no kernel): its forward "
                f"raises {fault_text(cast)} in {self.cast.name}, and runs in "
                f"{self.dtype_name_source}")
        return self._no_kernel

    def missing_derivative(self, message: str) -> str | None:
        """The failure an error ``message`` of a check is, when the registry says
        it is a derivative that does not run in this dtype, else ``None``."""
        return self.registry.unsupported_derivative(message, self.dtype)

    def skip_reason(self, check: str, call) -> str | None:
        if not call.inputs:
            return "no input of this sample requires grad"
        capability = CHECKS[check].capability
        if not self.info.supports(capability, self.dtype):
            return f"{DECLARED}{capability} mode on {self.dtype}"
        reason = self.registry.skip_reason(self.info, self.dtype, check)
        if reason is not None:
            return reason
        if check == "reference":
            if self.info.mpmath_ref is None:
                return "the op has no mpmath reference"
            if not call.has_plain_output():
                return "the sample post-processes the output, which the reference cannot follow"
        return None

    def keywords(self, check: str, policy: Policy, call) -> dict:
        own = self.registry.check_keywords(self.info, check, self.dtype, policy.precise)
        if own is not None:
            return own
        keywords = options(check, policy, self.info.tolerance(self.dtype),
                           self.info.supports("forward", self.dtype), call.reference)
        if not getattr(self.info, "check_detached", True):  # a registry whose ops declare
            keywords["check_detached"] = False              # outputs non-differentiable
        twin = self.twin(check)
        if twin is not None:
            keywords["same_as"] = twin
        return keywords

    def twin(self, check: str):
        """The function an in-place variant's derivatives are compared with
        (``gradcheck.core.sameas``) when the run also checks its op in full in
        this dtype (``planned``) and the op has no known failure for the check on
        this sample: the op's own call of the sample. Else ``None``."""
        base = getattr(self.info, "variant_of", None)
        if base is None or self.cast is not None or (base, self.dtype_name) not in self.planned \
                or CHECKS[check].ad == "fast":   # (fast mode has no expected Jacobian)
            return None
        if not hasattr(self, "_twin"):
            self._twin = _twin_of(self.registry, base, self.sample, self.engine)
        if self._twin is None:
            return None
        info, func = self._twin
        name = CHECKS[check].known_as
        known = info.known_failure(f"torch_{name}" if self.engine == "torch" else name,
                                   self.dtype, self.sample)
        return func if known is None and info.supports(CHECKS[check].capability,
                                                       self.dtype) else None

    def seed(self, base: int, check: str) -> int:
        # (a registry may have checks share a seed, the same grad_outputs: core.reuse)
        check = self.registry.seed_checks.get(check, check)
        return derive_seed(base, self.name, self.dtype_name, self.index, check)

    def confirm_error(self, check: str, call, message: str) -> str | None:
        return self.registry.confirm_error(self.info, self.sample, call, self.dtype, check,
                                           message)

    def dispute(self, check: str, call, report) -> str | None:
        return self.registry.dispute(self.info, self.sample, call, self.dtype, check, report)

    def known_failure(self, check: str):
        name = CHECKS[check].known_as
        if self.engine == "torch":
            # torch's own formulas: only failures declared against torch apply
            return self.info.known_failure(f"torch_{name}", self.dtype, self.sample)
        return self.info.known_failure(name, self.dtype, self.sample)


def _twin_of(registry, base: str, sample, engine: str):
    """``(info, function)`` of op ``base`` called on a variant's ``sample``, or
    ``None`` when it cannot make that call (a variant declared of an op whose
    samples differ): the variant is then checked by differences."""
    try:
        info = registry.get(base)
        call = registry.call(info, sample, engine)
    except FAULTS:
        return None

    def op(*args):
        return call.func(*args)
    op.__name__ = op.__qualname__ = base   # (reports name the op it is compared with)
    return info, op


def _forward_fault(registry, info, sample, engine: str, cast=None) -> BaseException | None:
    """What the op's forward raises on ``sample`` (cast to the torch-only dtype
    ``cast``, if given), without recording a graph; ``None`` when it runs."""
    import torch
    try:
        call = registry.call(info, sample, engine, **({} if cast is None else {"dtype": cast}))
        with torch.no_grad():
            call.func(*call.inputs)
    except FAULTS as exc:
        return exc
    return None


class TargetSubject(Subject):
    """One input set of a user's object (``adcheck check MODULE:OBJECT``).

    A module is checked in its inputs and its parameters, each named; when
    the floating inputs are in double precision (or there is none: integer
    indices), so are the parameters (copies of them: a layer built in float32
    is checked in float64)."""

    def __init__(self, target, inputs: tuple, spec: str, index: int, dtype_name: str):
        self.target, self.inputs = target, inputs
        self.name, self.family, self.index = target.name, target.kind, index
        self.dtype_name, self.sample_name = dtype_name, spec

    def call(self):
        if not self.target.kind.endswith("Module"):
            return SimpleNamespace(func=self.target.func, inputs=self.inputs, reference=None,
                                   names=None), None
        from adcheck.gradcheck.core.modules import doubles_parameters, module_function
        flat = module_function(self.target.func, self.inputs,
                               double=doubles_parameters(self.inputs))
        return SimpleNamespace(func=flat.func, inputs=flat.inputs, reference=None,
                               names=flat.names), None

    def skip_reason(self, check: str, call) -> str | None:
        if CHECKS[check].ad == "forward" and not self.target.has_jvp:
            return "the target defines no jvp"
        if CHECKS[check].against == "reference":
            return "a user function has no mpmath reference"
        return None

    def fault_skip(self, check: str, exc: BaseException) -> str | None:
        """Forward mode through a module whose code has no jvp (as a Function
        without one), or ``no_double_backward``'s skip; else ``None``."""
        cause = exc.__cause__
        if self.target.kind.endswith("Module") and CHECKS[check].ad == "forward" \
                and isinstance(cause, NotImplementedError):
            return f"forward mode does not run through the module ({fault_text(cause)})"
        return no_double_backward(self.name, check, exc)

    def failure_skip(self, check: str, report) -> str | None:
        return builds_no_graph(self.name, check, report)

    def keywords(self, check: str, policy: Policy, call) -> dict:
        named = {} if call.names is None else {"input_names": call.names}
        return {**options(check, policy, None, self.target.has_jvp), **named, **USERS}

    def seed(self, base: int, check: str) -> int:
        return derive_seed(base, self.target.spec, self.index, check)


def run_checks(subject, checks: tuple, policy: Policy, keep_reports: bool = False,
               finished: list | None = None) -> list:
    """Every check of ``checks`` on one subject: ``[(CheckResult, Report or None)]``
    (reports only with ``keep_reports``; each put in ``finished`` as it ends, so that
    a timeout keeps them), or one "setup" error when the sample cannot be run."""
    base = CheckResult(subject.name, subject.dtype_name, subject.index, TASK_CHECK, "error",
                       family=subject.family, sample_name=subject.sample_name)
    unsupported = subject.unsupported
    try:
        call, problem = subject.call()
    except FAULTS as exc:  # the op itself raised
        base.message = f"the op raised {fault_text(exc)}"
        problem = unsupported(base.message, exc)
        if problem is None:
            return [(base, None)]
        return [(_skipped(subject, check, problem), None) for check in checks]
    if problem is not None:
        base.message = problem
        return [(base, None)]
    done = [] if finished is None else finished
    with shared(), sharing():   # (one pure call: its checks share Jacobians and screens)
        for check in checks:
            done.append(_one_check(subject, check, policy, call, base, unsupported, keep_reports))
    return done


def _one_check(subject, check: str, policy: Policy, call, base, unsupported,
               keep_reports: bool) -> tuple:
    """``(CheckResult, Report or None)`` of one check of ``run_checks``."""
    reason = subject.skip_reason(check, call)
    if reason is not None:
        return _skipped(subject, check, reason), None
    chosen = check_options(subject, check, policy, call)
    result, report = run_check(call.func, call.inputs, check, chosen, base,
                               subject.known_failure(check),
                               lambda exc: subject.fault_skip(check, exc))
    no_kernel = unsupported(result.message) if result.status == "error" else None
    if no_kernel is not None:   # the forward shows it (a derivative's error stays an error)
        result.status, result.message = "skipped", no_kernel
    if result.status == "failed" and report is not None:
        reason = subject.failure_skip(check, report) or cannot_judge(
            report, subject.dtype_name) or _overflowed(
            subject, call, chosen, report)
        if reason is not None:
            result.status, result.message = "skipped", reason
    missing = subject.missing_derivative(result.message) if result.status == "error" else None
    if missing is not None:
        result.status, result.message = "failed", missing
    confirmed = _confirmed(subject, check, call, result) if result.status == "error" else None
    if confirmed is not None:   # torch's verdict is in the message: no dispute to add
        result.status, result.message = "failed", confirmed
    keep_evidence(result, report)
    if result.status == "failed" and confirmed is None:
        result.dispute = _dispute(subject, check, call, report)
    # (a stale known failure's line says only that: the tally would bury it)
    if result.status == "passed" and not result.stale and report is not None \
            and "explore" in report.counts:
        tried = report.results[-1].detail     # what exploring tried, in JSON too (after what
        result.message = f"{result.message}; {tried}" if result.message else tried  # it said)
    return result, report if keep_reports else None


def _overflowed(subject, call, chosen: Options, report) -> str | None:
    """Why a low-precision check that failed only on AD's NaN or inf where the
    true derivative is finite is no evidence: the same check passes on the same
    values in double precision, so the formula is right and overflows the
    dtype's range; ``None`` when it is not so."""
    if not overflow_only(report, subject.dtype_name):
        return None
    from adcheck.gradcheck.engines import engine_for
    E = engine_for(call.inputs)
    wide = tuple(E.widened(x) if E.is_tensor(x) and E.is_differentiable_dtype(x) else x
                 for x in call.inputs)
    status = _verdict(call.func, wide, chosen)[0]
    return overflow_reason(report, subject.dtype_name) if status == "passed" else None


def _confirmed(subject, check: str, call, result) -> str | None:
    """The failure a check's error is when the registry shows the code under
    check raising the same on its own (``confirm_error``), else ``None``."""
    try:
        return subject.confirm_error(check, call, result.message)
    except FAULTS:  # no confirmation: the error stays the run's
        return None


def _dispute(subject, check: str, call, report) -> str | None:
    """The registry's other verdict on a failed check (``CheckResult.dispute``)."""
    try:
        return subject.dispute(check, call, report)
    except FAULTS as exc:  # the op again, perturbed: its fault, not the run's
        return f"no independent verdict: rerunning the sample raised {fault_text(exc)}"


def _skipped(subject, check: str, reason: str) -> CheckResult:
    return CheckResult(subject.name, subject.dtype_name, subject.index, check, "skipped", reason,
                       family=subject.family, sample_name=subject.sample_name)


def check_sample(info, sample, dtype, settings, keep_reports: bool = False) -> list:
    """Every check of ``settings`` on one sample of a registry op (see ``run_checks``)."""
    # (a caller's own settings object may know nothing of a plan: nothing planned)
    subject = OpSubject(settings.registry, info, sample, dtype, settings.policy.engine,
                        getattr(settings, "planned", frozenset()))
    return run_checks(subject, settings.checks, settings.policy, keep_reports)


def keep_evidence(result: CheckResult, report) -> None:
    """Give a failed ``result`` what the HTML report draws: the Jacobians of
    its first failing pairs."""
    if report is None or not result.failures:
        return
    import numpy as np
    result.jacobians = [(f.expected, f.actual) if np.ndim(f.expected) == np.ndim(f.actual) == 2
                        else None for f in report.failures[:JACOBIAN_PAIRS]]


def _failure_dicts(report) -> list:
    keep = ("check", "mode", "against", "order", "out_idx", "in_idx", "in_name", "max_error",
            "where", "tolerance", "diagnosis", "detail", "origin")
    return [{k: v for k, v in f.to_dict().items() if k in keep} for f in report.failures]


def _first_line(report) -> str:
    from adcheck.gradcheck.verdict.report import describe
    first = report.failures[0]
    line = describe(first, report.name).splitlines()[0]
    at = (first.detail or "").find("at the explored point")
    # a failure found by exploring: the point and its reproducer belong on the line
    return line if at < 0 else f"{line} {first.detail[at:]}"


def _verdict(func, inputs, chosen: Options, fault_skip=None):
    """``(status, message, diagnosis, failures, report)`` of one check run with the options
    ``chosen``; ``fault_skip(exc)``: why a check that raised ``exc`` does not apply, or None."""
    from adcheck.gradcheck.api import run
    from adcheck.gradcheck.errors import UncheckableError
    try:
        report = run(func, inputs, chosen)
    except UncheckableError as exc:  # nothing here can be checked (see check())
        return "skipped", " ".join(str(exc).split()), None, [], None
    except FAULTS as exc:  # anything the code under check raised
        reason = fault_skip(exc) if fault_skip is not None else None
        if reason is not None:
            return "skipped", reason, None, [], None
        return "error", fault_text(exc), None, [], None
    if report.passed:   # (what it was judged by beyond the usual: Report.remark)
        return "passed", getattr(report, "remark", ""), None, [], report
    first = report.failures[0]    # (its diagnosis: another failure's would read as its own)
    return "failed", _first_line(report), first.diagnosis, _failure_dicts(report), report


def run_check(func, inputs, check: str, chosen: Options, base: CheckResult, known=None,
              fault_skip=None):
    """Run one check with the options ``chosen``; return ``(CheckResult, Report or
    None)`` (see ``_verdict`` for ``fault_skip``)."""
    start = time.perf_counter()
    seed = chosen.seed
    status, message, diagnosis, failures, report = _verdict(func, inputs, chosen, fault_skip)
    if known is not None:
        if status == "passed":
            message = f"{STALE} ({known.reason})"
        elif status in ("failed", "error"):
            status, message = "known-failure", f"{known.reason} [{message}]"
    result = CheckResult(base.op, base.dtype, base.sample, check, status, message, diagnosis,
                         time.perf_counter() - start, seed, base.family, base.sample_name,
                         failures, _unbatched(report), *_precision(report),
                         plan=getattr(report, "plan", None),
                         escape=dict(report.escape) if getattr(report, "escape", None) else None)
    return result, report


def _precision(report) -> tuple:
    """``(sentence, resolution)`` of the report's coarsest low-precision
    comparison, or ``(None, None)``."""
    from adcheck.gradcheck.verdict.report import precision_text
    stated = [r.precision for r in getattr(report, "results", ()) if precision_text(r.precision)]
    if not stated:
        return None, None
    coarsest = max(stated, key=lambda p: float("inf") if p.resolution is None else p.resolution)
    return coarsest.text(), coarsest.resolution


def _unbatched(report) -> str | None:
    """Why some of the report's evaluations ran one vector at a time, if any did."""
    batching = getattr(report, "batching", None) or {}
    if batching.get("fallback"):
        return batching["fallback"]
    looped = batching.get("looped_ops")
    if looped:
        names = ", ".join(sorted(looped))
        return f"ops without a batching rule ran once per example inside vmap: {names}"
    return None
