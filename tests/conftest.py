"""Fixtures shared by the test folders, and the README's ``-n 2`` where
pytest-xdist is missing."""
import sys

import pytest

_NO_XDIST = False   # pytest-xdist's plugin was not loaded (set below)


def pytest_addoption(parser, pluginmanager):
    # (without xdist, pytest would refuse "-n 2" as an unknown argument and say
    # nothing of where it comes from; taken here, it is refused with the fix.
    # ``_addoption``, as xdist's own: ``addoption`` keeps short lowercase names
    # for pytest)
    global _NO_XDIST
    _NO_XDIST = not pluginmanager.has_plugin("xdist")
    if _NO_XDIST:
        parser.getgroup("xdist")._addoption(
            "-n", "--numprocesses", dest="numprocesses", default=None,
            help="run the tests on this many cores (needs pytest-xdist)")


def pytest_configure(config):
    if _NO_XDIST and config.getoption("numprocesses") is not None:
        raise pytest.UsageError(
            "-n runs the tests on several cores with pytest-xdist, which is not installed "
            "(or not loaded): pip install \".[xdist]\" (or leave out -n to run them on one "
            "core)")
    # (the tests take 0.01 s to 35 s: xdist's default, "load", deals each worker its
    # share in advance, and one worker could end its share a minute before the other;
    # "worksteal" gives an idle worker tests from the other's. Unless asked otherwise)
    if not _NO_XDIST and config.getoption("dist") == "load" and \
            not any(str(a).startswith("--dist") for a in config.invocation_params.args):
        config.option.dist = "worksteal"
    config.addinivalue_line(
        "markers", "torch_threads: the test runs with torch's own thread count, not one "
        "thread per xdist worker (a test of how many threads something computes on)")


@pytest.fixture
def restored_registry():
    """The registry, the loaded plugin files and their modules put back as they were
    after the test: plugin ops registered in this process would otherwise stay
    (a plugin module imported again registers again)."""
    from adcheck.opinfo import registry
    from adcheck.runner import registry as runner_registry
    ops, by_name = list(registry.op_db), dict(registry._by_name)
    loaded, modules = dict(runner_registry._PLUGIN_OPS), set(sys.modules)
    plugins = runner_registry.OPINFO.plugins
    yield
    runner_registry.OPINFO.plugins = plugins
    for name in set(sys.modules) - modules:
        if name.startswith("adcheck_plugin_"):
            del sys.modules[name]
    registry.op_db[:] = ops
    registry._by_name.clear()
    registry._by_name.update(by_name)
    runner_registry._PLUGIN_OPS.clear()
    runner_registry._PLUGIN_OPS.update(loaded)


@pytest.fixture(autouse=True)
def _mpmath_precision_restored():
    """mpmath's working precision put back after every test: some tests set
    ``mpmath.mp.dps`` for their references, and what a test leaves is the next
    test's in the same process (which tests share one depends on -n)."""
    import mpmath
    before = mpmath.mp.prec
    yield
    mpmath.mp.prec = before


def _torch_state() -> tuple:
    """``(torch.func's transform depth, torch's grad mode)``: what a test may leave
    behind for the tests after it in the same process."""
    torch = sys.modules.get("torch")
    if torch is None:
        return 0, True
    return torch._C._functorch.get_dynamic_layer_stack_depth(), torch.is_grad_enabled()


@pytest.fixture(autouse=True)
def _no_torch_state_left():
    """A test that leaves a torch.func level (vmap, grad, jvp) on torch's stack,
    or torch's grad mode switched, fails, by name, and the state is put back:
    left there, every later test of the same worker ran "inside" that vmap (one
    CI run: 277 tests of one worker failed with "vmap: We do not yet support
    calling random operations inside of vmap", none of them the one that left
    it)."""
    depth, grad = _torch_state()
    yield
    after, grad_after = _torch_state()
    left = []
    if after > depth:
        sys.modules["torch"]._C._functorch.pop_dynamic_layer_stack_and_undo_to_depth(depth)
        left.append(f"{after - depth} torch.func transform level(s) on torch's stack")
    if grad_after != grad:
        sys.modules["torch"].set_grad_enabled(grad)
        left.append(f"torch's grad mode {'on' if grad_after else 'off'}")
    if left:
        pytest.fail(f"the test left {' and '.join(left)} (put back now, so that the next "
                    f"tests run as they would alone)", pytrace=False)


@pytest.fixture(scope="session", autouse=True)
def _torch_on_one_thread_per_worker(request):
    """torch on one intra-op thread in each of several xdist workers, as
    ``adcheck``'s own workers run it (``runner.worker._one_thread``): with its
    default of a thread per core in each worker, the workers' OpenMP threads
    oversubscribe the cores and spin waiting for each other, and a test of a
    small torch function took 38 s beside a busy core where one thread takes
    16 s. Session-wide, so that module fixtures computing with torch run on one
    thread too; torch is imported by then if any collected test module uses it
    (none is imported for the tests that do not). A test marked
    ``torch_threads`` gets torch's own count back while it runs."""
    from adcheck.runner.threads import one_torch_thread
    torch = sys.modules.get("torch")
    # (xdist's own record: its environment variables reach a pytest a test starts too)
    workers = getattr(request.config, "workerinput", {}).get("workercount", 0)
    if torch is None or workers < 2:
        yield None
        return
    before = torch.get_num_threads()
    with one_torch_thread():   # (which leaves a count OMP_NUM_THREADS chose)
        yield before


@pytest.fixture(autouse=True)
def _torch_threads_as_given(request, _torch_on_one_thread_per_worker):
    """For a test marked ``torch_threads``: torch's thread count as it was
    before the session set one thread per worker, for the test's length."""
    before = _torch_on_one_thread_per_worker
    if before is None or request.node.get_closest_marker("torch_threads") is None:
        yield
        return
    import torch
    during = torch.get_num_threads()
    torch.set_num_threads(before)
    yield
    torch.set_num_threads(during)
