"""Tracebacks of the user's code (issue 28, item 8): its frames only, with -v
in the terminal and always in JSON and HTML, where an error also has the
Python that reruns it."""
import re
from pathlib import Path

FILE = str(Path(__file__).parents[2] / "examples" / "raising.py")   # docs/cli.md runs it
ARGS = ("--inputs", "randn(3, 4)", "--check", "reverse")


def _frames(text: str) -> list:
    return re.findall(r'File "([^"]+)", line (\d+), in (\w+)', text)


def test_json_holds_the_users_frames_and_the_error_only(run_json):
    result, doc = run_json("check", f"{FILE}:reshapes_wrongly", *ARGS)
    assert result.exit_code == 1
    (error,) = doc["results"]
    trace = error["traceback"]
    assert trace.startswith("Traceback of your code (most recent call last):")
    # the two frames of the user's file, outermost first, and nothing of adcheck's
    assert [(Path(f).name, fn) for f, _, fn in _frames(trace)] == [
        ("raising.py", "reshapes_wrongly"), ("raising.py", "_helper")]
    # ends with the user's error as Python would print it (refengine words it as torch)
    assert trace.splitlines()[-1] == "RuntimeError: shape '[7, 7]' is invalid for input of size 12"
    assert "gradcheck" not in trace and "site-packages" not in trace


def test_a_raising_backward_shows_its_line(run_json):
    _, doc = run_json("check", f"{FILE}:UnfinishedBackward", *ARGS)
    (error,) = doc["results"]
    assert error["status"] == "error"
    assert [fn for _, _, fn in _frames(error["traceback"])] == ["backward"]
    assert error["traceback"].endswith("ValueError: my backward is unfinished")


def test_the_terminal_shows_it_with_v_only(run):
    plain = run("check", f"{FILE}:UnfinishedBackward", *ARGS)
    assert "Traceback of your code" not in plain.stdout
    verbose = run("check", f"{FILE}:UnfinishedBackward", *ARGS, "-v")
    assert "Traceback of your code" in verbose.stdout
    assert 'raise ValueError("my backward is unfinished")' in verbose.stdout


def test_html_has_the_traceback_and_a_reproducer_that_raises_the_same(run, tmp_path):
    import html as html_module

    page = tmp_path / "run.html"
    run("check", f"{FILE}:UnfinishedBackward", *ARGS, "--html", page)
    text = html_module.unescape(page.read_text())
    assert "Traceback of your code" in text and "my backward is unfinished" in text
    code = text.split("<summary>Reproduce</summary><pre><code>", 1)[1].split("</code>")[0]
    assert "rebuild_target" in code
    namespace: dict = {}
    try:
        exec(compile(code, "reproducer", "exec"), namespace)
    except Exception as exc:   # the reproducer raises the error the run reported
        assert "my backward is unfinished" in str(exc)
    else:
        raise AssertionError("the reproducer ran without the error")


def test_no_user_frame_gives_no_traceback():
    from adcheck.runner.tracebacks import user_traceback
    try:
        {}["missing"]
    except KeyError as exc:   # raised in this test file: the user's frame
        assert "test_tracebacks.py" in user_traceback(exc)
    try:
        import json
        json.loads("{")
    except ValueError as exc:
        exc.__traceback__ = exc.__traceback__.tb_next   # only the library's frames left
        assert user_traceback(exc) is None
