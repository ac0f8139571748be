"""Code of another engine that reading the function's own code cannot see (a
helper in another module, a ``functools.partial`` of a torch function, a plugin
OpInfo whose op is torch's) is told by what it raises on the engine's tensors.

Before, ``adcheck check`` said only "zeros_like(): argument 'input' (position
1) must be Tensor, not Tensor" (twice "Tensor": refengine's and torch's),
"make it run on refengine tensors", and ``adcheck ops --plugin`` "the op
raised TypeError: sin(): ...": nothing said the code is torch's, nor which
option checks it."""
from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="the code under check is torch's")

HELPER = """
import torch

def double(x):
    return torch.zeros_like(x) + 2 * x
"""

TARGETS = """
import functools
import torch
import foreign_helper_torch

def via_helper(x):
    return foreign_helper_torch.double(x)

scaled = functools.partial(torch.mul, other=3.0)
"""


@pytest.fixture
def targets(tmp_path):
    (tmp_path / "foreign_helper_torch.py").write_text(HELPER)
    (tmp_path / "torchcode.py").write_text(TARGETS)
    return tmp_path / "torchcode.py"


@pytest.mark.parametrize("name", ["via_helper", "scaled"])
@pytest.mark.parametrize("inputs", [(), ("--inputs", "randn(3, 4)")])
def test_torch_code_out_of_sight_is_a_usage_error_naming_the_option(run, targets, name,
                                                                    inputs):
    result = run("check", f"{targets}:{name}", *inputs, "-q")
    assert result.exit_code == 2, result.output
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and "Traceback" not in result.output
    assert f"torchcode.py:{name} looks like torch code" in lines[0]
    assert "on refengine tensors" in lines[0] and lines[0].endswith("add --engine torch")
    told = run("check", f"{targets}:{name}", *inputs, "--engine", "torch", "-q")
    assert told.exit_code == 0, told.output


def test_jax_code_out_of_sight_names_engine_jax(run, tmp_path):
    pytest.importorskip("jax", reason="the code under check is JAX's")
    (tmp_path / "foreign_helper_jax.py").write_text(
        "import jax.numpy as jnp\n\ndef wave(x):\n    return jnp.sin(x) * 2\n")
    (tmp_path / "jaxcode.py").write_text(
        "import foreign_helper_jax\n\ndef via_helper(x):\n"
        "    return foreign_helper_jax.wave(x)\n")
    result = run("check", f"{tmp_path / 'jaxcode.py'}:via_helper", "--inputs", "randn(3)", "-q")
    assert result.exit_code == 2, result.output
    assert "looks like jax code" in result.stderr and "add --engine jax" in result.stderr
    told = run("check", f"{tmp_path / 'jaxcode.py'}:via_helper", "--inputs", "randn(3)",
               "--engine", "jax", "-q")
    assert told.exit_code == 0, told.output


PLUGIN = """
import torch
import adcheck.refengine as E
from adcheck.opinfo import OpInfo
from adcheck.opinfo.samples import unary

OPINFOS = [OpInfo("cli_torch_sin", torch.sin, family="cli_mine", dtypes=(E.float64,),
                  sample_func=unary(shapes=((3,),)))]
"""


def test_a_plugin_op_of_torch_says_so_and_how_to_check_it(run, tmp_path):
    plugin = tmp_path / "torch_plugin.py"
    plugin.write_text(PLUGIN)
    result = run("ops", "cli_torch_sin", "--plugin", plugin, "-q")
    assert result.exit_code == 1, result.output
    assert "sin(): argument 'input'" in result.stdout            # torch's words stay
    assert "the op looks like torch code" in result.stdout
    assert "adcheck check FILE:FUNCTION --engine torch" in result.stdout
    assert "torch_name= and run adcheck ops --engine torch" in result.stdout


def test_the_library_says_so_when_given_the_other_engines_tensors():
    from adcheck import gradcheck
    from adcheck import refengine as E
    x = E.tensor(np.ones(3), requires_grad=True)
    with pytest.raises(gradcheck.GradcheckError) as caught:
        gradcheck.check(lambda t: torch.zeros_like(t) + t, (x,))
    assert "it looks like torch code" in str(caught.value)
    assert "check it on torch tensors (adcheck check: --engine torch)" in str(caught.value)


def _raised(func, *args) -> BaseException:
    try:
        func(*args)
    except Exception as exc:  # noqa: BLE001 - the exception is what is examined
        return exc
    raise AssertionError("it ran")


def test_only_another_engines_refusal_counts_as_its_code():
    from adcheck import refengine as E
    from adcheck.gradcheck.engines import foreign_engine
    x = E.tensor(np.ones(3), requires_grad=True)
    refused = _raised(torch.zeros_like, x)
    assert foreign_engine(refused, "refengine") == "torch"
    # torch's own refusal of a wrong argument is no sign of another engine's code
    assert foreign_engine(_raised(torch.zeros_like, 3), "torch") is None
    # a mistake of refengine code, or an error that is no TypeError, is none either
    assert foreign_engine(_raised(lambda: x + "a"), "refengine") is None
    assert foreign_engine(_raised(lambda: torch.ones(2) @ torch.ones(3)), "refengine") is None
