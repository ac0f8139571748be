"""adcheck --help starts fast: no NumPy, rich or torch before a command runs.

The start-up time itself is a benchmark, not a test (these machines are
shared and noisy): ``python bench/vs_torch.py`` measures it against its
target of 0.3 s."""
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
HEAVY = ("numpy", "rich", "torch", "adcheck.refengine", "adcheck.opinfo", "adcheck.gradcheck", "mpmath")


def _python(code, *args):
    env = dict(os.environ, PYTHONPATH=str(REPO))
    return subprocess.run([sys.executable, "-c", code, *args], check=False, cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=60)


def test_help_imports_nothing_heavy():
    code = ("import sys\nfrom adcheck.cli.main import cli\n"
            "try:\n    cli.main(['--help'], standalone_mode=False)\nexcept SystemExit:\n    pass\n"
            f"print(sorted(m for m in {HEAVY!r} if m in sys.modules))")
    result = _python(code)
    assert result.stdout.strip().splitlines()[-1] == "[]", result.stderr


def test_help_of_every_command_imports_nothing_heavy():
    code = ("import sys\nfrom adcheck.cli.main import cli, COMMANDS\n"
            "for name in COMMANDS:\n"
            "    try:\n        cli.main([name, '--help'], standalone_mode=False)\n"
            "    except SystemExit:\n        pass\n"
            f"print(sorted(m for m in {HEAVY!r} if m in sys.modules))")
    result = _python(code)
    assert result.stdout.strip().splitlines()[-1] == "[]", result.stderr


def test_the_help_states_gradchecks_own_explore_budget():
    from adcheck.cli.options import DEFAULT_EXPLORE_BUDGET as stated
    from adcheck.gradcheck.core.options import DEFAULT_EXPLORE_BUDGET as used
    assert stated == used
