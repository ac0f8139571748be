"""A command-line check of JAX code keeps what JAX compiled, and its workers
start with JAX imported.

`adcheck check examples/jax_ops.py:my_tanh` took 24 s of wall time on a slow
machine, most of it running JAX eagerly; compiled as whole functions it
takes about 9.4 s, and a next run of the same check, which finds the
compiled programs on disk (JAX's persistent compilation cache), about 6.3 s
(bench/cli_startup.md). The timings are the benchmark's; here, where the
programs go and when JAX's code is told from a file's text.
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("jax", reason="jax is not installed (pip install adcheck[jax])")

from adcheck.cli.runs import uses_jax  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
JAX_OPS = REPO / "examples" / "jax_ops.py"


def _check(env: dict) -> subprocess.CompletedProcess:
    code = "from adcheck.cli.main import main; main()"
    return subprocess.run([sys.executable, "-c", code, "check", f"{JAX_OPS}:my_tanh",
                           "--check", "reverse", "--no-explore", "-q"],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=300,
                          check=False)


def _environment(tmp_path: Path, **extra) -> dict:
    env = {k: v for k, v in os.environ.items()
           if k not in ("JAX_COMPILATION_CACHE_DIR", "JAX_ENABLE_COMPILATION_CACHE")}
    return dict(env, XDG_CACHE_HOME=str(tmp_path / "cache"), **extra)


def test_what_jax_compiled_is_kept_in_adchecks_cache_folder(tmp_path):
    done = _check(_environment(tmp_path))
    assert done.returncode == 0, done.stdout + done.stderr
    kept = list((tmp_path / "cache" / "adcheck" / "jax").iterdir())
    assert len(kept) >= 4          # (the function, its pullback, batched: each a program)


@pytest.mark.parametrize("setting", ["JAX_COMPILATION_CACHE_DIR", "JAX_ENABLE_COMPILATION_CACHE"])
def test_a_cache_the_user_placed_or_turned_off_is_theirs(tmp_path, setting):
    value = str(tmp_path / "theirs") if setting.endswith("DIR") else "false"
    code = ("import jax\n"
            "from adcheck.gradcheck.engines.jaxcompiled import keep_compilations\n"
            "keep_compilations()\n"
            "print(jax.config.jax_compilation_cache_dir, "
            "jax.config.jax_persistent_cache_min_compile_time_secs)\n")
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True,
                          text=True, timeout=120, check=False,
                          env=_environment(tmp_path, **{setting: value}))
    assert done.returncode == 0, done.stderr
    placed = value if setting.endswith("DIR") else "None"
    assert done.stdout.split() == [placed, "1.0"]     # (JAX's own threshold, untouched)
    assert not (tmp_path / "cache" / "adcheck").exists()


@pytest.mark.parametrize("text, expected", [
    ("import jax.numpy as jnp\n", True),
    ("from jax import custom_vjp\n", True),
    ("  import flax.linen as nn\n", True),
    ("import equinox as eqx\n", True),
    ("import torch\n", False),
    ("from adcheck import refengine\n# import jax (in a comment)\n", False),
    ("import jaxtyping\n", False),
])
def test_jax_code_is_told_by_its_files_imports(tmp_path, text, expected):
    path = tmp_path / "ops.py"
    path.write_text(text + "\ndef f(x):\n    return x\n")
    assert uses_jax(f"{path}:f") is expected


def test_jax_code_is_told_by_its_own_functions_and_the_engine_option(tmp_path):
    assert uses_jax("jax.nn:gelu") and uses_jax("jax.numpy.linalg:det")
    assert uses_jax("torch:sin", engine="jax")
    assert not uses_jax("torch:sin") and not uses_jax("jaxlike.ops:f")
