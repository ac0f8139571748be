"""Plugin files load once per process, but a run sees only the plugin ops it
asked for (issue 29, item 9): a library user who runs twice with different
plugin files does not get the union in the second run."""
import pytest

from adcheck.runner.registry import OpinfoRegistry, named

PLUGIN = '''
import adcheck.refengine as E
from adcheck.opinfo import OpInfo, register
from adcheck.opinfo.samples import unary

register(OpInfo("{name}", E.sin, family="per_run", sample_func=unary(),
                dtypes=(E.float64,)))
'''


def _plugin(tmp_path, name):
    path = tmp_path / f"{name}.py"
    path.write_text(PLUGIN.format(name=name))
    return str(path)


def _per_run(registry) -> set:
    return {info.name for info in registry.ops() if info.family == "per_run"}


def test_two_runs_with_different_plugins_each_see_their_own(tmp_path, restored_registry):
    first, second = _plugin(tmp_path, "per_run_a"), _plugin(tmp_path, "per_run_b")
    run_a = named("opinfo")
    assert run_a.load_plugins([first]) == ["per_run_a"]
    run_b = named("opinfo")
    assert run_b.load_plugins([second]) == ["per_run_b"]
    assert _per_run(run_a) == {"per_run_a"}
    assert _per_run(run_b) == {"per_run_b"}
    assert _per_run(OpinfoRegistry()) == set()      # a run with no plugin file
    assert run_b.get("per_run_b").name == "per_run_b"
    with pytest.raises(KeyError, match="plugin file this run does not load"):
        run_b.get("per_run_a")
    again = named("opinfo")                          # the file is not imported twice,
    assert again.load_plugins([first]) == ["per_run_a"]   # yet the run sees its ops
    assert _per_run(again) == {"per_run_a"}


def test_registries_with_other_plugin_files_are_not_equal(tmp_path, restored_registry):
    with_plugin = named("opinfo")
    with_plugin.load_plugins([_plugin(tmp_path, "per_run_eq")])
    assert with_plugin != OpinfoRegistry()
    again = named("opinfo")
    again.load_plugins([_plugin(tmp_path, "per_run_eq")])
    assert again == with_plugin and OpinfoRegistry() == OpinfoRegistry()
