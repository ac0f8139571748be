"""The README's test command (``python -m pytest -n 2``) where pytest-xdist is
not installed: refused with the fix, not as an unknown argument."""
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

# pytest run in a process where importing xdist finds nothing, as without it
# (its plugins are left out by name too: pytest's assertion-rewriting hook, put
# ahead of this finder, would still import them for their entry points)
_WITHOUT_XDIST = """
import importlib.abc, sys
class Hide(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name == "xdist" or name.startswith("xdist."):
            raise ModuleNotFoundError(name)
        return None
sys.meta_path.insert(0, Hide())
import pytest
sys.exit(pytest.main(sys.argv[1:]))
"""


def _pytest_without_xdist(*args):
    return subprocess.run([sys.executable, "-c", _WITHOUT_XDIST, "-p", "no:cacheprovider",
                           "-p", "no:xdist", "-p", "no:xdist.looponfail", *args],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)


def test_n_without_xdist_says_what_to_install():
    run = _pytest_without_xdist("-n", "2", "--collect-only", "-q", "tests/test_xdist_missing.py")
    assert run.returncode == pytest.ExitCode.USAGE_ERROR
    assert 'pip install ".[xdist]"' in run.stderr
    assert "unrecognized arguments" not in run.stderr


def test_without_n_the_tests_still_run_on_one_core():
    run = _pytest_without_xdist("--collect-only", "-q", "tests/test_xdist_missing.py")
    assert run.returncode == 0, run.stdout + run.stderr
    assert "2 tests collected" in run.stdout
