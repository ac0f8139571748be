"""``adcheck check FILE:OBJ --harvest``: the custom Functions of a model as targets.

The model's forward runs once under ``gradcheck.harvest``'s recorder; each
harvested op (``PATH:Class``) and each of its samples (a distinct set of
input shapes) becomes a ``HarvestSubject``, checked by ``run_checks`` like
any other subject, so its results are ordinary ``CheckResult``s named
``PATH:Class`` in every report format. A last result, named after the
model, is the whole model's check (probed, with its escape odds) whose
message says where its failure comes from (``gradcheck.harvest.api.localise``).

A forward that raises gives one error result naming the submodule; a model
that applies no custom Function gives one skipped result saying so (nothing
is checked: exit status 3 unless ``--allow-empty``).
"""
from __future__ import annotations

import time
from types import SimpleNamespace

from adcheck.gradcheck.harvest.calls import settle
from adcheck.runner.deadline import TaskTimeout, deadline
from adcheck.runner.checks import (FAULTS, Subject, builds_no_graph, derive_seed,
                                   no_double_backward, options, run_check, run_checks)
from adcheck.runner.results import TASK_CHECK, CheckResult
from adcheck.runner.policy import USERS

#: what the skipped result of a model that applies no custom Function says
NOTHING = ("applied no custom Function (torch.autograd.Function, torch.library custom op with "
           "autograd, jax.custom_jvp or jax.custom_vjp function, refengine Function) in its "
           "forward, so nothing was harvested; check the whole model without --harvest")


class HarvestSubject(Subject):
    """One sample of one harvested op (see ``gradcheck.harvest.targets``); the
    hooks not defined here keep ``Subject``'s defaults: none applies to it."""

    def __init__(self, op, sample, index: int):
        self.op, self.sample = op, sample
        self.name, self.family, self.index = op.name, f"harvested {op.kind}", index
        self.dtype_name, self.sample_name = sample.dtype or "-", sample.shapes

    def call(self):
        s = self.sample
        return SimpleNamespace(func=s.func, inputs=s.inputs, reference=None, names=s.names), \
            None

    def skip_reason(self, check: str, call) -> str | None:
        from adcheck.runner.checks import CHECKS
        if CHECKS[check].ad == "forward" and not self.op.has_jvp:
            return "the Function defines no jvp"
        if CHECKS[check].against == "reference":
            return "a harvested Function has no mpmath reference"
        return None

    def fault_skip(self, check: str, exc: BaseException) -> str | None:
        """A forward-mode check of a Function whose jvp raises NotImplementedError
        (written as a placeholder) is skipped, as one without a jvp is; so is a
        second-order check of one whose backward cannot build a graph."""
        from adcheck.runner.checks import CHECKS
        from adcheck.runner.target import no_forward_rule
        words = no_forward_rule(exc) if CHECKS[check].ad == "forward" else None
        if words is not None:
            return f"{self.name} has no forward-mode rule ({words})"
        return no_double_backward(self.name, check, exc)

    def failure_skip(self, check: str, report) -> str | None:
        return builds_no_graph(self.name, check, report)

    def keywords(self, check: str, policy, call) -> dict:
        return {**options(check, policy, None, self.op.has_jvp),
                "input_names": list(call.names), **USERS}

    def seed(self, base: int, check: str) -> int:
        return derive_seed(base, "harvest", self.name, self.index, check)


def _noted(result: CheckResult, notes: list) -> CheckResult:
    """The sample's notes (low precision, in-place writes, nesting) on its result."""
    if notes:
        text = "; ".join(notes)
        result.message = f"{result.message} (note: {text})" if result.message else \
            f"note: {text}"
    return result


def _skipped(op, sample, index: int, checks: tuple) -> list:
    return [CheckResult(op.name, "-", index, check, "skipped", sample.skip,
                        family=f"harvested {op.kind}", sample_name=sample.shapes)
            for check in checks]


def op_results(op, settings) -> list:
    """``[(CheckResult, Report or None)]`` of every check of every sample of ``op``,
    within ``--timeout`` for the op (the checks that ended before it kept)."""
    pairs, start = [], time.perf_counter()
    try:
        with deadline(settings.timeout):
            for index, sample in enumerate(op.samples):
                if sample.skip is not None:
                    pairs += [(r, None) for r in _skipped(op, sample, index, settings.checks)]
                    continue
                done: list = []   # (the checks that end, kept if a timeout ends the rest)
                try:
                    done = run_checks(HarvestSubject(op, sample, index), settings.checks,
                                      settings.policy, settings.keep_reports, finished=done)
                finally:
                    pairs += [(_noted(r, sample.notes), report) for r, report in done]
                    settle()   # (a backward that raised left the model's parameters swapped)
    except TaskTimeout as exc:
        pairs.append((_timed_out(op.name, f"harvested {op.kind}", exc, len(pairs), start), None))
    return pairs


def _timed_out(name: str, family: str, exc, kept: int, start: float) -> CheckResult:
    """The error of a harvested op (or the whole model) that ran past --timeout."""
    from adcheck.runner.stages import kept_text, timeout_text
    text = timeout_text(exc, exc.seconds) + kept_text(kept)
    error = _setup(name, "error", text, family)
    error.seconds = time.perf_counter() - start
    return error


def _setup(name: str, status: str, message: str, family: str) -> CheckResult:
    return CheckResult(name, "-", None, TASK_CHECK, status, " ".join(message.split()),
                       family=family)


#: the sample name of the whole model's row
MODEL_SAMPLE = "the whole model (probed)"


def _order(check: str) -> int:
    """A check's order (a task's own error, no check's: taken as first order)."""
    from adcheck.runner.checks import CHECKS
    return CHECKS[check].order if check in CHECKS else 1


def model_result(target, inputs, failing: list, recording, policy,
                 second: list = (), raised: list = ()) -> CheckResult:
    """The whole model's check, its message the localisation of its failure
    (``failing``: the ops failing at first order; ``second``: at second only;
    ``raised``: those of ``failing`` whose checks only raised or timed out)."""
    from adcheck.gradcheck.errors import SteppedOffError
    from adcheck.gradcheck.harvest.api import (
        STEPPED_OFF,
        all_double,
        composition,
        judged_again,
        localise,
        model_call,
        model_keywords,
    )
    from adcheck.gradcheck.harvest.recording import ModelState
    double = all_double(recording.ops)
    func, args, names = model_call(target.func, inputs, double)
    base = _setup(target.name, "error", "", target.kind)
    state = ModelState(target.func if target.kind.endswith("Module") else None)
    try:
        chosen = policy.options().derive(**model_keywords(double), input_names=names,
                                         seed=derive_seed(policy.seed, "harvest", target.spec),
                                         name=target.name)
        raised = []
        result, report = run_check(func, args, "reverse", chosen, base,
                                   fault_skip=lambda exc: raised.append(exc))
        if any(isinstance(exc, SteppedOffError) for exc in raised):
            result, report = run_check(func, args, "reverse", chosen.derive(**STEPPED_OFF),
                                       base)
        elif double and report is not None and judged_again(report, func, args):
            result, report = run_check(func, args, "reverse", chosen.derive(precise=True),
                                       base)
    finally:
        state.restore()
    passed = None if result.status not in ("passed", "failed") else result.status == "passed"
    result.sample, result.sample_name = 0, MODEL_SAMPLE
    result.message = localise(passed, failing, composition(recording), result.message,
                              second, raised) + (
        f" [{result.message}]" if result.message and passed is not None else "")
    return result, report


def harvest_results(target, inputs, settings, max_shapes: int,
                    pairs: list | None = None) -> list:
    """``[(CheckResult, Report or None)]``: each harvested op's checks, then the
    whole model's (see the module docstring); put in ``pairs`` (when given) as
    each op ends, so that a stop signal keeps them."""
    from adcheck.gradcheck.harvest.api import record
    from adcheck.gradcheck.harvest.recording import ForwardError
    start = time.perf_counter()
    pairs = [] if pairs is None else pairs
    try:
        recording = record(target.func, inputs, max_shapes)
    except ForwardError as exc:
        result = _setup(target.name, "error", str(exc), target.kind)
        result.seconds = time.perf_counter() - start
        pairs.append((result, None))
        return pairs
    if not recording.ops:
        pairs.append((_setup(target.name, "skipped", f"{target.spec} {NOTHING}", target.kind),
                      None))
        return pairs
    for op in recording.ops:
        try:
            pairs += op_results(op, settings)
        except FAULTS as exc:  # noqa: PERF203 - one op's trouble must not end the others
            pairs.append((_setup(op.name, "error", str(exc), op.kind), None))
    failing = list(dict.fromkeys(r.op for r, _ in pairs if r.failing))
    first = list(dict.fromkeys(r.op for r, _ in pairs if r.failing and _order(r.check) == 1))
    raised = [op for op in first if all(r.status != "failed" for r, _ in pairs if r.op == op)]
    start = time.perf_counter()
    try:
        with deadline(settings.timeout):
            pairs.append(model_result(target, inputs, first, recording, settings.policy,
                                      [op for op in failing if op not in first], raised))
    except TaskTimeout as exc:
        pairs.append((_timed_out(target.name, target.kind, exc, 0, start), None))
    return pairs
