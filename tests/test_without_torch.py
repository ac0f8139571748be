"""The README's test command in an install without PyTorch or JAX (both are
extras): every test module is collected, and those that need them skip and
say why. A module that imports torch at its top is instead a collection
error, and pytest then stops the whole run: 41 modules did so, and a new
user who had not installed torch met "Interrupted: 41 errors during
collection" and no test run at all.

Only collection is checked here (the whole suite without torch takes
minutes: it ran at this change with every test passing or skipping)."""
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# pytest in a process where torch and JAX cannot be imported, as without them:
# ``import torch`` raises ModuleNotFoundError and importlib.util.find_spec("torch")
# finds nothing (what a meta path finder cannot give both of)
_WITHOUT = """
import sys
for name in ("torch", "jax", "jaxlib"):
    sys.modules[name] = None
import pytest
sys.exit(pytest.main(sys.argv[1:]))
"""


def _collect_without_torch(*paths):
    return subprocess.run([sys.executable, "-c", _WITHOUT, "-p", "no:cacheprovider",
                           "--collect-only", "-q", "-rs", *paths],
                          cwd=ROOT, capture_output=True, text=True, timeout=600)


def test_every_test_module_is_collected_without_torch_and_jax():
    run = _collect_without_torch("tests")
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-2000:]
    assert " error" not in run.stdout.splitlines()[-1], run.stdout[-3000:]
    # the modules that need torch are skipped with a reason a reader can act on
    skipped = [line for line in run.stdout.splitlines() if line.startswith("SKIPPED")]
    assert any("tests/kernels/test_kernels_check.py" in line and "torch" in line
               for line in skipped), "\n".join(skipped)


def test_a_module_importing_torch_at_its_top_is_a_collection_error_there(tmp_path):
    # the hiding works: the first test could fail
    (tmp_path / "test_needs_torch.py").write_text("import torch\n\n\ndef test_x():\n"
                                                  "    assert torch\n")
    run = _collect_without_torch(str(tmp_path))
    assert run.returncode == 2, run.stdout + run.stderr
    assert "ERROR collecting" in run.stdout and "test_needs_torch.py" in run.stdout
    assert "ModuleNotFoundError" in run.stdout and "torch" in run.stdout
