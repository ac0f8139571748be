"""Fixtures shared by the test folders."""
import sys

import pytest


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
