"""The user's file is executed once per process, and each input spec parsed
once per process (issue 29, item 6): the command validates, and each worker
reads, the same text."""
import os
import subprocess
import sys
from pathlib import Path

from adcheck.runner import spec as specs
from adcheck.runner.target import load_object

REPO = Path(__file__).resolve().parents[2]


def test_a_spec_is_parsed_once_per_process(monkeypatch):
    calls = []
    real = specs._Parser.spec
    monkeypatch.setattr(specs._Parser, "spec", lambda self: calls.append(1) or real(self))
    specs._parsed.cache_clear()
    text = "randn(2, 3); rand(4) + 0.5 float32"
    first = specs.parse(text)
    again = specs.parse(text)
    tensors, keywords = specs.parse_call(text)
    assert len(calls) == 1
    assert first == again == tensors and keywords == {}
    first[1].affine.append(("*", 9.0))   # a caller's copy: the next parse is not changed by it
    assert specs.parse(text)[1].affine == [("+", 0.5)]


def test_a_users_file_is_executed_once_per_process_unless_it_changes(tmp_path):
    log = tmp_path / "imports.log"
    user = tmp_path / "counted.py"
    user.write_text(f"open({str(log)!r}, 'a').write('once\\n')\n\ndef f(x):\n    return x * 2\n")
    first = load_object(f"{user}:f")
    assert load_object(f"{user}:f") is first
    assert log.read_text().splitlines() == ["once"]
    user.write_text(user.read_text() + "\ndef g(x):\n    return x\n")
    load_object(f"{user}:g")                     # changed since: executed again
    assert log.read_text().splitlines() == ["once", "once"]


def test_a_check_with_several_input_sets_imports_the_file_once_in_each_process(tmp_path):
    log = tmp_path / "pids.log"
    user = tmp_path / "counted.py"
    user.write_text("import os\n"
                    f"open({str(log)!r}, 'a').write(f'{{os.getpid()}}\\n')\n\n"
                    "def f(x):\n    return x * x\n")
    env = dict(os.environ, PYTHONPATH=str(REPO))
    result = subprocess.run(
        [sys.executable, "-c", "from adcheck.cli.main import main; main()", "check",
         f"{user}:f", "--inputs", "randn(3)", "--inputs", "randn(4)", "--inputs",
         "randn(2, 3)", "--jobs", "1", "-q"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300, check=False)
    assert result.returncode == 0, result.stdout + result.stderr
    pids = log.read_text().split()
    assert len(pids) == len(set(pids)), f"a process executed the file twice: {pids}"
    assert 2 <= len(pids) <= 3      # the command (and a probe it forks inherits it), one worker
