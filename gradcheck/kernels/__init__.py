"""Kernels judged against a reference: ``check(kernel, inputs, against=ref)``.

A fused kernel (attention, a norm, a fused loss; Triton, CUDA or torch code)
that runs only in bfloat16, float16 or float32, possibly only on an
accelerator, is judged against a plain reference of ordinary ops run in
float64: the reference's own derivatives first, then the kernel's values,
vjps and jvps, within the rounding its dtype allows, each comparison with
the resolution it had (``docs/kernels.md``).

Owns: the order of such a check (``judge``), running on the inputs' device
(``device``), the allowance from the rounding of the same computation
(``rounding``), the second order (``second``), complex kernels as the real
function of their real and imaginary parts (``complexes``) and the results
and their words (``verdicts``).

May import: every room below it and the plan (``gradcheck.api``); nothing
imports it but the front ends (the CLI, the pytest plugin).

Example::

    from adcheck.gradcheck import kernels
    report = kernels.check(fused_rms_norm, (x, w), against=rms_norm_reference)
    print(kernels.summary(report))
"""
from adcheck.gradcheck.kernels.judge import check
from adcheck.gradcheck.kernels.verdicts import summary

__all__ = ["check", "summary"]
