"""adcheck op, list and conformance."""
import json
import re

from cli_paths import WRONG_OPS


def test_op_shows_both_jacobians_the_diagnosis_and_a_reproducer(run):
    result = run("op", "cli_doubled_sin", "--plugin", WRONG_OPS, "--sample", "0",
                 "--check", "reverse")
    assert result.exit_code == 1
    out = result.stdout
    assert "numerical" in out and "reverse" in out
    assert len(re.findall(r"\d\*", out)) == 3        # the 3 differing diagonal entries
    assert "* marks |reverse - numerical|" in out
    assert "diagnosis: analytical is 2 times numerical" in " ".join(out.split())
    assert "'cli_doubled_sin', 'float64', 0, 'reverse'," in out
    assert "report = runner.rebuild(" in out and f"plugins=[{WRONG_OPS!r}]," in out


def test_the_reproducer_of_op_reproduces_the_failure(run):
    out = run("op", "cli_doubled_sin", "--plugin", WRONG_OPS, "--sample", "1",
              "--check", "reverse").stdout
    code = re.search(r"from adcheck import runner.*?print\(report\.message\(\)\)", out, re.DOTALL).group(0)
    code = "\n".join(line.strip(" │") for line in code.splitlines())
    namespace = {}
    # running the snippet adcheck printed is what this test is about
    exec(code.replace("print(report.message())", ""), namespace)  # noqa: S102
    assert not namespace["report"].passed
    assert "2 times numerical" in namespace["report"].diagnosis
    # the same numbers as the run: its first failure line is the panel's
    first = namespace["report"].message().splitlines()[0]
    assert first in " ".join(line.strip(" │") for line in out.splitlines())


def test_op_on_a_correct_op_exits_0(run):
    result = run("op", "sin", "--sample", "2", "--dtype", "float64")
    assert result.exit_code == 0
    assert "ok" in result.stdout and "fail" not in result.stdout


def test_op_json_carries_the_full_gradcheck_report(run):
    result = run("op", "cli_doubled_sin", "--plugin", WRONG_OPS, "--sample", "0",
                 "--check", "reverse", "--format", "json")
    doc = json.loads(result.stdout)
    assert doc["schema"] == "adcheck-op" and doc["op"]["name"] == "cli_doubled_sin"
    (entry,) = doc["results"]
    assert entry["status"] == "failed"
    assert set(entry["report"]["jacobians"]) >= {"numerical", "reverse"}


def test_list_json_describes_every_registered_op(run):
    from adcheck import opinfo
    result = run("list", "--format", "json")
    doc = json.loads(result.stdout)
    assert result.exit_code == 0 and doc["schema"] == "adcheck-list"
    assert [row["name"] for row in doc["ops"]] == [o.name for o in opinfo.op_db]
    sin = next(row for row in doc["ops"] if row["name"] == "sin")
    assert sin["torch_name"] == "sin" and sin["mpmath_ref"] is True
    assert set(sin["modes"]) == {"reverse", "forward", "gradgrad", "fwgrad_bwgrad"}


def test_list_filters_by_family(run):
    doc = json.loads(run("list", "--family", "elementwise", "--format", "json").stdout)
    assert doc["ops"] and {row["family"] for row in doc["ops"]} == {"elementwise"}


def test_conformance_exit_status_follows_its_results(run):
    result = run("conformance", "--area", "hooks", "--format", "json")
    doc = json.loads(result.stdout)
    assert doc["schema"] == "adcheck-conformance" and doc["engine"] == "refengine"
    assert doc["results"] and {r["area"] for r in doc["results"]} == {"hooks"}
    failing = doc["summary"]["failed"] + doc["summary"]["error"]
    assert result.exit_code == (1 if failing else 0)


def test_conformance_table_has_a_row_per_area(run):
    result = run("conformance", "--area", "hooks", "--area", "grad_modes")
    lines = result.stdout.splitlines()
    assert any(line.startswith("│ hooks") for line in lines)
    assert any(line.startswith("│ grad_modes") for line in lines)


def test_conformance_lists_its_areas(run):
    from adcheck import conformance
    result = run("conformance", "--list-areas")
    assert result.stdout.split() == conformance.areas()
