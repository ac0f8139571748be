"""The search: try the catalogue's points within a budget, judge, shrink, report.

Each point is a whole check (``run``, handed over by ``api.check``) of the
same function at another input, in precise mode (its error estimates, not a
fixed atol, so that 10 % off is a failure at 1e-8 as at 40). A point where
the forward raises or is not finite is outside the function's domain:
skipped and counted. A failing point is judged again by one-sided
derivatives (``brackets``): a subgradient convention at a kink passes, a
point where no bracket forms is "not differentiable here", counted apart. At
second order, a failing row of the first derivative that is below the
forward's rounding is judged by the forward's own second differences
(``forwardwitness``): where they cannot refute the formula, the point is
counted apart ("below the forward's rounding"). A failure left is shrunk
(``shrink``) and added to the report, its point and a reproducer in each
result's ``detail``; ``Report.counts["explore"]`` keeps the tallies and the
findings.
"""
from __future__ import annotations

import dataclasses
import sys
import time
import warnings

import numpy as np

from adcheck.gradcheck.core import grids
from adcheck.gradcheck.core import modules
from adcheck.gradcheck.core.analytical import ad_blocks
from adcheck.gradcheck.core.coords import from_real, rounding_unit, to_real
from adcheck.gradcheck.core.evaluation import Evaluator
from adcheck.gradcheck.core.problem import Problem, as_tuple
from adcheck.gradcheck.core.seeding import check_rng
from adcheck.gradcheck.core import secondorder
from adcheck.gradcheck.core.sides import SIDES
from adcheck.gradcheck.engines import engine_for
from adcheck.gradcheck.errors import GradcheckError, UncheckableError
from adcheck.gradcheck.explore import (arbiter, batchscreens, brackets, catalogue,
                                       forwardwitness, point, quick, shrink, watch, wobble)
from adcheck.gradcheck.explore.deadline import Timeout, deadline
from adcheck.gradcheck.explore.tally import Tally
from adcheck.gradcheck.verdict.compare import Result

#: failures a one-sided verdict may explain (the Jacobians, and what follows from them)
EXPLAINABLE = {"reverse", "forward", "nonfinite", "adjoint", "discontinuous"}
#: failures that follow the ones above when they come with them (a batched product that
#: repeats the one-at-a-time NaN); alone, they are the point's own failures
RIDERS = {"batched-grad", "batched-forward-grad"}
#: findings kept before the search stops (the first, shrunk, says what to fix)
MAX_FINDINGS = 1
#: seconds the quick pass may take at most (it is on by default: a correct function's
#: 3 to 8 points take milliseconds; a slow one's full checks stop here)
QUICK_BUDGET = 5.0
#: the quick pass explores inputs of double precision only: a narrower formula's
#: tolerance at another point is as coarse as its rounding (a correct bfloat16 sum
#: failed by 3.6e-2 against 3.0e-2 at zeros); ``explore=True`` explores them too
QUICK_EPS = float(np.finfo(np.float64).eps)


class Explorer:
    """The search over one function's points (see the module docstring)."""

    def __init__(self, run, func, inputs, options, report, quick_only: bool, progress: bool):
        func, inputs, names, name = modules.prepare(func, inputs, options)
        self.run, self.func, self.inputs = run, func, as_tuple(inputs)
        self.engine = E = engine_for(self.inputs)
        self.given = {i: E.to_numpy(x) for i, x in enumerate(self.inputs) if E.is_tensor(x)}
        self.explored = [i for i in self.given if E.requires_grad(self.inputs[i])
                         and E.is_differentiable_dtype(self.inputs[i]) and self.given[i].size
                         and (not quick_only or E.epsilon(self.inputs[i]) <= QUICK_EPS)]
        self.options = dataclasses.replace(
            options, explore=False, precise=options.reference is None, fast_mode=False,
            seed=report.seed, name=name or report.name, input_names=names, buffers=False,
            # linearity and undefined grad_outputs do not depend on the point: the
            # given inputs judged them (the vmap rule too, on examples around them), and
            # NaN at a pole would only repeat itself
            check_scaling=False, check_undefined_grad=False, check_vmap_rule=False,
            check_inputs_alone=False)
        self.report, self.quick_only, self.progress = report, quick_only, progress
        #: the fixed tolerances the given inputs were judged with, if any (``_within_asked``)
        self.loose = None if options.precise or options.reference is not None \
            else (options.atol, options.rtol)
        self.budget = min(options.explore_budget, QUICK_BUDGET) if quick_only \
            else options.explore_budget
        self.modes = ({"reverse"} if options.check_backward_ad else set()) | (
            {"forward"} if options.check_forward_ad else set())
        self.rng = np.random.default_rng(report.seed)
        self.eps = max((rounding_unit(self.given[i].dtype) for i in self.explored),
                       default=rounding_unit(np.float64))
        self.tally = Tally(budget=self.budget)
        #: a second-order check's first derivative and grad_outputs, built at the first
        #: point screened and reused at the others (``_screened_first``)
        self._first = None
        #: whether the forward runs only with grad (``_values_at``)
        self._needs_grad = False
        #: the screens made together (``_screen_together``) where no sharing holds them
        self.screened: dict = {}
        self.start = time.perf_counter()

    def remaining(self) -> float:
        return self.budget - (time.perf_counter() - self.start)

    def search(self) -> Tally:
        rng = np.random.default_rng(self.report.seed)
        found_kinds = set()
        candidates = catalogue.candidates(self.given, self.explored, rng,
                                          include_full=not self.quick_only)
        if self.quick_only and self._together():   # (a few small points: screened first)
            candidates = list(candidates)
            self._screen_together([c.arrays for c in candidates])
        for candidate in candidates:
            if self.remaining() <= 0 or len(self.tally.findings) >= MAX_FINDINGS:
                break
            if candidate.kind in found_kinds:
                continue
            outcome = self.try_point(candidate.arrays, screen=self.quick_only)
            if outcome[0] == "stopped":
                break
            self.tally.tried += 1
            self._count(outcome)
            if outcome[0] == "fail":
                found_kinds.add(candidate.kind)
                self._keep(candidate.arrays, outcome)
            self._say()
        self.tally.seconds = time.perf_counter() - self.start
        return self.tally

    def _count(self, outcome) -> None:
        kind = outcome[0]
        field = {"pass": "passed", "domain": "outside_domain", "nondiff": "not_differentiable",
                 "kink": "kinks", "timeout": "timeouts", "unresolved": "unresolved",
                 "crash": "crashes", "cancels": "forward_cancels",
                 "rounding": "below_rounding"}.get(kind)
        if field:
            setattr(self.tally, field, getattr(self.tally, field) + 1)

    def _say(self) -> None:
        if self.progress and self.tally.tried % 10 == 0:
            print(f"explore {self.report.name}: {self.tally.tried} points, "
                  f"{len(self.tally.findings)} failing, {max(self.remaining(), 0):.0f} s left",
                  file=sys.stderr, flush=True)

    def _keep(self, arrays: dict, outcome) -> None:
        """Shrink a failing point and add it to the tally and the report."""
        arrays, outcome = shrink.shrink(self, arrays, outcome)
        full = {i: arrays.get(i, self.given[i]) for i in self.explored}
        description = point.describe(self.given, full)
        dtypes = {i: str(self.inputs[i].dtype) for i in self.given}
        code = point.reproducer(self.engine.name, dtypes, arrays, self.given)
        _, results, bracket = outcome
        point.annotate(results, description, code, bracket, arrays)
        self.tally.findings.append(point.Finding(description, code, results, "fail", arrays))

    def rebuilt(self, arrays: dict) -> list:
        return point.rebuilt(self.engine, self.inputs, arrays)

    def try_point(self, arrays: dict, screen: bool = False) -> tuple:
        """``(kind, results, bracket)``: kind one of pass, domain, nondiff,
        kink, unresolved, timeout, crash (the process died there in an earlier
        run: ``watch``), stopped (the budget ended), fail; a failure's results
        from the check at the point. With ``screen``, a point the quick screen
        clears passes without the full check."""
        watching = watch.current()
        if watching is None:
            return self._try(arrays, screen)
        key = watch.point_key(arrays)
        if key in watching.crashed:
            return self._crashed(arrays, watching.crashed[key])
        watching.before(key)
        try:
            return self._try(arrays, screen)
        finally:
            watching.after()

    def _crashed(self, arrays: dict, cause: str) -> tuple:
        """A point where the process died: a failure naming it, not run again."""
        description = point.describe(self.given, {**self.given, **arrays})
        dtypes = {i: str(self.inputs[i].dtype) for i in self.given}
        code = point.reproducer(self.engine.name, dtypes, arrays, self.given)
        result = Result("explore-crash", "function", "crash", None, None, False,
                        diagnosis=f"the process checking it ended when this point was "
                                  f"tried (in this check or another of the same inputs): {cause}",
                        detail=f"at the explored point {description}; reproduce with: {code}")
        self.report.results.append(result)
        return ("crash", [result], None)

    def _try(self, arrays: dict, screen: bool) -> tuple:
        remaining = self.remaining()
        limit = min(remaining, max(2.0, self.budget / 4))
        try:
            with deadline(limit, self.engine.module) as alarm:
                screened = self._screened(arrays) if screen else "judge"
                found = (screened, [], None) if screened != "judge" else self._judged(arrays)
            if alarm.expired:   # (the point's own code turned the timeout into an error)
                raise Timeout()
            return found
        except Timeout:
            if limit >= remaining:    # the budget ended, not the point's time
                return ("stopped", [], None)
            description = point.describe(self.given, {**self.given, **arrays})
            result = Result("explore-timeout", "function", "budget", None, None, True,
                            detail=f"timed out after {limit:.1f} s at {description}")
            self.report.results.append(result)
            return ("timeout", [], None)

    def _screened(self, arrays: dict) -> str:
        """The quick screen's word on a point (``quick.screen``): pass, domain,
        or judge (the full check)."""
        func, ins = self.func, self.rebuilt(arrays)
        try:
            if self.options.order == 2:
                return self._screened_first(ins)
            return quick.screen(self.engine, func, ins, self.explored, self.modes, self.rng,
                                self.eps, screened=self.screened)
        except Exception:    # raised: the full check says why
            return "judge"

    def _together(self) -> bool:
        """Whether the quick pass's points are screened together (``batchscreens``):
        on an engine that batches them, where all of them at once keep to the
        check's memory budget."""
        if not batchscreens.batchable(self.engine):
            return False
        try:
            func, args, _ = self._screened_func(list(self.inputs))
            return func is not None and batchscreens.fits(
                self.engine, func, args, catalogue.cheapest_count(self.given, self.explored),
                self.options.memory_budget)
        except Exception:    # noqa: BLE001 - (the first derivative raised) one by one
            return False

    def _screened_func(self, ins: list) -> tuple:
        """``(func, args, needs_grad)``: what the quick screen evaluates at the
        inputs ``ins``, the function or a second-order check's first derivative
        (built at the first call and reused; ``None`` where it cannot be)."""
        if self.options.order != 2:
            return self.func, ins, False
        if self._first is None:
            self._built_first(ins)
        if self._first is None:
            return None, None, True
        first, gos = self._first
        return first, ins + gos, True

    def _screen_together(self, points: list) -> None:
        """The screens of ``points`` (arrays by input, as candidates give them)
        made in one batch (``batchscreens``), for ``quick.screen`` to find;
        nothing where the batch is not made, or where a batch of them ended the
        process in an earlier run (``watch``): one by one, the points then say
        which one does."""
        watching = watch.current()
        if watching is not None:
            points = [a for a in points if watch.point_key(a) not in watching.crashed]
        key = watch.batch_key(points)
        if len(points) < 2 or (watching is not None and key in watching.crashed):
            return
        E = self.engine
        try:
            calls = [self._screened_func(self.rebuilt(a)) for a in points]
            func, needs_grad = calls[0][0], calls[0][2]
            ins = [args for _, args, _ in calls]
            if func is None:
                return
            if needs_grad:
                func.expect()
            todo = quick.unscreened(E, func, ins, self.explored, self.eps, self.screened)
            if len(todo) < 2:
                return
            ins = [ins[j] for j in todo]
            limit = min(self.remaining(), max(2.0, self.budget / 4))
            if watching is not None:
                watching.before(key)
            try:
                with deadline(limit, E.module):
                    made = batchscreens.screens(E, func, ins, self.explored, self.rng,
                                                self.eps, needs_grad, self.options.memory_budget)
            finally:
                if watching is not None:
                    watching.after()
        except Exception:    # noqa: BLE001 - (Timeout too) one by one, as before
            return
        for point_ins, found in zip(ins, made or ()):
            quick.keep(E, func, point_ins, self.explored, self.eps, found, self.screened)

    def _screened_first(self, ins: list) -> str:
        """``_screened`` of a second-order check: the screen of the first
        derivative at ``ins``. Its grad_outputs are drawn from the same seed at
        every point, so one first derivative serves every point where the
        function's outputs are shaped alike (``first.expect``; elsewhere, and at
        the first point, it is built there)."""
        if self._first is not None:
            first, gos = self._first
            first.expect()
            try:
                return quick.screen(self.engine, first, ins + gos, self.explored, self.modes,
                                    self.rng, self.eps, needs_grad=True,
                                    screened=self.screened)
            except secondorder.Reshaped:
                pass
        first, args = self._built_first(ins)
        return quick.screen(self.engine, first, list(args), self.explored, self.modes, self.rng,
                            self.eps, needs_grad=True, screened=self.screened)

    def _built_first(self, ins: list) -> tuple:
        """``(first, args)``: the first derivative at ``ins``, kept for the other
        points where it can be reused (``_screened_first``)."""
        first, args = secondorder.first_derivative(
            self.func, ins, self.options.grad_outputs,
            np.random.default_rng(self.report.seed or 0), self.options.name)
        if self._first is None and first.reusable:
            self._first = (first, list(args[len(ins):]))
        return first, args

    def _values_at(self, ins: list) -> tuple:
        """The outputs at ``ins``: under no_grad, or with grad where the function
        refuses no_grad (torch-struct's partitions call autograd inside: every
        point was "outside the domain" there), once seen, from then on."""
        E = self.engine
        if not self._needs_grad:
            try:
                with E.no_grad():
                    return as_tuple(self.func(*ins))
            except Exception:  # noqa: BLE001 - asked again with grad below
                pass
        with E.enable_grad():
            outs = as_tuple(self.func(*ins))
        self._needs_grad = True
        return outs

    def _judged(self, arrays: dict) -> tuple:
        ins = self.rebuilt(arrays)
        E = self.engine
        try:
            outs = self._values_at(ins)
        except Exception:    # outside the function's domain
            return ("domain", [], None)
        if any(E.is_tensor(o) and E.is_differentiable_dtype(o)
               and not np.all(np.isfinite(E.to_numpy(o))) for o in outs):
            return ("domain", [], None)
        if self.options.order == 2 and not self._first_finite(ins):
            # what a second-order check differentiates, the first derivative, is not
            # finite here: outside its domain, as the quick screen counts it (the
            # first-order check judges that NaN: xlogy's d/dy = x / y at (0, 0))
            return ("domain", [], None)
        try:
            checked = self.run(self.func, self.rebuilt(arrays), self.options)
        except UncheckableError:
            return ("nondiff", [], None)
        except GradcheckError as exc:   # the formula raised: a failure where the function
            if self._jumps(ins):          # is differentiable, not where an output jumps
                return ("nondiff", [], None)
            result = Result("explore-raised", "reverse", "function", None, None, False,
                            diagnosis=str(exc).splitlines()[0])
            return ("fail", [result], None)
        if checked.passed or self._within_asked(checked):
            return ("pass", [], None)
        return self._bracketed(ins, checked)

    def _within_asked(self, checked) -> bool:
        """Whether every failure at the point is within the fixed tolerances the
        call asked for (``precise=False``: torch's ``atol + rtol |numerical|``,
        entry by entry): exploring judges precisely, but never holds a formula to
        tighter tolerances than the given inputs were held to (a backward solved
        to 1e-6 on purpose, ``--torch-tolerances``). NaN never is."""
        if self.loose is None:
            return False
        atol, rtol = self.loose
        for failure in checked.failures:
            expected, actual = failure.expected, failure.actual
            if expected is None or actual is None or np.shape(expected) != np.shape(actual):
                return False
            with np.errstate(all="ignore"):
                if not np.all(np.abs(actual - expected) <= atol + rtol * np.abs(expected)):
                    return False
        return True

    def _evaluator(self, ins, seed: int) -> Evaluator:
        """The evaluator of the checked function at ``ins`` (the first derivative
        of ``func`` with the check's grad_outputs when the check is second order)."""
        func, inputs = self.func, ins
        if self.options.order == 2:
            # the check's own generator (``api``'s), so that these are the grad_outputs
            # the check at the point drew, and its Jacobians are of this function
            func, inputs = secondorder.first_derivative(func, ins, self.options.grad_outputs,
                                                        check_rng(seed), self.options.name)
        # order 2: the first derivative calls autograd, so it is evaluated (at the
        # one-sided steps too) on leaves that require grad, with grad on; without it
        # every step raised, no bracket formed, and every failure was "not differentiable"
        return Evaluator(Problem(func, inputs, self.options.name, order=self.options.order,
                                 warn_precision=False))

    def _first_finite(self, ins) -> bool:
        """Whether the first derivative (what a second-order check differentiates)
        is finite at ``ins``; a raise there is left to the check itself."""
        try:
            p = self._evaluator(ins, self.report.seed or 0).problem
        except Exception:
            return True
        return all(np.all(np.isfinite(p.out_arrays[o])) for o in p.float_out)

    def _jumps(self, ins) -> bool:
        try:   # (complex inputs in their real coordinates: ``brackets.RealView``)
            return bool(brackets.jumps(self._evaluator(ins, 0), self.explored))
        except Exception:    # the function itself fails beside the point: no evidence
            return False

    def _wobbled(self, ins, seed: int, jacobians: dict) -> dict:
        """By mode, (output, input) block and row: the allowance for the formula's
        own rounding (``wobble``), from its Jacobians at the inputs moved by their
        rounding in norm (pinv at condition 5.8e10: ~2e-6 of a Jacobian of 0.54)."""
        E = self.engine
        arrays = {i: to_real(E.to_numpy(ins[i])) for i in self.explored}
        delta = wobble.step(arrays, list(jacobians.values()), seed)
        if delta is None:
            return {}
        there = list(ins)
        for i in self.explored:
            native = E.to_numpy(ins[i])
            there[i] = E.from_numpy_like(from_real(arrays[i] + delta[i], native.shape,
                                                   native.dtype), ins[i],
                                         requires_grad=E.requires_grad(self.inputs[i]))
        try:
            ev = self._evaluator(there, seed)
            moved = {m: ad_blocks(ev, SIDES[m]) for m in jacobians}
        except Exception:    # the formula fails there: no estimate, none added
            return {}
        sizes = {i: a.size for i, a in arrays.items()}
        return {m: wobble.allowance(jac, moved[m], sizes, self.eps)
                for m, jac in jacobians.items()}

    def _bracketed(self, ins, checked) -> tuple:
        failures = checked.failures
        judged = [f for f in failures if f.check not in RIDERS]
        if not judged or any(f.check not in EXPLAINABLE for f in judged):
            return ("fail", failures, None)
        ev = self._evaluator(ins, checked.seed)
        jacobians = {m: checked.jacobians[m] for m in ("reverse", "forward")
                     if m in checked.jacobians}
        rounding = self._wobbled(ins, checked.seed, jacobians)
        verdict = brackets.judge(ev, jacobians, self.explored, rounding, self._witness(ins, ev))
        if verdict.verdict == "fail":
            return self._arbitrated(ev, checked, failures, verdict)
        if verdict.verdict == "agree":
            return ("pass", [], None)
        return (verdict.verdict, [], None)

    def _witness(self, ins, ev):
        """A second-order check's forward at ``ins`` (``forwardwitness``): the judge
        of the first derivative's rows below its rounding; None at first order."""
        if self.options.order != 2:
            return None
        try:
            return forwardwitness.Witness(self.func, ins, ev, self.explored, self.eps)
        except Exception:    # noqa: BLE001 - not a first derivative it can read: no witness
            return None

    def _arbitrated(self, ev, checked, failures, verdict) -> tuple:
        """A point the one-sided verdicts fail, judged by the op's mpmath reference
        when the check carries one (``arbiter``): "cancels" where it agrees with the
        formula and not with finite differences; else the failure, with what it found."""
        ref = self.options.explore_reference
        if ref is None or self.options.reference is not None or self.options.order != 1:
            return ("fail", failures, verdict)
        start = time.perf_counter()
        jacobians = {m: checked.jacobians[m] for m in ("reverse", "forward")
                     if m in checked.jacobians}
        found, note = arbiter.arbitrate(ev, jacobians, checked.jacobians.get("numerical"), ref)
        self.tally.arbitrated += 1
        self.tally.arbiter_seconds += time.perf_counter() - start
        if found == "cancels":
            return ("cancels", [], None)
        verdict.note = note   # on the report's line of the point (``point.annotate``)
        return ("fail", failures, verdict)


def explore(run, func, inputs, options, report, quick_only: bool = False,
            progress: bool = False):
    """Explore ``func`` around ``inputs`` (see the module docstring) and add
    what is found to ``report``: failing results carrying their point, one
    ``explore`` result with the tallies, and ``report.counts["explore"]``.
    ``run(func, inputs, options)`` is the check of one point. The quick pass
    (``quick_only``) runs only after the given inputs passed."""
    if quick_only and not report.passed:
        return Tally()    # the given inputs already fail: the quick pass adds nothing to fix
    explorer = Explorer(run, func, inputs, options, report, quick_only, progress)
    if quick_only and not explorer.explored:
        return Tally()    # nothing of double precision to explore: nothing to say
    with warnings.catch_warnings():
        # overflow and precision warnings at 1e300 or 1e-300 are what exploring is for
        warnings.simplefilter("ignore", RuntimeWarning)
        warnings.simplefilter("ignore", UserWarning)
        with grids.known({(options.order, o): dtype for o, dtype in report.computed_in.items()}):
            tally = explorer.search() if explorer.explored else Tally(budget=explorer.budget)
    for finding in tally.findings:
        report.results += finding.results
    report.results.append(Result("explore", "explore", "special points", None, None,
                                 True, detail=tally.text()))
    report.counts["explore"] = tally.to_dict()
    return tally
