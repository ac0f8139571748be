"""Our verdicts against torch.autograd.gradcheck's, on the zoo and on torch ops.

The oracle is PyTorch itself: where both use the same tolerances, both must
say the same. The only allowed difference is by design: with
check_forward_ad=True we also check the adjoint identity, which sees
mismatches between the two AD modes far below rtol.
"""
from __future__ import annotations

import warnings

import gradcheck_zoo as zoo
import pytest

from adcheck.gradcheck import check, gradcheck, gradgradcheck

torch = pytest.importorskip("torch", reason="the parity tests compare against torch")

ENTRIES = zoo.all_entries()


def torch_verdict(fn, f, inputs, *args, **kw) -> bool:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return fn(f, inputs, *args, **kw)
        except Exception:  # a failing torch gradcheck raises
            return False


@pytest.mark.parametrize("entry", ENTRIES, ids=lambda e: e.name)
@pytest.mark.parametrize("options", [{}, {"fast_mode": True}, {"check_forward_ad": True}],
                         ids=["slow", "fast", "forward"])
def test_zoo_verdict_matches_torch(entry, options):
    f, inputs = entry.build(torch), entry.inputs(torch)
    expected = torch_verdict(torch.autograd.gradcheck, f, inputs, **options)
    report = check(f, inputs, seed=1, **options)
    if expected and not report.passed:
        # stricter only through the adjoint identity, and only below rtol
        assert options.get("check_forward_ad"), report.message()
        assert {r.check for r in report.failures} == {"adjoint"}, report.message()
        assert entry.caught_by in ("adjoint", "precise")
    else:
        assert report.passed == expected, report.message()


@pytest.mark.parametrize("entry", zoo.second_order_entries(), ids=lambda e: e.name)
def test_zoo_gradgrad_verdict_matches_torch(entry):
    f, inputs = entry.build(torch), entry.inputs(torch)
    gen = torch.Generator().manual_seed(0)
    out = f(*inputs)
    grad_out = torch.rand(out.shape, dtype=out.dtype, generator=gen).requires_grad_()
    expected = torch_verdict(torch.autograd.gradgradcheck, f, inputs, (grad_out,))
    assert gradgradcheck(f, inputs, (grad_out,), raise_exception=False, seed=0) == expected


def _x(*shape, dtype=torch.float64, low=0.2):
    gen = torch.Generator().manual_seed(sum(shape) + 7)
    x = torch.rand(*shape, dtype=dtype, generator=gen) + low
    return x.requires_grad_()


OPS = [
    ("sin", torch.sin, lambda: (_x(4),)),
    ("log", torch.log, lambda: (_x(4),)),
    ("sqrt_complex", torch.sqrt, lambda: (_x(3, dtype=torch.complex128),)),
    ("abs_complex", torch.abs, lambda: (_x(3, dtype=torch.complex128),)),
    ("angle_complex", torch.angle, lambda: (_x(3, dtype=torch.complex128),)),
    ("mul_mixed", torch.mul, lambda: (_x(3), _x(3, dtype=torch.complex128))),
    ("matmul", torch.matmul, lambda: (_x(2, 3), _x(3, 2))),
    ("inv", torch.linalg.inv, lambda: (_x(3, 3) + 2 * torch.eye(3, dtype=torch.float64),)),
    ("det_complex", torch.linalg.det, lambda: (_x(2, 2, dtype=torch.complex128),)),
    ("softmax", lambda x: torch.softmax(x, 0), lambda: (_x(4),)),
    ("max_two_outputs", lambda x: torch.max(x, 1), lambda: (_x(2, 3),)),
    ("unbind", torch.unbind, lambda: (_x(2, 2),)),
]


@pytest.mark.parametrize("name,op,make", OPS, ids=[o[0] for o in OPS])
def test_torch_ops_pass_like_torch(name, op, make):
    inputs = make()
    options = dict(check_forward_ad=True, check_batched_grad=True,
                   check_batched_forward_grad=True, check_grad_dtypes=True)
    expected = torch_verdict(torch.autograd.gradcheck, op, inputs, **options)
    assert expected, "torch itself must accept these correct ops"
    assert gradcheck(op, inputs, **options)
    assert gradcheck(op, inputs, fast_mode=True, check_forward_ad=True)
    assert gradgradcheck(op, inputs, check_fwd_over_rev=True)
