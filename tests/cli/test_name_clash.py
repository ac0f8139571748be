"""A user's files named like adcheck's packages neither break adcheck nor are
shadowed by it.

adcheck's packages are installed under ``adcheck.`` (``adcheck.gradcheck``,
``adcheck.runner``, ...). Here adcheck runs from a folder holding
``gradcheck.py``, ``runner.py`` and ``cli.py``, and a user module that imports
them: the command, its worker processes and the fork server all start, and the
user's module sees its own files. Only ``adcheck`` is put on the import path
(a folder with a link to the checkout's ``adcheck/``), as an installation
would; the checkout's short-named folders are not on it.
"""
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

USER_FILES = {
    "gradcheck.py": "WHO = 'the user gradcheck'\n",
    "runner.py": "WHO = 'the user runner'\n",
    "cli.py": "WHO = 'the user cli'\n",
    "mine.py": (
        "import cli\nimport gradcheck\nimport runner\n"
        "import adcheck.refengine as E\n"
        "from adcheck.refengine.autograd import Function\n\n"
        "OWN = (gradcheck.WHO, runner.WHO, cli.WHO)\n\n\n"
        "def uses_own_modules(x):\n"
        "    assert OWN == ('the user gradcheck', 'the user runner', 'the user cli'), OWN\n"
        "    return (x * x).sum()\n\n\n"
        "class WrongExp(Function):\n"
        "    @staticmethod\n"
        "    def forward(ctx, x):\n"
        "        y = x.exp()\n"
        "        ctx.save_for_backward(y)\n"
        "        return y\n\n"
        "    @staticmethod\n"
        "    def backward(ctx, g):\n"
        "        y, = ctx.saved_tensors\n"
        "        return 2 * g * y\n"),
}


@pytest.fixture
def user_folder(tmp_path):
    site = tmp_path / "site"
    site.mkdir()
    (site / "adcheck").symlink_to(REPO / "adcheck", target_is_directory=True)
    work = tmp_path / "work"
    work.mkdir()
    for name, text in USER_FILES.items():
        (work / name).write_text(text)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PYTHONPATH"] = str(site)

    def adcheck(*args):
        return subprocess.run([sys.executable, "-c", "from adcheck.cli.main import main; main()",
                               *args], cwd=work, env=env, capture_output=True, text=True,
                              timeout=300, check=False)
    return adcheck


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_ops_runs_beside_files_named_like_adcheck_packages(user_folder, jobs):
    result = user_folder("ops", "sin", "-q", "--jobs", jobs)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Traceback" not in result.stderr
    assert "40 passed, 0 failed" in result.stdout


def test_the_users_module_imports_its_own_gradcheck_runner_and_cli(user_folder):
    result = user_folder("check", "mine.py:uses_own_modules", "-q")
    assert result.returncode == 0, result.stdout + result.stderr
    result = user_folder("check", "mine:uses_own_modules", "-q")
    assert result.returncode == 0, result.stdout + result.stderr


def test_a_wrong_function_beside_those_files_fails_as_it_should(user_folder):
    result = user_folder("check", "mine.py:WrongExp", "-q")
    assert result.returncode == 1, result.stdout + result.stderr
    assert "Traceback" not in result.stderr
