"""An op no case of which was judged fails the session, as ``adcheck ops`` exits 3.

Each ``adcheck_case`` test that calls ``assert_passes`` sends, with its
report, whether any of its checks was judged and why the others were
skipped (``plugin.pytest_runtest_makereport``). ``Verdicts`` gathers them
per marked test and op, in the process that ends the session (pytest-xdist's
controller, or the one process), names each op with nothing judged in the
terminal summary and, unless ``--adcheck-allow-empty``, turns a passing
session's exit status into 1 (pytest's "tests failed": pytest's own
statuses 2 to 5 mean other things).
"""
from __future__ import annotations

import pytest

#: the name of the user property a case's verdict travels in
PROPERTY = "adcheck_verdict"


class Verdicts:
    """The verdicts of a session's cases, per (marked test, op)."""

    def __init__(self, config):
        self.config = config
        self.judged: dict = {}     # (test, op) -> judged by some case
        self.reasons: dict = {}    # (test, op) -> the distinct skip reasons
        self.declared: dict = {}   # (test, op) -> every skip declared by the op

    def pytest_runtest_logreport(self, report):
        for name, value in report.user_properties:
            if name == PROPERTY:
                test, op, judged, reasons, declared = value
                key = (test, op)
                self.judged[key] = self.judged.get(key, False) or bool(judged)
                self.declared[key] = self.declared.get(key, True) and bool(declared)
                known = self.reasons.setdefault(key, {})
                known.update(dict.fromkeys(reasons))

    def unjudged(self) -> dict:
        """``{(test, op): [reason, ...]}`` for each op no case of which was judged."""
        return {key: list(self.reasons[key]) for key, judged in self.judged.items()
                if not judged}

    def empty(self) -> bool:
        """As ``RunReport.empty``: an op with nothing judged for a reason other than
        its own declaration (a non-differentiable op), or nothing judged at all."""
        unjudged = self.unjudged()
        return bool(unjudged) and (not all(self.declared[key] for key in unjudged)
                                   or not any(self.judged.values()))

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self, session, exitstatus):
        allowed = self.config.getoption("adcheck_allow_empty", False)
        if self.empty() and not allowed and exitstatus == pytest.ExitCode.OK:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED

    def pytest_terminal_summary(self, terminalreporter):
        found = self.unjudged()
        if not self.empty():
            return
        terminalreporter.section("adcheck: nothing checked", yellow=True)
        for (test, op), reasons in found.items():
            terminalreporter.line(f"NOT CHECKED {op} ({test}): every check of every case "
                                  f"was skipped ({'; '.join(reasons)})")
        allowed = self.config.getoption("adcheck_allow_empty", False)
        terminalreporter.line(
            f"{len(found)} op{'' if len(found) == 1 else 's'} had nothing judged: " +
            ("accepted by --adcheck-allow-empty" if allowed else
             "the session fails (pass --adcheck-allow-empty to accept)"))
