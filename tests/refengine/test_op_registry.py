"""The opinfo registry the op tests walk: coverage of refengine's public ops,
lookups, registration, plugins, entry points, and reproducible samples."""
from __future__ import annotations

import numpy as np
import pytest

from adcheck import opinfo
import adcheck.refengine as E
from adcheck.opinfo import registry
from adcheck.opinfo.samples import make
from adcheck.refengine.ops import FUNCTIONS
from adcheck.refengine.ops.opdef import OPS


def test_every_public_refengine_op_has_an_opinfo():
    covered = {info.op for info in opinfo.op_db}
    missing = sorted(name for name, fn in FUNCTIONS.items() if fn not in covered)
    assert not missing, f"public refengine ops without an OpInfo: {missing}"


def test_every_opinfo_family_mirrors_a_refengine_ops_module():
    modules = {op.forward.__module__.rsplit(".", 1)[-1] for op in OPS.values()}
    # built-in OpInfos only: plugins loaded by other tests bring their own families
    builtin = {info.family for info in opinfo.builtin_ops()}
    assert builtin <= modules, builtin - modules


def test_get_suggests_close_names():
    with pytest.raises(KeyError, match="did you mean 'sin'"):
        opinfo.get("sinn")


def test_register_refuses_a_duplicate_name():
    clone = opinfo.OpInfo("sin", E.sin, sample_func=lambda o, d: iter(()))
    with pytest.raises(ValueError, match="already registered"):
        opinfo.register(clone)


def test_tolerance_override_needs_a_reason():
    with pytest.raises(ValueError, match="reason"):
        opinfo.OpInfo("x", E.sin, sample_func=lambda o, d: iter(()),
                      tolerances={E.float64: opinfo.Tolerance(1e-3, 1e-3)})


def test_a_sample_is_reproducible_alone():
    info = opinfo.get("log")
    all_samples = list(info.sample_inputs(E.float64))
    again = info.sample(3, E.float64)
    assert again.seed == all_samples[3].seed == opinfo.seed_for("log", 3)
    np.testing.assert_array_equal(again.input.numpy(), all_samples[3].input.numpy())


def test_samples_respect_their_domain():
    for name, low, high in (("log", 0.1, 3.0), ("acos", -0.9, 0.9)):
        for s in opinfo.get(name).sample_inputs(E.float64):
            x = s.input.numpy()
            assert ((x >= low) & (x <= high)).all(), (name, x)
    for s in opinfo.get("tan").sample_inputs(E.float64):
        assert (np.abs(np.abs(s.input.numpy()) - np.pi / 2) >= 0.2).all()


def test_requires_grad_only_on_floating_tensors():
    s = opinfo.get("gather").sample(0, E.float64, requires_grad=True)
    assert s.input.requires_grad and not s.args[1].requires_grad


def _plugin(tmp_path, body: str):
    path = tmp_path / "my_ops.py"
    path.write_text(body)
    return path


def test_load_plugin_registers_its_opinfos(tmp_path):
    path = _plugin(tmp_path, (
        "import adcheck.refengine as E\nfrom adcheck.opinfo import OpInfo\nfrom adcheck.opinfo.samples import unary\n"
        "OPINFOS = [OpInfo('plugin_double', lambda x: x * 2, family='plugin', "
        "sample_func=unary())]\n"))
    try:
        assert opinfo.load_plugin(path) == ["plugin_double"]
        assert opinfo.get("plugin_double").family == "plugin"
    finally:
        _forget("plugin_double")


@pytest.mark.parametrize("body, message", [(None, "no such file"),
                                           ("def broken(:\n", "SyntaxError"),
                                           ("raise RuntimeError('boom')\n", "boom")])
def test_load_plugin_errors_are_clear(tmp_path, body, message):
    path = tmp_path / "missing.py" if body is None else _plugin(tmp_path, body)
    with pytest.raises(ValueError, match=message):
        opinfo.load_plugin(path)


def test_entry_points_are_discovered(monkeypatch):
    class FakeEntryPoint:
        name, value = "fake", "fake_pkg:ops"

        def load(self):
            return lambda: [opinfo.OpInfo("ep_square", lambda x: x * x,
                                          sample_func=lambda o, d: iter(()))]

    monkeypatch.setattr(registry.metadata, "entry_points",
                        lambda group: [FakeEntryPoint()] if group == "adcheck.ops" else [])
    try:
        assert opinfo.load_entry_points() == ["fake"]
        assert opinfo.get("ep_square").name == "ep_square"
    finally:
        _forget("ep_square")


def test_a_broken_entry_point_warns_instead_of_breaking_the_registry(monkeypatch):
    class Broken:
        name, value = "broken", "nowhere:ops"

        def load(self):
            raise ImportError("no module named nowhere")

    monkeypatch.setattr(registry.metadata, "entry_points", lambda group: [Broken()])
    with pytest.warns(opinfo.PluginWarning, match="nowhere"):
        assert opinfo.load_entry_points() == []
    with pytest.raises(ValueError, match="nowhere"):
        opinfo.load_entry_points(strict=True)


def test_known_failure_needs_a_reason_and_a_known_check():
    with pytest.raises(ValueError, match="reason"):
        opinfo.KnownFailure("reverse", "")
    with pytest.raises(ValueError, match="not one of"):
        opinfo.KnownFailure("sideways", "because")


def test_fixed_values_and_transforms():
    spd = opinfo.samples.spd(3).array(np.random.default_rng(0), E.float64)
    assert np.all(np.linalg.eigvalsh(spd) > 0) and np.allclose(spd, spd.T)
    fixed = make((3,), values=(0.0, 1.0, 2.0)).array(np.random.default_rng(0), E.float64)
    np.testing.assert_array_equal(fixed, [0.0, 1.0, 2.0])


def _forget(name):
    info = registry._by_name.pop(name, None)
    if info is not None:
        registry.op_db.remove(info)
