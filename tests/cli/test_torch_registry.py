"""adcheck ops/op/list --registry torch: PyTorch's op_db swept through the CLI.

A handful of op_db ops in float64, with --jobs 1 and 2, judged against
torch's own gradcheck run as PyTorch's test runs it (``entry.torch_verdict``):
the verdicts agree, op_db's expected failures and skips are known failures,
and the ones that pass on these samples are reported as stale. The op_db
import (about 10 s) is paid once per test process; the checks take seconds.
"""
import json

import pytest

pytest.importorskip("torch", reason="--registry torch checks PyTorch's op_db; torch is "
                    "not installed")
pytest.importorskip("expecttest", reason="PyTorch's op_db imports expecttest, which is not "
                    "installed (pip install expecttest)")

from adcheck.opinfo import torchdb  # noqa: E402
from adcheck.opinfo.torchdb import loader  # noqa: E402

#: passing ops (mul, cat, addmm), an op_db xfail torch and adcheck fail
#: (as_strided_scatter), an xfail that passes on these samples (cov: stale), and a
#: skip that fails on one sample and passes on the other (max_unpool1d: index ties)
OPS = ("mul", "cat", "addmm", "as_strided_scatter", "cov", "nn.functional.max_unpool1d")
SWEEP = ("ops", *OPS, "--registry", "torch", "--dtype", "float64", "--check",
         "reverse,forward")


@pytest.fixture(scope="module")
def swept():
    """The sweep's JSON with --jobs 1 and --jobs 2 (one CliRunner each)."""
    from click.testing import CliRunner

    from adcheck.cli.main import cli
    docs = {}
    for jobs in (1, 2):
        result = CliRunner().invoke(cli, [*SWEEP, "--jobs", str(jobs), "--format", "json"],
                                    catch_exceptions=False)
        assert result.exit_code == 0, result.output
        docs[jobs] = json.loads(result.stdout)
    return docs


def _verdicts(doc) -> dict:
    return {r["key"]: (r["status"], r["message"]) for r in doc["results"]}


def test_the_sweep_is_the_same_for_any_jobs_and_records_the_registry(swept):
    assert _verdicts(swept[1]) == _verdicts(swept[2])
    settings = swept[2]["settings"]
    assert settings["registry"] == "torch" and settings["engine"] == "torch"
    assert settings["samples_per_dtype"] == 2 and settings["checks"] == ["reverse", "forward"]
    assert {r["op"] for r in swept[2]["results"]} == set(OPS)


def test_verdicts_agree_with_torchs_gradcheck_as_its_tests_run_it(swept):
    checked = 0
    for r in swept[2]["results"]:
        assert r["status"] in ("passed", "known-failure"), r
        entry = torchdb.get(r["op"])
        torch_passes = entry.torch_verdict(entry.sample(r["sample"], r["dtype"]),
                                           r["check"]).passed
        assert (r["status"] == "passed") == torch_passes, r
        checked += 1
    # every op's first two samples, each by both checks (all these ops declare both)
    assert checked == len(OPS) * 2 * 2


def test_known_failures_come_from_op_db_and_stale_ones_are_reported(swept):
    results = swept[2]["results"]
    known = {(r["op"], r["sample"], r["check"]) for r in results
             if r["status"] == "known-failure"}
    assert ("as_strided_scatter", 0, "reverse") in known
    assert ("nn.functional.max_unpool1d", 1, "reverse") in known
    assert all("expected to fail in PyTorch's op_db" in r["message"] for r in results
               if r["status"] == "known-failure" and r["op"] == "as_strided_scatter")
    stale = {(r["op"], r["sample"], r["check"]) for r in results
             if r["message"].startswith("passed although declared a known failure")}
    assert ("cov", 0, "reverse") in stale and ("nn.functional.max_unpool1d", 0, "reverse") in stale
    assert all(r["status"] == "passed" for r in results
               if (r["op"], r["sample"], r["check"]) in stale)
    # a stale line says what is stale, not what the quick explore pass tried too
    assert not any("explored" in r["message"] for r in results
                   if (r["op"], r["sample"], r["check"]) in stale)


def test_the_table_and_the_html_list_stale_declarations(run, tmp_path):
    page = tmp_path / "cov.html"
    result = run("ops", "cov", "--registry", "torch", "--dtype", "float64", "--check",
                 "reverse", "--jobs", "1", "--html", page)
    assert result.exit_code == 0, result.output
    html = page.read_text()
    assert "registry torch" in html
    assert 'Passed although declared known failures <span class="dim">(2)</span>' in html
    assert "registry torch, engine torch" in result.stdout
    assert "STALE cov float64[0] reverse: passed although declared a known failure" \
        in result.stdout
    assert "2 checks pass although declared a known failure (the declaration does not " \
        "hold for these samples" in result.stdout


def test_a_torch_formula_bug_fails_and_its_reproducer_shows_it(run, capsys):
    # nn.functional.hardsigmoid's float64 backward multiplies by float32(1/6); torch's
    # gradcheck passes it (rtol 1e-3), adcheck's precise check does not
    result = run("op", "nn.functional.hardsigmoid", "--registry", "torch", "--dtype",
                 "float64", "--check", "reverse", "--sample", "0")
    assert result.exit_code == 1
    assert "a constant factor in the vjp is off" in result.stdout
    entry = torchdb.get("nn.functional.hardsigmoid")
    assert entry.torch_verdict(entry.sample(0, "float64")).passed
    code = result.stdout[result.stdout.index("from adcheck import gradcheck"):]
    code = "\n".join(line.strip(" │") for line in code.splitlines()
                     if not line.startswith("╰"))
    exec(code, {})
    assert "a constant factor in the vjp is off" in capsys.readouterr().out


def test_list_shows_every_entry(run):
    result = run("list", "--registry", "torch", "--format", "json")
    assert result.exit_code == 0
    doc = json.loads(result.stdout)
    assert doc["registry"] == "torch"
    assert [row["name"] for row in doc["ops"]] == torchdb.names()
    cov = next(row for row in doc["ops"] if row["name"] == "cov")
    assert cov["known_failures"] and "bfloat16" in cov["dtypes"]


def test_the_default_dtypes_are_every_autograd_dtype(run_json):
    # dtypes adcheck's gradcheck cannot take yet are skipped with the reason, never raised
    result, doc = run_json("ops", "nn.functional.relu", "--registry", "torch",
                           "--check", "reverse", "--jobs", "1")
    entry = torchdb.get("nn.functional.relu")
    assert {r["dtype"] for r in doc["results"]} == {torchdb.dtype_name(d)
                                                    for d in entry.dtypes}
    assert "bfloat16" in {r["dtype"] for r in doc["results"]}
    assert all(r["status"] != "error" for r in doc["results"]), doc["results"]
    for r in doc["results"]:
        if r["status"] == "skipped":
            assert r["message"].startswith("adcheck's gradcheck cannot check"), r


@pytest.mark.parametrize("args,words", [
    (("--engine", "refengine"), "checks its ops on torch only"),
    (("--plugin", "x.py"), "takes none: leave out --plugin"),
    (("--dtype", "float65"), "choose from float64, complex128, float32"),
])
def test_usage_errors_exit_2_with_one_line(run, args, words):
    result = run("ops", "mul", "--registry", "torch", *args)
    assert result.exit_code == 2 and words in result.stderr


def test_a_missing_expecttest_names_the_extra_to_install(run, monkeypatch):
    real = loader.importlib.util.find_spec
    monkeypatch.setattr(loader.importlib.util, "find_spec",
                        lambda name, *a: None if name == "expecttest" else real(name, *a))
    result = run("ops", "mul", "--registry", "torch")
    assert result.exit_code == 2
    assert 'pip install "adcheck[torch]"' in result.stderr and "expecttest" in result.stderr


def test_a_baseline_of_one_registry_is_refused_by_the_other(run, tmp_path):
    path = tmp_path / "torch-baseline.json"
    written = run("ops", "as_strided_scatter", "--registry", "torch", "--dtype", "float64",
                  "--check", "reverse", "--jobs", "1", "--write-baseline", path)
    assert written.exit_code == 0
    assert json.loads(path.read_text())["registry"] == "torch"
    again = run("ops", "as_strided_scatter", "--registry", "torch", "--dtype", "float64",
                "--check", "reverse", "--jobs", "1", "--baseline", path)
    assert again.exit_code == 0
    refused = run("ops", "sin", "--check", "reverse", "--baseline", path)
    assert refused.exit_code == 2 and "--registry torch" in refused.stderr
