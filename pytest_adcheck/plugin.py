"""The pytest hooks and fixtures of adcheck's plugin.

This module loads in every pytest run of every project that installs
adcheck, so it imports only pytest and the standard library; the registry,
refengine and gradcheck are imported when a test asks for them.
"""
from __future__ import annotations

from pathlib import Path

import pytest

from pytest_adcheck import kernelcases, threads
from pytest_adcheck.assertion import assert_gradients as _assert_gradients

MARKER = "adcheck_ops"
CASE_ARG = "adcheck_case"
_MARKER_HELP = (f"{MARKER}(*patterns, family=None, dtypes=None, checks=None, "
                "engine=None, registry='opinfo', explore='quick'): one test per OpInfo, "
                "dtype and sample of "
                "adcheck's registry, or of PyTorch's op_db with registry='torch' (name "
                "patterns are globs such as 'log*'; engine='torch' checks torch's own "
                "formulas; the first sample's quick pass of special points runs unless "
                "explore=False, explore=True or a budget in seconds searches them in full, "
                "see docs/explore.md); the test takes an "
                "`adcheck_case` argument and usually calls adcheck_case.assert_passes().")
#: the keywords the marker takes
MARKER_KEYWORDS = ("family", "dtypes", "checks", "engine", "registry", "explore")
#: the plugin files loaded, for the reproducers (config.stash)
PLUGIN_FILES = pytest.StashKey[tuple]()


def pytest_addoption(parser):
    """``--adcheck-plugin FILE`` and ``--adcheck-seed N`` (and ini ``adcheck_plugins``)."""
    group = parser.getgroup("adcheck", "adcheck gradient checks")
    group.addoption("--adcheck-plugin", action="append", default=[], metavar="FILE",
                    dest="adcheck_plugins",
                    help="Load the OpInfos of this Python file into adcheck's registry "
                         "before collection (repeatable); see opinfo.load_plugin.")
    group.addoption("--adcheck-seed", type=int, default=0, metavar="N", dest="adcheck_seed",
                    help="Base seed of the random probes of @pytest.mark.adcheck_ops tests, "
                         "as 'adcheck ops --seed' (default: 0).")
    group.addoption("--adcheck-shard", type=_shard, default=None, metavar="K/N",
                    dest="adcheck_shard",
                    help="Collect only shard K of N of each @pytest.mark.adcheck_ops "
                         "selection, as 'adcheck ops --shard K/N' (for CI matrices; every "
                         "pytest-xdist worker collects the same shard).")
    group.addoption("--adcheck-allow-empty", action="store_true", default=False,
                    dest="adcheck_allow_empty",
                    help="Do not fail the session when every case of an op in an "
                         "@pytest.mark.adcheck_ops test was skipped (nothing was "
                         "checked), as 'adcheck ops --allow-empty'.")
    group.addoption("--adcheck-harvest", action="store_true", dest="adcheck_harvest",
                    help="Record the custom autograd Functions (torch, torch.library custom "
                         "ops, refengine) the tests apply, and after them check each, once "
                         "per Function and input shapes, at the inputs the tests used, as "
                         "test items adcheck-harvest::Class[shapes] (docs/harvest.md).")
    parser.addini("adcheck_plugins", type="paths", default=[],
                  help="OpInfo plugin files to load (paths relative to the ini file).")


@pytest.hookimpl(tryfirst=True)
def pytest_load_initial_conftests(early_config, parser, args):
    """Keep the rootdir and ini file that ``--adcheck-plugin FILE`` (with a space)
    would otherwise move (see ``pytest_adcheck.rootdir``)."""
    from pytest_adcheck.rootdir import correct
    correct(early_config, parser, args)


def _shard(text: str) -> tuple:
    """``--adcheck-shard``'s value as ``(k, n)`` (argparse reports a bad one)."""
    import argparse

    from adcheck.runner.errors import RunnerError
    from adcheck.runner.shard import parse_shard
    try:
        return parse_shard(text)
    except RunnerError as exc:
        raise argparse.ArgumentTypeError(str(exc).replace("--shard", "--adcheck-shard")) \
            from None


def pytest_configure(config):
    """Register the marker (for ``--strict-markers``) and load the plugin files."""
    config.addinivalue_line("markers", _MARKER_HELP)
    config.addinivalue_line("markers", kernelcases.HELP)
    if config.getoption("adcheck_harvest", False):
        from pytest_adcheck.harvest import register
        register(config)
    base = config.invocation_params.dir
    paths = [base / p for p in config.getoption("adcheck_plugins")]
    paths += [Path(p) for p in config.getini("adcheck_plugins")]
    config.stash[PLUGIN_FILES] = tuple(str(p.resolve()) for p in paths)
    if paths:
        _load_plugin_files(paths)
    threads.seen(config)
    if not hasattr(config, "workerinput"):   # pytest-xdist's controller, or no xdist
        from pytest_adcheck.verdicts import Verdicts
        config.pluginmanager.register(Verdicts(config), "adcheck-verdicts")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """Send a case's verdict (judged, or every check skipped) with its report, so
    the process that ends the session (xdist's controller too) sees it."""
    outcome = yield
    callspec = getattr(item, "callspec", None)
    case = callspec.params.get(CASE_ARG) if call.when == "call" and callspec else None
    verdict = getattr(case, "verdict", None)
    if verdict is not None:
        from pytest_adcheck.verdicts import PROPERTY
        outcome.get_result().user_properties.append(
            (PROPERTY, (item.nodeid.split("[", 1)[0], case.op_name, *verdict)))


def _load_plugin_files(paths: list) -> None:
    from adcheck import opinfo
    for path in paths:
        try:
            opinfo.load_plugin(path)
        except ValueError as exc:
            raise pytest.UsageError(f"adcheck: {exc}") from None


def pytest_generate_tests(metafunc):
    """Turn a test marked ``adcheck_ops`` into one test per op, dtype and sample,
    and one marked ``adcheck_kernel`` into one per kernel, dtype and comparison
    (``pytest_adcheck.kernelcases``)."""
    if metafunc.definition.get_closest_marker(kernelcases.MARKER) is not None:
        return kernelcases.parametrize(metafunc)
    marker = metafunc.definition.get_closest_marker(MARKER)
    if marker is None:
        return
    if CASE_ARG not in metafunc.fixturenames:
        pytest.fail(f"{metafunc.definition.nodeid}: a test marked {MARKER} must take an "
                    f"argument named {CASE_ARG!r}", pytrace=False)
    from pytest_adcheck.cases import SelectionError, plan_cases
    unknown = set(marker.kwargs) - set(MARKER_KEYWORDS)
    if unknown:
        pytest.fail(f"{metafunc.definition.nodeid}: {MARKER}: takes the keywords "
                    f"{', '.join(MARKER_KEYWORDS)}, not {', '.join(sorted(unknown))}",
                    pytrace=False)
    problem = None
    config = metafunc.config
    try:
        cases = plan_cases(marker.args, seed=config.getoption("adcheck_seed"),
                           plugins=config.stash.get(PLUGIN_FILES, ()),
                           shard=config.getoption("adcheck_shard"), **marker.kwargs)
    except SelectionError as exc:
        problem = str(exc)
    if problem is not None:  # outside the except: the report shows no chained traceback
        pytest.fail(f"{metafunc.definition.nodeid}: {MARKER}: {problem}", pytrace=False)
    metafunc.parametrize(CASE_ARG, cases, ids=[case.id for case in cases])


@pytest.fixture(name="assert_gradients")
def assert_gradients_fixture():
    """``pytest_adcheck.assert_gradients``, for tests that would rather not import it."""
    return _assert_gradients


@pytest.fixture(name=kernelcases.CASE_ARG)
def adcheck_kernel_fixture(request):
    """One kernel, dtype and comparison (a ``KernelCase``); given by
    ``@pytest.mark.adcheck_kernel``."""
    pytest.fail(f"{request.node.nodeid}: the {kernelcases.CASE_ARG!r} argument comes from the "
                f"{kernelcases.MARKER} marker; add @pytest.mark.{kernelcases.MARKER}(my_kernel, "
                "against=my_reference, inputs=...) to the test", pytrace=False)


@pytest.fixture(name=CASE_ARG)
def adcheck_case_fixture(request):
    """One OpInfo, dtype and sample (an ``OpCase``); given by ``@pytest.mark.adcheck_ops``."""
    pytest.fail(f"{request.node.nodeid}: the {CASE_ARG!r} argument comes from the {MARKER} "
                f"marker; add @pytest.mark.{MARKER}('sin', ...) to the test", pytrace=False)
