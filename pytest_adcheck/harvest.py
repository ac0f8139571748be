"""``pytest --adcheck-harvest``: the custom Functions a test suite applies,
each checked at the inputs the tests gave it, as test items of their own.

While the suite's own tests run, ``gradcheck.harvest``'s recorder records
every application of a custom ``torch.autograd.Function``, ``torch.library``
custom op with autograd or refengine ``Function``; the first application of
each Function with each set of input shapes is kept. After the suite, each
kept application runs as one more test item, ``adcheck-harvest::Class[shapes]``,
that passes, fails with adcheck's report, or is skipped saying why (applied
under ``no_grad``, ...). Loaded only with the option: gradcheck is imported
then, not in a plain pytest run.
"""
from __future__ import annotations

import pytest

from pytest_adcheck.threads import checking

#: the prefix of the harvested items' ids
PREFIX = "adcheck-harvest"


class HarvestItem(pytest.Item):
    """One harvested Function at one set of input shapes."""

    def __init__(self, *, app, first_test: str, seed: int, **kwargs):
        super().__init__(**kwargs)
        self.app, self.first_test, self.seed = app, first_test, seed
        self.report = None

    def runtest(self):
        from adcheck.gradcheck.harvest.api import check_sample
        from adcheck.gradcheck.harvest.targets import has_jvp, sample
        made = sample(self.app)
        if made.skip is not None:
            pytest.skip(made.skip)
        with checking():
            self.report = check_sample(self.nodeid, made, has_jvp(self.app.cls), seed=self.seed)
        if not self.report.passed:
            raise HarvestFailure(self.report.message())

    def repr_failure(self, excinfo, style=None):
        if isinstance(excinfo.value, HarvestFailure):
            return (f"{excinfo.value}\n(applied first by {self.first_test}, at the inputs "
                    "that test gave it)")
        return super().repr_failure(excinfo, style)

    def reportinfo(self):
        return self.path, None, f"{self.nodeid} (first applied by {self.first_test})"


class HarvestFailure(AssertionError):
    """A harvested Function's check failed; the message is adcheck's report."""


def _shapes(app) -> str:
    return ", ".join(str(tuple(s)) for s in app.shapes())


class HarvestPlugin:
    """Records during the suite, then runs one item per Function and shape."""

    def __init__(self, config):
        from adcheck.gradcheck.harvest.recording import Recorder
        self.config = config
        self.recorder = Recorder(None, root="")
        self.kept: dict = {}        # (class, shapes) -> (application, first test's id)
        self.recorder.__enter__()

    def unpatch(self) -> None:
        self.recorder.__exit__(None, None, None)

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_call(self, item):
        self.recorder.applications.clear()
        yield
        from adcheck.gradcheck.harvest.targets import unchecked
        for app in self.recorder.applications:
            key = (app.cls, app.shapes())
            if isinstance(item, HarvestItem):
                continue
            if key not in self.kept or (unchecked(self.kept[key][0]) and not unchecked(app)):
                self.kept[key] = (app, item.nodeid)     # the gradient's call over a no_grad one
        self.recorder.applications.clear()

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtestloop(self, session):
        yield
        self.unpatch()      # the checks call the Functions again: not to be recorded
        if session.shouldfail or session.shouldstop:
            return
        seed = self.config.getoption("adcheck_seed")
        items = []
        for app, test in self.kept.values():
            name = f"{app.class_name}[{_shapes(app)}]"
            items.append(HarvestItem.from_parent(session, name=name, nodeid=f"{PREFIX}::{name}",
                                                 app=app, first_test=test, seed=seed))
        session.testscollected += len(items)       # the progress counts them too
        for i, item in enumerate(items):
            nextitem = items[i + 1] if i + 1 < len(items) else None
            item.ihook.pytest_runtest_protocol(item=item, nextitem=nextitem)

    def pytest_unconfigure(self, config):
        self.unpatch()

    def pytest_terminal_summary(self, terminalreporter):
        count = len(self.kept)
        terminalreporter.write_line(
            f"adcheck-harvest: {count} custom Function{'s' if count != 1 else ''} (by input "
            "shapes) applied by the tests, each checked as an item"
            if count else "adcheck-harvest: the tests applied no custom Function; nothing "
                          "was harvested")


def register(config) -> None:
    """Register the harvest plugin when ``--adcheck-harvest`` is given."""
    if not config.getoption("adcheck_harvest", False):
        return
    import importlib.util
    # the engines whose Function.apply the recorder patches must be loaded first
    import adcheck.refengine  # noqa: F401
    if importlib.util.find_spec("torch") is not None:
        import torch  # noqa: F401
    config.pluginmanager.register(HarvestPlugin(config), "adcheck-harvest")
