"""Each user mistake exits 2 with one line that says what to do, never a traceback."""
import importlib.util

import pytest
from cli_paths import USER_FUNCTIONS, WRONG_OPS


def _one_line_error(result, *words):
    assert result.exit_code == 2, result.output
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("Error: ")
    assert "Traceback" not in result.output
    for word in words:
        assert word in lines[0]
    assert result.stdout == ""


@pytest.mark.parametrize("args, words", [
    (["ops", "sinn"], ["no OpInfo named 'sinn'", "did you mean 'sin'", "adcheck list"]),
    (["ops", "nosuch*"], ["'nosuch*'", "adcheck list"]),
    (["ops", "--family", "nope"], ["unknown family 'nope'", "elementwise"]),
    (["ops", "sin", "--check", "reverse,sideways"], ["'sideways'", "choose from"]),
    (["ops", "sin", "--dtype", "float8"], ["'float8'", "float64", "bfloat16"]),
    (["ops", "sin", "--dtype", "float16"], ["float16", "--engine torch only"]),
    (["ops", "sin", "-v", "-q"], ["-v and -q"]),
    (["ops", "sin", "--plugin", "/no/such/plugin.py"], ["no such file", "--plugin"]),
    (["ops", "sin", "--junit-xml", "/no/such/dir/report.xml"], ["cannot write", "another path"]),
    (["ops", "sin", "--write-baseline", "/no/such/dir/b.json"], ["cannot write"]),
    (["op", "sinn"], ["did you mean 'sin'"]),
    (["op", "sin", "--sample", "99"], ["--sample", "0 to"]),
    (["check"], ["MODULE:OBJECT or --plugin"]),
    (["check", "nosuchmodule_xyz:f"], ["cannot import 'nosuchmodule_xyz'", "path"]),
    (["check", "no_colon_here"], ["expected MODULE:OBJECT"]),
    ([ "check", f"{USER_FUNCTIONS}:Missing"], ["no attribute 'Missing'", "DoubledSin"]),
    (["check", f"{USER_FUNCTIONS}:NOT_CALLABLE"], ["not a function"]),
    (["check", f"{USER_FUNCTIONS}:DoubledSin", "--inputs", "randn(3; rand(2)"],
     ["--inputs", "column 8"]),
    # (the dtype before the arithmetic was refused as "expected ';'", the order unsaid)
    (["check", f"{USER_FUNCTIONS}:DoubledSin", "--inputs", "randn(4, 3) float32 * 0.002"],
     ["--inputs", "'float32' goes after the arithmetic", "write 'randn(4, 3) * 0.002 float32'"]),
    (["check", f"{USER_FUNCTIONS}:DoubledSin", "--inputs", "randn(3) nograd"],
     ["nothing to differentiate"]),
    (["check", f"{USER_FUNCTIONS}:DoubledSin", "--plugin", WRONG_OPS], ["one of them"]),
    # (--dtype was taken and never applied to MODULE:OBJECT's inputs)
    (["check", f"{USER_FUNCTIONS}:DoubledSin", "--dtype", "float32"],
     ["--dtype applies to the OpInfos of --plugin", "'randn(3, 5) float32'"]),
    (["conformance", "--area", "nope"], ["unknown conformance area", "views"]),
    (["list", "--family", "nope"], ["unknown family"]),
])
def test_bad_input_exits_2_with_one_line(run, args, words):
    _one_line_error(run(*args), *words)


def test_a_plugin_that_raises_on_import_is_a_usage_error(run, tmp_path):
    plugin = tmp_path / "broken_plugin.py"
    plugin.write_text("raise ImportError('missing dependency foo')\n")
    _one_line_error(run("ops", "--plugin", plugin), "failed to load", "missing dependency foo")


def test_a_plugin_that_is_not_python_is_a_usage_error(run, tmp_path):
    plugin = tmp_path / "plugin.txt"
    plugin.write_text("hello")
    _one_line_error(run("ops", "--plugin", plugin), ".py")


@pytest.mark.parametrize("content, words", [
    ("{not json", ["is not JSON", "line 1"]),
    ('{"schema": "something-else"}', ["not an adcheck baseline"]),
    ('{"schema": "adcheck-baseline", "schema_version": 99, "accepted": []}',
     ["schema_version 99"]),
    ('{"schema": "adcheck-baseline", "schema_version": 1, "accepted": [1]}', ['"key"']),
])
def test_a_bad_baseline_file_is_a_usage_error_before_any_check(run, tmp_path, content, words):
    path = tmp_path / "baseline.json"
    path.write_text(content)
    _one_line_error(run("ops", "sin", "--baseline", path), *words)


def test_a_missing_baseline_file_says_how_to_write_one(run, tmp_path):
    _one_line_error(run("ops", "sin", "--baseline", tmp_path / "none.json"),
                    "no such file", "--write-baseline")


def test_engine_torch_without_torch_says_how_to_install_it(run, monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "torch" else real(name, *a))
    _one_line_error(run("ops", "sin", "--engine", "torch"), "pip install torch")


def test_click_usage_errors_also_exit_2(run):
    result = run("ops", "--jobs", "0")
    assert result.exit_code == 2
    assert "Traceback" not in result.output


def test_a_broken_installation_is_one_line_not_a_traceback(run, monkeypatch):
    import sys
    import adcheck
    monkeypatch.setitem(sys.modules, "adcheck.opinfo", None)    # import opinfo now fails
    monkeypatch.delattr(adcheck, "opinfo", raising=False)
    _one_line_error(run("ops", "sin"), "'adcheck.opinfo' cannot be imported", "reinstall")
