"""``@pytest.mark.adcheck_kernel``: kernels as test items, run with pytester.

The verdicts are those of ``kernels.check`` (tested in test_kernels_check.py
against independently measured bugs); here: the items, their ids, what an
item's failure shows, skips and their reasons, and a bad marker.
"""
from __future__ import annotations

import pytest
# imported before pytester's in-process runs: each run restores sys.modules, and torch
# imported anew inside a later run crashes the process
torch = pytest.importorskip("torch", reason="PyTorch is not installed (pip install torch==2.13.0)")

import adcheck.gradcheck.kernels  # noqa: F401
import adcheck.runner.spec  # noqa: F401

pytest_plugins = ["pytester"]

OPS = '''
import torch


def rms_reference(x, w):
    return x * torch.rsqrt((x * x).mean(-1, keepdim=True) + 1e-6) * w


def fused_rms(x, w):
    xf = x.float()
    return (xf * torch.rsqrt((xf * xf).mean(-1, keepdim=True) + 1e-6) * w.float()).to(x.dtype)


def sum_rms(x, w):   # the mean taken as a sum over 15 features: a wrong forward
    xf = x.float()
    return (xf * torch.rsqrt((xf * xf).sum(-1, keepdim=True) / 15 + 1e-6)
            * w.float()).to(x.dtype)


class NoJvp(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, w):
        ctx.save_for_backward(x, w)
        return fused_rms(x, w)

    @staticmethod
    def backward(ctx, g):
        x, w = ctx.saved_tensors
        with torch.enable_grad():   # differentiable again: order=2 can judge it
            return torch.autograd.grad(fused_rms(x, w), (x, w), g, create_graph=True)
'''

SPEC = '"randn(4, 16); rand(16) + 0.5"'


def _module(marker: str) -> str:
    return f'''
import pytest
import torch
from ops import NoJvp, fused_rms, rms_reference, sum_rms

{marker}
def test_kernel(adcheck_kernel):
    adcheck_kernel.assert_passes()
'''


@pytest.fixture
def kernels_project(pytester):
    pytester.makepyfile(ops=OPS)
    return pytester


def test_one_item_per_kernel_dtype_and_comparison(kernels_project):
    kernels_project.makepyfile(test_k=_module(
        f"@pytest.mark.adcheck_kernel(fused_rms, against=rms_reference, inputs={SPEC}, "
        "dtypes=('bfloat16', 'float16'))"))
    result = kernels_project.runpytest("-v")
    result.assert_outcomes(passed=6)
    for dtype in ("bfloat16", "float16"):
        for check in ("value", "reverse", "forward"):
            result.stdout.fnmatch_lines([f"*test_kernel?fused_rms-{dtype}-{check}? PASSED*"])


def test_a_failing_comparison_shows_the_kernels_summary(kernels_project):
    kernels_project.makepyfile(test_k=_module(
        f"@pytest.mark.adcheck_kernel(sum_rms, fused_rms, against=rms_reference, "
        f"inputs={SPEC}, dtypes='float16', checks='value')"))
    result = kernels_project.runpytest("-v")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*sum_rms-float16-value* FAILED*",
                                 "*sum_rms: 1 failing comparison(s) (float16 kernel against "
                                 "the float64 reference)*",
                                 "*FAIL forward value, output 0*"])
    assert "vjp (reverse mode)" not in result.stdout.str()   # its own comparison only


def test_second_order_items_and_a_missing_jvp_skipped_with_its_reason(kernels_project):
    # the inputs made by a callable of the dtype this time
    kernels_project.makepyfile(test_k=_module(
        "def make(dtype):\n"
        "    return (torch.randn(4, 16).to(dtype).requires_grad_(),\n"
        "            (torch.rand(16) + 0.5).to(dtype).requires_grad_())\n\n"
        "@pytest.mark.adcheck_kernel(NoJvp.apply, against=rms_reference, inputs=make, "
        "dtypes='float32', order=2)"))
    result = kernels_project.runpytest("-v", "-rs")
    result.assert_outcomes(passed=3, skipped=2)
    result.stdout.fnmatch_lines(["*NoJvp-float32-forward* SKIPPED*",
                                 "*NoJvp-float32-gradgrad* PASSED*",
                                 "*forward not judged: the kernel defines no jvp*"])


def test_a_failing_reference_and_a_missing_device(kernels_project):
    # one pytest run for both (each run costs seconds): a reference that fails in
    # float64 is an error of every item, naming the reference; a device this
    # machine lacks skips its items with the reason
    kernels_project.makepyfile(test_bad=_module(
        "def raising(x, w):\n    raise RuntimeError('no float64 here')\n\n"
        f"@pytest.mark.adcheck_kernel(fused_rms, against=raising, inputs={SPEC}, "
        "dtypes='float16', checks='value')"))
    device = "cuda" if not torch.cuda.is_available() else "no_such_device"
    kernels_project.makepyfile(test_device=_module(
        f"@pytest.mark.adcheck_kernel(fused_rms, against=rms_reference, inputs={SPEC}, "
        f"dtypes='float16', checks='value', device={device!r})"))
    result = kernels_project.runpytest("-rs")
    result.assert_outcomes(failed=1, skipped=1)
    result.stdout.fnmatch_lines(["*the reference raising fails in float64: RuntimeError*"])
    result.stdout.fnmatch_lines([f"*device {device!r} is not available on this machine*"])


BAD_MARKERS = {
    "against= must be the reference": f"@pytest.mark.adcheck_kernel(fused_rms, inputs={SPEC})",
    "inputs:": "@pytest.mark.adcheck_kernel(fused_rms, against=rms_reference, inputs='randn(4,')",
    "dtypes: unknown 'float64'": f"@pytest.mark.adcheck_kernel(fused_rms, against=rms_reference, "
                                 f"inputs={SPEC}, dtypes='float64')",
    "not tol": f"@pytest.mark.adcheck_kernel(fused_rms, against=rms_reference, inputs={SPEC}, "
               "tol=1)",
}


def test_a_bad_marker_fails_collection_in_one_line(kernels_project):
    for k, marker in enumerate(BAD_MARKERS.values()):
        kernels_project.makepyfile(**{f"test_bad{k}": _module(marker)})
    result = kernels_project.runpytest()
    assert result.ret != 0
    for k, message in enumerate(BAD_MARKERS):
        result.stdout.fnmatch_lines([f"*test_bad{k}.py::test_kernel: adcheck_kernel: *{message}*"])
    assert "Traceback" not in result.stdout.str()
