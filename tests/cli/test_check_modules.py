"""adcheck check MODULE:CLASS: a layer checked in its inputs and its parameters.

The layers (``fixtures/user_modules.py``) are refengine modules built in
float32; the wrong one's weight gradient is twice the right one, which
finite differences see (gradcheck's own tests hold that oracle: here the
command must carry the parameter's name and the diagnosis to every output).
"""
import pytest
from cli_paths import USER_MODULES


def test_a_wrong_weight_gradient_fails_naming_the_weight(run_json):
    result, doc = run_json("check", f"{USER_MODULES}:WrongLinear", "--inputs", "randn(5, 3)")
    assert result.exit_code == 1
    assert doc["settings"]["kind"] == "refengine Module"
    (reverse,) = [r for r in doc["results"] if r["check"] == "reverse"]
    assert reverse["status"] == "failed" and "2 times numerical" in reverse["diagnosis"]
    assert [(f["in_idx"], f["in_name"]) for f in reverse["failures"]] == [(1, "weight")]
    assert "input 1 (weight)" in reverse["message"]


def test_forward_is_skipped_when_the_layer_has_no_jvp(run_json):
    _, doc = run_json("check", f"{USER_MODULES}:GoodLinear", "--inputs", "randn(5, 3)")
    statuses = {r["check"]: (r["status"], r["message"]) for r in doc["results"]}
    assert statuses["reverse"][0] == "passed"
    assert statuses["forward"][0] == "skipped"
    assert "forward mode does not run through the module" in statuses["forward"][1]


def test_a_factory_builds_the_module(run):
    result = run("check", f"{USER_MODULES}:make_wrong", "--inputs", "randn(2, 4)", "-q")
    assert result.exit_code == 1 and "input 1 (weight)" in result.stdout


def test_a_module_instance_is_checked_as_it_is(run):
    result = run("check", f"{USER_MODULES}:instance", "--inputs", "randn(2, 3)", "-q")
    assert result.exit_code == 1 and "input 1 (weight)" in result.stdout


def test_the_module_is_built_from_the_seed(run_json):
    # the initial weights come from the seeded generator, though the warm worker's
    # generator has moved on since: the same run twice is the same run
    args = ("check", f"{USER_MODULES}:WrongLinear", "--check", "reverse", "--inputs",
            "randn(5, 3)")
    first, again = run_json(*args)[1], run_json(*args)[1]
    other = run_json(*args, "--seed", "1")[1]
    errors = [d["results"][0]["failures"][0]["max_error"] for d in (first, again, other)]
    assert errors[0] == errors[1] != errors[2]


@pytest.mark.parametrize("target, expected", [
    ("NeedsSizes", "constructing NeedsSizes() raised TypeError"),
    ("make_nothing", "a function of no argument must return an nn.Module"),
    ("make_broken", "calling make_broken() raised RuntimeError: the factory is broken"),
])
def test_a_module_that_cannot_be_built_exits_2_saying_why(run, target, expected):
    result = run("check", f"{USER_MODULES}:{target}")
    assert result.exit_code == 2
    assert expected in result.stderr


def test_a_torch_module_is_checked_on_torch():
    pytest.importorskip("torch", reason="torch is not installed")
    from click.testing import CliRunner

    from adcheck.cli.main import cli
    result = CliRunner().invoke(cli, ["check", f"{USER_MODULES}:make_torch_layer", "--inputs",
                                      "randn(4, 3)", "--check", "reverse", "--format", "json"])
    assert result.exit_code == 0, result.output
    assert '"kind": "torch Module"' in result.stdout


def test_a_module_taking_only_indices_is_checked_in_its_parameters_in_double(run_json):
    pytest.importorskip("torch", reason="torch is not installed")
    # before: refused ("every input is nograd or an integer, so there is nothing to
    # differentiate"), and with a float input beside, the parameters stayed float32
    result, doc = run_json("check", f"{USER_MODULES}:make_torch_embedding", "--inputs",
                           "randint(10, 3, 5) int64")
    assert result.exit_code == 0, result.stdout
    reverse = [r for r in doc["results"] if r["check"] == "reverse"]
    assert [r["status"] for r in reverse] == ["passed"]
    # judged in double precision: no narrower formula's resolution or precision noted
    assert reverse[0]["resolution"] is None and reverse[0]["precision"] is None


def test_integer_inputs_do_not_decide_the_parameters_precision():
    torch = pytest.importorskip("torch", reason="torch is not installed")
    from adcheck.gradcheck.core.modules import doubles_parameters
    idx = torch.zeros(3, dtype=torch.int64)
    assert doubles_parameters((idx,))
    assert doubles_parameters((torch.zeros(3, dtype=torch.float64), idx))
    assert not doubles_parameters((torch.zeros(3, dtype=torch.float32), idx))
    assert not doubles_parameters(())

