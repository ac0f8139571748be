"""``adcheck check FILE:KERNEL --against FILE:REF``: verdicts and exit statuses."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

torch = pytest.importorskip("torch", reason="PyTorch is not installed (pip install torch==2.13.0)")

from click.testing import CliRunner  # noqa: E402

from adcheck.cli.main import cli  # noqa: E402

OPS = str(Path(__file__).resolve().parents[2] / "examples" / "kernel_ops.py")
INPUTS = "randn(4, 16) float16; rand(16) + 0.5 float16"


def _run(*args):
    return CliRunner().invoke(cli, ["check", *args])


def test_a_correct_kernel_passes_and_states_its_resolution():
    result = _run(f"{OPS}:fused_rms", "--against", f"{OPS}:rms_reference", "--inputs", INPUTS)
    assert result.exit_code == 0, result.output
    assert "fused_rms: passed (float16 kernel against the float64 reference)" in result.output
    assert "not detectable at this precision" in result.output


def test_a_wrong_kernel_exits_1_naming_the_failing_comparison():
    result = _run(f"{OPS}:buggy_rms", "--against", f"{OPS}:rms_reference", "--inputs", INPUTS)
    assert result.exit_code == 1, result.output
    assert "FAIL forward value, output 0" in result.output


def test_json_holds_the_report():
    result = _run(f"{OPS}:fused_rms", "--against", f"{OPS}:rms_reference", "--inputs", INPUTS,
                  "--format", "json")
    data = json.loads(result.output)
    assert data["passed"] and data["settings"]["against"] == "rms_reference"


@pytest.mark.parametrize("ref,message", [
    ("raises64", "the reference raises64 fails in float64: RuntimeError"),
    ("two_outputs", "returns 2 output(s) and fused_rms 1"),
])
def test_a_bad_reference_is_one_line_and_exit_2(ref, message):
    result = _run(f"{OPS}:fused_rms", "--against", f"{OPS}:{ref}", "--inputs", INPUTS)
    assert result.exit_code == 2
    assert message in result.output and len(result.output.strip().splitlines()) == 1


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has a CUDA device")
def test_a_device_that_is_not_available_is_one_line_and_exit_2():
    result = _run(f"{OPS}:fused_rms", "--against", f"{OPS}:rms_reference", "--inputs", INPUTS,
                  "--device", "cuda")
    assert result.exit_code == 2
    assert "--device cuda: not available here" in result.output
    assert len(result.output.strip().splitlines()) == 1


def test_device_without_against_is_a_usage_error():
    result = _run(f"{OPS}:fused_rms", "--device", "cpu")
    assert result.exit_code == 2 and "--device applies to a kernel" in result.output


def test_quiet_prints_the_verdict_and_the_failures_only():
    """``-q`` is "failures and totals only" for a kernel too: it printed nothing,
    even for a failing kernel (exit 1 and no word of why)."""
    failing = _run(f"{OPS}:buggy_rms", "--against", f"{OPS}:rms_reference", "--inputs", INPUTS,
                   "-q")
    assert failing.exit_code == 1
    lines = failing.output.splitlines()
    assert lines, "nothing printed"
    assert lines[0].startswith("buggy_rms: ") and "failing comparison(s)" in lines[0]
    assert lines[1:] and all(line.startswith("  FAIL") or line.startswith("       ")
                             for line in lines[1:])
    passing = _run(f"{OPS}:fused_rms", "--against", f"{OPS}:rms_reference", "--inputs", INPUTS,
                   "-q")
    assert passing.exit_code == 0
    assert passing.output.splitlines() == [passing.output.splitlines()[0]]
    assert passing.output.startswith("fused_rms: passed")


EPS_DROPPED = '''
import torch

EPS = 1e-6


def rms_reference(x, w):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + EPS) * w


class RmsNorm(torch.autograd.Function):
    """RMS norm in float32 inside; ``with_eps`` False: the backward recomputes its
    scale without EPS, right wherever the mean of x * x dwarfs it."""

    with_eps = True

    @staticmethod
    def forward(ctx, x, w):
        r = torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + EPS)
        ctx.save_for_backward(x, w)
        return (x.float() * r * w.float()).to(x.dtype)

    @classmethod
    def backward(cls, ctx, g):
        x, w = (t.float() for t in ctx.saved_tensors)
        r = torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + (EPS if cls.with_eps else 0.0))
        gx_hat = g.float() * w
        gx = r * (gx_hat - x * r * r * (gx_hat * x).mean(-1, keepdim=True))
        return gx.to(g.dtype), (g.float() * x * r).sum(0).to(g.dtype)


class NoEps(RmsNorm):
    with_eps = False
'''


@pytest.fixture
def eps_kernels(tmp_path):
    path = tmp_path / "eps_kernels.py"
    path.write_text(EPS_DROPPED)
    return str(path)


def test_an_eps_dropped_from_the_backward_fails_at_tiny_magnitudes(eps_kernels):
    # (at randn's inputs the mean of x * x dwarfs 1e-6: both kernels pass there; the
    # quick pass judges them again at a thousandth of their inputs)
    inputs = "randn(4, 16) float32; rand(16) + 0.5 float32"
    right = _run(f"{eps_kernels}:RmsNorm", "--against", f"{eps_kernels}:rms_reference",
                 "--inputs", inputs)
    assert right.exit_code == 0, right.output
    wrong = _run(f"{eps_kernels}:NoEps", "--against", f"{eps_kernels}:rms_reference",
                 "--inputs", inputs)
    assert wrong.exit_code == 1, wrong.output
    first, _, tiny = wrong.output.partition("at its inputs times 0.001")
    assert "NoEps: passed" in first and "FAIL vjp (reverse mode)" in tiny
    left_out = _run(f"{eps_kernels}:NoEps", "--against", f"{eps_kernels}:rms_reference",
                    "--inputs", inputs, "--no-explore")
    assert left_out.exit_code == 0 and "times 0.001" not in left_out.output
    doc = json.loads(_run(f"{eps_kernels}:NoEps", "--against", f"{eps_kernels}:rms_reference",
                          "--inputs", inputs, "--format", "json").output)
    assert doc["passed"] and not doc["tiny"]["passed"] and doc["tiny"]["scale"] == 1e-3


def test_a_float16_kernel_past_its_range_at_tiny_magnitudes_is_not_failed():
    # an RMS norm computed op by op in float16 at 256 features: at its inputs times
    # 1e-3 its backward's 1 / rms**3 passes float16's 65504 and is inf, where the
    # float64 reference's is finite (a correct kernel failed so, "the vjp returns inf")
    fixture = str(Path(__file__).resolve().parent / "fixtures" / "rms_ops.py")
    inputs = "randn(3, 256) float16; rand(256) + 0.5 float16"
    result = _run(f"{fixture}:rms_reference", "--against", f"{fixture}:rms_reference",
                  "--inputs", inputs)
    assert result.exit_code == 0, result.output
    assert "at its inputs times 0.001: not judged" in result.output
    doc = json.loads(_run(f"{fixture}:rms_reference", "--against",
                          f"{fixture}:rms_reference", "--inputs", inputs,
                          "--format", "json").output)
    assert doc["passed"] and doc["tiny"]["judged"] is False
    # a wrong float16 kernel still fails at its own inputs
    wrong = _run(f"{fixture}:DroppedMean", "--against", f"{fixture}:rms_reference",
                 "--inputs", "randn(3, 16) float16; rand(16) + 0.5 float16", "-q")
    assert wrong.exit_code == 1, wrong.output


def test_runs_with_the_same_inf_have_no_spread_and_warn_nothing():
    import warnings

    import numpy as np

    from adcheck.gradcheck.kernels.verdicts import spread
    runs = [{0: np.array([np.inf, 1.0])}, {0: np.array([np.inf, 1.0])},
            {0: np.array([np.inf, 1.0])}]
    with warnings.catch_warnings():
        warnings.simplefilter("error")      # (inf - inf warned "invalid value")
        _, results, gaps = spread(runs, {0: np.array([0.0, 0.0])}, "vjp")
    assert results == [] and gaps[0].tolist() == [0.0, 0.0]
