"""The Report: everything a check found, as data, as text and as JSON."""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from adcheck.gradcheck.core.grids import coarsest
from adcheck.gradcheck.core.modes import failure_text

#: checks whose failure explains the others come first
PRIORITY = {"input-mutation": 0, "deterministic": 1, "nonfinite-output": 2, "nonfinite": 3,
            "discontinuous": 4, "grad-output-mutation": 5, "reentrant": 6, "scaling": 7,
            "undefined-grad": 8}


def _finite(result) -> bool:
    return result.max_error is not None and bool(np.isfinite(result.max_error))


def _unjudged(result) -> bool:
    """Whether a failure judged no derivative, only the sample: an output NaN or
    inf, NaN differences, a jump every step straddles (said after a failure
    that judged one)."""
    return result.check in ("nonfinite-output", "discontinuous") or (
        result.check == "nonfinite" and result.mode in ("numerical", "reference"))


def _fmt(value) -> str:
    return "none" if value is None else f"{value:.1e}"


def _where(result) -> str:
    if result.where is None:
        return ""
    if result.check.startswith("fast") or result.check == "adjoint":
        return f" at probe {result.where[0]}"
    return " at [" + ", ".join(str(k) for k in result.where) + "]"


def describe(result, name: str) -> str:
    """One line in the model of STYLE.md point 7; a second-order result
    (``result.order == 2``) is named as such (see ``modes.failure_text``).
    ``result`` may be any object with ``Result``'s attributes (one read back
    from JSON); without ``order`` it is taken as first order."""
    order = getattr(result, "order", 1)
    what = failure_text(result.check, result.mode, result.against, order)
    pair = []
    if result.out_idx is not None:
        pair.append(f"output {result.out_idx}")
    if result.in_idx is not None:
        in_name = getattr(result, "in_name", None)
        pair.append(f"input {result.in_idx}" + (f" ({in_name})" if in_name else ""))
    where = " for " + ", ".join(pair) if pair else ""
    parts = []
    if result.where is not None:
        parts.append(f"max error {_fmt(result.max_error)}{_where(result)}")
        if result.tolerance is not None:
            parts[-1] += f", tolerance {_fmt(result.tolerance)}"
    if result.diagnosis:
        parts.append(result.diagnosis)
    evidence = "; ".join(parts) or "no detail"
    text = f"{name}: {what}{where} ({evidence})"
    if result.detail:
        text += f"\n  {result.detail}"
    precision = precision_text(getattr(result, "precision", None))
    if precision:
        text += f"\n  precision: {precision}"
    return text


def precision_text(precision) -> str | None:
    """The sentence of a low-precision comparison's ``Precision`` (or of its
    dict read back from JSON); ``None`` for double precision or none given."""
    if precision is None:
        return None
    if isinstance(precision, dict):
        narrow = precision.get("formula_dtype") not in ("float64", "complex128")
        return precision.get("text") if narrow else None
    return precision.text() if precision.narrow else None


def _matrix(label: str, array) -> str:
    if array is None:
        return ""
    with np.printoptions(precision=6, suppress=False, linewidth=100, threshold=200):
        body = np.array2string(np.asarray(array), prefix="    ")
    return f"  {label}:\n    {body}\n"


@dataclass
class Report:
    """The result of ``check()``.

    ``passed``: every check passed. ``results``: one ``Result`` per check and
    (output, input) pair; ``failures`` the failing ones, first the most
    fundamental. ``diagnosis``: the first failure's diagnosis, or ``None``.
    ``jacobians``: every Jacobian computed, keyed by its mode label (in fast
    mode the (k, 1) projections; after a fast failure also ``slow-numerical``
    and ``slow-reverse``/``slow-forward``, the full Jacobians). ``counts``:
    function, vjp and jvp evaluations. ``seconds``: wall time. ``seed``: the
    seed of the random probes (pass it back as ``seed=`` to repeat a run).
    ``order``: 2 when the function checked was the first derivative
    (``gradgradcheck``): its inputs are the function's inputs followed by the
    grad_outputs, its outputs the gradients of the inputs that require grad.
    """

    name: str
    engine: str
    results: list = field(default_factory=list)
    jacobians: dict = field(default_factory=dict)
    counts: dict = field(default_factory=dict)
    seconds: float = 0.0
    seed: int | None = None
    settings: dict = field(default_factory=dict)
    #: the scale of rounding tolerances, by (out_idx, in_idx) (see api._magnitudes)
    magnitudes: dict = field(default_factory=dict)
    #: how the Jacobians were built: ``batched_calls``; ``fallback``, why the
    #: loop was used instead (or None); ``looped_ops``, ops without a batching
    #: rule that ran once per example inside vmap
    batching: dict = field(default_factory=dict)
    order: int = 1
    #: how the slow Jacobians were built: ``dense``, ``compressed``,
    #: ``chunked`` or ``probed`` (``gradcheck.producers.choose``); ``None`` in
    #: fast mode
    plan: str | None = None
    #: by Jacobian mode, what its producer could have missed (compressed and
    #: probed checks; see ``Jacobian.note``)
    coverage: dict = field(default_factory=dict)
    #: a probed check: the probability that one entry wrong by
    #: ``relative_error`` times its row's norm escapes, by AD mode (``forward``,
    #: ``reverse``); see ``gradcheck.large.probed``
    escape: dict = field(default_factory=dict)
    #: the name of each input (``in_idx`` order) when they have names: a module's
    #: inputs then its parameters (``"layer.0.weight"``), a pytree's leaves by path
    input_names: list | None = None
    #: a failed second-order check: whether the first derivative's backward
    #: built a graph back to the inputs (``False``: the function has no double
    #: backward; ``None``: not asked, or the engine cannot tell)
    double_backward: bool | None = None
    #: a check judged again on whole Jacobians (this report): what its cells found
    #: (``api._settled_densely``, ``api._judged_whole``)
    settled: str | None = None
    #: a precise compressed or probed check: its largest input coordinate and its
    #: cells' resolution (``gradcheck.large.resolved``; not reported)
    cell_reach: tuple | None = None
    #: by output, the narrower dtype a double-precision output's values come
    #: through, which the check judged its rounding by (``Problem.computed_in``)
    computed_in: dict = field(default_factory=dict)
    #: checks made only in part, each saying what was not judged and why (a vmap
    #: rule judged on identical examples: ``gradcheck.verdict.vmaprule``)
    partial: list = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return all(r.passed for r in self.results)

    def __bool__(self) -> bool:
        """``passed``: ``assert check(f, x)`` fails where the check fails, as
        ``assert torch.autograd.gradcheck(f, x)`` does."""
        return self.passed

    @property
    def failures(self) -> list:
        """Failing results, root causes first (nondeterminism, scaling). A jump
        explains the failures of its own pair only: where another pair fails
        with evidence (nextafter at x == y, wrong in x, a jump in y), that
        failure leads."""
        failing = [r for r in self.results if not r.passed]
        last = len(PRIORITY) + 1
        # (the entries a jump or a NaN leaves unjudged carry an infinite tolerance:
        # a comparison failing at a finite error failed elsewhere, and leads)
        judged = any(PRIORITY.get(r.check, last) > PRIORITY["discontinuous"] and
                     not _unjudged(r) and _finite(r) for r in failing) and \
            any(_unjudged(r) for r in failing)
        if not judged:
            return sorted(failing, key=lambda r: PRIORITY.get(r.check, len(PRIORITY)))
        # (and of one kind, a finite error before the NaN of a NaN output)
        return sorted(failing, key=lambda r: (last if _unjudged(r) else
                                              PRIORITY.get(r.check, len(PRIORITY)),
                                              not _finite(r)))

    @property
    def diagnosis(self) -> str | None:
        for failure in self.failures:
            if failure.diagnosis:
                return failure.diagnosis
        return None

    def message(self, limit: int = 3) -> str:
        """The failure text ``GradcheckError`` carries: each failing pair, its
        evidence and diagnosis, and both Jacobians (or scalars) of the first."""
        failures = self.failures
        if not failures:
            remark = f" ({self.remark})" if self.remark else ""
            return f"{self.name}: all checks passed" + self._escape_text() + remark
        lines = [describe(f, self.name) for f in failures[:limit]]
        if len(failures) > limit:
            lines.append(f"... and {len(failures) - limit} more failing checks")
        first = failures[0]
        text = "\n".join(lines) + "\n"
        fast = first.check.startswith("fast")
        against = first.against if not fast else "numerical (slow Jacobian)"
        mode = first.mode if not fast else f"{first.mode.removeprefix('fast-')} (slow Jacobian)"
        text += _matrix(against, first.expected)
        text += _matrix(mode, first.actual)
        if self.settled:
            text += f"  {self.settled}\n"
        if first.check.startswith("fast"):
            text += ("  fast mode failed; the slow Jacobians above explain it "
                     f"(seed={self.seed} repeats the probes)\n")
        return text.rstrip("\n")

    @property
    def remark(self) -> str:
        """What a pass was judged by beyond the usual, in words ("" if nothing):
        probed cells settled on whole Jacobians, outputs computed in a
        narrower dtype than they are returned in, checks made only in part."""
        said = ([self.settled] if self.settled else []) + list(self.partial)
        if self.computed_in and self.order == 2:
            dtype = coarsest(self.computed_in.values())
            said.append(f"the function's values lie on {dtype}'s grid, as when it computes "
                        f"in {dtype} inside: its first derivative was judged at {dtype}'s "
                        "precision")
        elif self.computed_in:
            for o, dtype in sorted(self.computed_in.items()):
                said.append(f"output {o} holds only {dtype} numbers, as when the function "
                            f"computes in {dtype} inside: judged at {dtype}'s precision")
        return "; ".join(said)

    def _escape_text(self) -> str:
        """A probed check's odds that a wrong entry escaped, in words."""
        if not self.escape:
            return ""
        r = self.escape["relative_error"]
        modes = [m for m in ("forward", "reverse") if m in self.jacobians]
        odds = ", ".join(f"{m} mode {self.escape[m]:.1e}" for m in modes)
        return (f" (probed along random directions: a single entry wrong by {r:.0e} of its "
                f"row's norm escapes with probability at most {odds})")

    def __str__(self) -> str:
        return self.message()

    def to_dict(self) -> dict:
        """A JSON-serializable dict of the whole report."""
        return {
            "name": self.name, "engine": self.engine, "order": self.order, "passed": self.passed,
            "diagnosis": self.diagnosis,
            "failures": [r.to_dict() for r in self.failures],
            "results": [r.to_dict() for r in self.results],
            "jacobians": {mode: jac.to_dict() for mode, jac in self.jacobians.items()},
            "counts": dict(self.counts), "seconds": self.seconds, "seed": self.seed,
            "batching": dict(self.batching), "plan": self.plan,
            "coverage": dict(self.coverage), "escape": dict(self.escape),
            "input_names": self.input_names, "double_backward": self.double_backward,
            "settled": self.settled, "partial": list(self.partial),
            "computed_in": {str(o): dtype for o, dtype in self.computed_in.items()},
            "settings": {k: v for k, v in self.settings.items()
                         if isinstance(v, (bool, int, float, str, type(None)))},
        }
