"""What a run produced, as data every output format reads.

``CheckResult`` is one (op, dtype, sample, check) outcome; ``RunReport``
holds a run's results, its settings, whether it was interrupted, and the
comparison with a baseline. Formats render a ``RunReport``; nothing here
checks anything.
"""
from __future__ import annotations

import copy
from collections import Counter, defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from enum import IntEnum


class ExitCode(IntEnum):
    """The status a run ends with (the ``adcheck`` command exits with it)."""

    OK = 0             # every check passed
    FAILED = 1         # a check failed (a wrong formula)
    USAGE = 2          # bad input, an output that cannot be written, workers that cannot run
    EMPTY = 3          # nothing failed, but some op or target had no check judged (all skipped)
    HANGUP = 129       # SIGHUP (128 + 1); the partial report was written
    INTERRUPTED = 130  # Ctrl-C, SIGINT (128 + 2); the partial report was written
    TERMINATED = 143   # SIGTERM (128 + 15), as CI sends on cancel; the partial report was written


#: the exit status of a run stopped by each signal
STOPPED_BY = {"SIGHUP": ExitCode.HANGUP, "SIGINT": ExitCode.INTERRUPTED,
              "SIGTERM": ExitCode.TERMINATED}

#: statuses, in the order summaries show them
STATUSES = ("passed", "failed", "known-failure", "skipped", "error")
#: statuses that make a run fail (unless a baseline accepts them)
FAILING = ("failed", "error")
#: statuses that are a verdict on a formula (a skip and an error are not)
JUDGED = ("passed", "failed", "known-failure")
#: how a skip begins when the op declares the check's mode unsupported (``runner.checks``):
#: a non-differentiable op such as ``eq``, not checked by design
DECLARED = "the op does not declare support for "
#: the ``settings`` key that lets a run with unjudged ops exit 0 (``--allow-empty``)
ALLOW_EMPTY = "allow_empty"
#: the check name of an outcome that concerns a whole task (setup, timeout)
TASK_CHECK = "setup"
#: how the message of a passed check declared a known failure begins (a stale declaration)
STALE = "passed although declared a known failure"
#: how many failing pairs of a check keep their Jacobians (the HTML report draws them)
JACOBIAN_PAIRS = 4
#: fields that stay in memory only: never in ``to_dict()``, so never in JSON
_IN_MEMORY = {"compare": False, "repr": False, "metadata": {"json": False}}


@dataclass
class CheckResult:
    """One check of one sample of one op, or a task-level error (check "setup").

    ``message`` is one line: why it failed, was skipped, or errored.
    ``failures`` holds gradcheck's per-pair results (``Result.to_dict()``
    without the matrices) for a failed check. ``precision`` says, for a
    precise check of a formula narrower than double precision, what it was
    compared with and the smallest relative error it could detect
    (``resolution``; the coarsest of its pairs). ``unbatched`` says why the
    check's Jacobians were built, wholly or partly, one vector at a time
    (``None`` when every evaluation was batched). ``dispute``, for a failed
    check of PyTorch's op_db in double precision: torch's gradcheck's verdict
    on the same sample and, where they disagree, the evidence of who is right. For the HTML report a failed
    check also keeps, in memory only, ``jacobians``: ``(expected, actual)``
    NumPy blocks of its first ``JACOBIAN_PAIRS`` failing pairs (``None`` for
    a pair with no matrix). ``runner.rebuild`` reruns any check from its
    ``op``, ``dtype``, ``sample`` and ``check`` and the run's settings.
    """

    op: str
    dtype: str
    sample: int | None
    check: str
    status: str
    message: str = ""
    diagnosis: str | None = None
    seconds: float = 0.0
    seed: int | None = None
    family: str = ""
    sample_name: str = ""
    failures: list = field(default_factory=list)
    unbatched: str | None = None
    precision: str | None = None
    resolution: float | None = None
    #: for a failed check of a registry that has another verdict on the sample
    #: (torch's gradcheck on op_db), whether it agrees and, if not, who is right
    dispute: str | None = None
    #: how the check's Jacobians were built (``gradcheck.Report.plan``: dense,
    #: compressed, chunked, probed), and for a probed one the odds that an entry
    #: wrong by ``relative_error`` of its row's norm escaped, by AD mode
    plan: str | None = None
    escape: dict | None = None
    #: for an error: the traceback of the user's code, its frames only
    #: (``runner.tracebacks``), or ``None`` when none of its frames is the user's
    traceback: str | None = None
    jacobians: list = field(default_factory=list, **_IN_MEMORY)

    @property
    def key(self) -> str:
        """A stable identity across runs: ``op|dtype|sample|check``."""
        sample = "*" if self.sample is None else str(self.sample)
        return f"{self.op}|{self.dtype}|{sample}|{self.check}"

    @property
    def failing(self) -> bool:
        return self.status in FAILING

    @property
    def stale(self) -> bool:
        """Passed although a known failure is declared for it: the declaration is stale."""
        return self.status == "passed" and self.message.startswith(STALE)

    def to_dict(self) -> dict:
        data = {f.name: copy.deepcopy(getattr(self, f.name)) for f in fields(self)
                if f.metadata.get("json", True)}
        data["key"] = self.key
        return data


@dataclass
class BaselineDiff:
    """A run against a baseline: failures that are ``new``, ``accepted``
    (listed in the baseline) and baseline entries that now pass (``fixed``)."""

    path: str
    new: list = field(default_factory=list)
    accepted: list = field(default_factory=list)
    fixed: list = field(default_factory=list)


@dataclass
class RunReport:
    """Everything a run of ``adcheck ops``, ``op`` or ``check`` found.

    ``interrupted``: a stop signal (``signal``: "SIGINT", "SIGTERM" or
    "SIGHUP") ended the run early; ``error``: why the run could not go on
    (the worker processes cannot run its tasks); ``output_error``: an output
    that could not be written. Each makes the results partial or the run
    unusable, and the exit status says so.
    """

    command: str
    #: how the run was asked for (``runner.record.RunRecord``)
    settings: Mapping
    results: list = field(default_factory=list)
    interrupted: bool = False
    stopped_early: bool = False
    signal: str | None = None
    error: str | None = None
    output_error: str | None = None
    seconds: float = 0.0
    baseline: BaselineDiff | None = None
    #: the ``runner.tasks.SampleOutcome``s the results came in (with gradcheck's
    #: reports when the run kept them: ``adcheck op``'s detailed view draws them)
    samples: list = field(default_factory=list, repr=False)
    #: the op a single-op run is about, as ``runner.registry.describe`` gives it
    subject: dict | None = None
    #: a shard's place in the whole run (``runner.shard.record``), ``{"merged": N}``
    #: for the report ``adcheck merge`` made of N shards, ``None`` for a whole run
    shard: dict | None = None

    def counts(self) -> dict:
        found = Counter(r.status for r in self.results)
        return {status: found.get(status, 0) for status in STATUSES}

    def failing(self) -> list:
        return [r for r in self.results if r.failing]

    def stale(self) -> list:
        """The passed checks declared known failures (see ``CheckResult.stale``)."""
        return [r for r in self.results if r.stale]

    def unjudged(self) -> dict:
        """``{op: [reason, ...]}`` for each op or target whose every result was
        skipped: nothing about its formulas was judged. The reasons are the
        distinct skip messages, each prefixed by the checks it applies to.
        An op with an error is left out: its error already fails the run."""
        by_op: dict = defaultdict(list)
        for r in self.results:
            by_op[r.op].append(r)
        found = {}
        for op, results in by_op.items():
            if all(r.status == "skipped" for r in results):
                reasons: dict = defaultdict(list)
                for r in results:
                    reasons[r.message or "no reason given"].append(r.check)
                found[op] = [f"{', '.join(dict.fromkeys(checks))}: {message}"
                             for message, checks in reasons.items()]
        return found

    def empty(self) -> bool:
        """Whether the run leaves something unchecked that the exit status must
        say: an op or target with every check skipped for a reason other than
        the op's own declaration (``DECLARED``), or, when every skip is such a
        declaration, a run that judged nothing at all."""
        unjudged = self.unjudged()
        if not unjudged:
            return False
        if any(not declared(r) for r in self.results if r.op in unjudged):
            return True
        return not any(r.status in JUDGED for r in self.results)

    def exit_code(self) -> ExitCode:
        """0 when nothing failed (or every failure is in the baseline) and every
        op had a check judged; 1 when a check failed or errored; 3 when nothing
        failed but some op or target had every check skipped (``empty``; 0
        with ``settings["allow_empty"]``); 2 when the workers could not run or an
        output could not be written; 128 + the signal's number when stopped by
        one (130 for Ctrl-C)."""
        if self.error is not None or self.output_error is not None:
            return ExitCode.USAGE
        if self.interrupted:
            return STOPPED_BY.get(self.signal or "SIGINT", ExitCode.INTERRUPTED)
        failed = bool(self.baseline.new) if self.baseline is not None else bool(self.failing())
        if failed:
            return ExitCode.FAILED
        if self.empty() and not self.settings.get(ALLOW_EMPTY, False):
            return ExitCode.EMPTY
        return ExitCode.OK

    def by_op_and_check(self) -> dict:
        """``{op: {check: Counter(status)}}`` in the order results arrived."""
        table: dict = defaultdict(lambda: defaultdict(Counter))
        for r in self.results:
            table[r.op][r.check][r.status] += 1
        return table

    def checks(self) -> list:
        """The check names that occur, in order of first appearance ("setup" last)."""
        found = list(dict.fromkeys(r.check for r in self.results))
        return sorted(found, key=lambda check: check == TASK_CHECK)

    def slowest(self, n: int = 5) -> list:
        """``[(op, seconds)]`` for the ``n`` ops that took longest in total."""
        total: Counter = Counter()
        for r in self.results:
            total[r.op] += r.seconds
        return sorted(total.items(), key=lambda item: (-item[1], item[0]))[:n]


def declared(result: CheckResult) -> bool:
    """Whether ``result`` is a skip the op declared: it supports no such mode."""
    return result.status == "skipped" and result.message.startswith(DECLARED)
