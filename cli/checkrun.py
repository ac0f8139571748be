"""Each ``--check`` name as a call of ``gradcheck.check``, and its outcome as a
``CheckResult``. The checking itself is gradcheck's; this module only says
which keywords a check name means and reads the ``Report``.

Check names: ``reverse`` (vjp against finite differences), ``forward`` (jvp
against finite differences), ``fast`` (gradcheck's fast mode, one random
projection each way), ``gradgrad`` (reverse over reverse),
``fwgrad_bwgrad`` (forward over reverse), ``reference`` (against the op's
mpmath reference instead of finite differences).
"""
from __future__ import annotations

import hashlib
import time
from dataclasses import dataclass

from cli.results import CheckResult
from gradcheck.modes import CHECK_NAMES, CHECKS, DEFAULT_CHECKS, check_named  # noqa: F401


@dataclass(frozen=True)
class Policy:
    """How checks are run: ``precise`` or the OpInfo's torch-style
    tolerances, the engine, and the base seed of the random probes."""

    precise: bool = True
    engine: str = "refengine"
    seed: int = 0


def derive_seed(base: int, *parts) -> int:
    """A seed for one check, stable across runs, platforms and ``--jobs``."""
    text = ":".join(str(p) for p in (base, *parts))
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "little") >> 1


def options(check: str, policy: Policy, tolerance=None, forward: bool = True,
            reference=None) -> dict:
    """The ``gradcheck.check`` keywords of a check name."""
    tol = {} if tolerance is None else {"atol": tolerance.atol, "rtol": tolerance.rtol}
    return check_named(check).keywords(precise=policy.precise, has_forward=forward,
                                       reference=reference, **tol)


def skip_reason(info, check: str, dtype, call) -> str | None:
    """Why ``check`` does not apply to this op, dtype and sample, or ``None``."""
    if not call.inputs:
        return "no input of this sample requires grad"
    capability = CHECKS[check].capability
    if not info.supports(capability, dtype):
        return f"the op does not declare support for {capability} mode on {dtype}"
    if check == "reference":
        if info.mpmath_ref is None:
            return "the op has no mpmath reference"
        if not call.has_plain_output():
            return "the sample post-processes the output, which the reference cannot follow"
    return None


def known_failure(info, check: str, dtype, sample, engine: str):
    """The ``KnownFailure`` declared for this check, or ``None``."""
    name = CHECKS[check].known_as
    if engine == "torch":
        # torch's own formulas: only failures declared against torch apply
        return info.known_failure(f"torch_{name}", dtype, sample)
    return info.known_failure(name, dtype, sample)


def _failure_dicts(report) -> list:
    keep = ("check", "mode", "against", "out_idx", "in_idx", "max_error", "where",
            "tolerance", "diagnosis", "detail")
    return [{k: v for k, v in f.to_dict().items() if k in keep} for f in report.failures]


def _first_line(report) -> str:
    from gradcheck.report import describe
    first = report.failures[0]
    return describe(first, report.name).splitlines()[0]


def run(func, inputs, name: str, check: str, kwargs: dict, seed: int,
        base: CheckResult, known=None):
    """Run one check; return ``(CheckResult, Report or None)``."""
    import gradcheck
    start = time.perf_counter()
    report = None
    try:
        report = gradcheck.check(func, inputs, seed=seed, name=name, **kwargs)
    except ValueError as exc:  # gradcheck: nothing here can be checked (see check())
        status, message = "skipped", " ".join(str(exc).split())
        diagnosis, failures = None, []
    except Exception as exc:  # noqa: BLE001 - any exception of the code under check
        status, message = "error", f"{type(exc).__name__}: {' '.join(str(exc).split())}"
        diagnosis, failures = None, []
    else:
        if report.passed:
            status, message, diagnosis, failures = "passed", "", None, []
        else:
            status, message = "failed", _first_line(report)
            diagnosis, failures = report.diagnosis, _failure_dicts(report)
    if known is not None:
        if status == "passed":
            message = f"passed although declared a known failure ({known.reason})"
        elif status in ("failed", "error"):
            status, message = "known-failure", f"{known.reason} [{message}]"
    result = CheckResult(base.op, base.dtype, base.sample, check, status, message, diagnosis,
                         time.perf_counter() - start, seed, base.family, base.sample_name,
                         failures, _unbatched(report))
    return result, report


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
