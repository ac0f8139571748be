"""The fuzzer's rule for rounding magnified by an ill-conditioned program (torch's
own result moved by moving the leaves a few ulps) and the atanh/acosh entry,
each checked against mpmath and against planted differences it must still find."""
from __future__ import annotations

from dataclasses import replace

import mpmath
import numpy as np
import pytest

torch = pytest.importorskip("torch")

import adcheck.refengine as refengine  # noqa: E402
from fuzz import program_for  # noqa: E402
from fuzz_compare import arrays_of  # noqa: E402
from fuzz_known import classify  # noqa: E402
from fuzz_rounding import moved_leaves, torch_moves_as_much  # noqa: E402
from fuzz_shrink import difference  # noqa: E402
from test_fuzz import _program, _with_templates  # noqa: E402

PAIR = (refengine, torch)


class _Scaled:
    """torch with ``op`` off by a relative ``off`` (a single-precision constant)."""

    def __init__(self, op: str, off: float = 3e-8):
        self.op, self.off = op, off

    def __getattr__(self, name):
        if name == self.op:
            return lambda *args: getattr(torch, name)(*args) * (1 + self.off)
        return getattr(torch, name)


def _leaves(program):
    """The program with its E.tensor lines named leaves, as the generator names them."""
    return replace(program, stmts=tuple(replace(st, kind="leaf") if "E.tensor(" in st.code
                                        else st for st in program.stmts))


def test_moved_leaves_keep_zeros_special_values_and_ties():
    p = _leaves(_program("v0 = E.tensor([0.0, -1.0, 0.5, 0.173, 0.173, -2.478], "
                         "dtype=E.float64, requires_grad=True)", "v1 = E.sin(v0)"))
    moved = [float(x) for x in moved_leaves(p, 3).stmts[0].code.split("[")[1].split("]")[0]
             .split(", ")]
    assert moved[:3] == [0.0, -1.0, 0.5]
    assert moved[3] == moved[4] != 0.173
    for was, now in ((0.173, moved[3]), (-2.478, moved[5])):
        assert 1 <= abs((now - was) / np.spacing(was)) <= 6     # a few ulps
    assert moved_leaves(p, 3).stmts[1] == p.stmts[1]


def test_seed_41_sin_of_exp_of_a_power_is_rounding():
    # sin(exp(0.173 ** -2.478)): exp's argument is 77.3, one ulp of it is 1.4e-14,
    # exp makes that 5e19 in sin's argument of 3.7e33
    p = program_for(41, 16446)
    found = difference(p, PAIR)
    if found is None and not np._core._multiarray_umath.__cpu_features__["AVX512F"]:
        pytest.skip("numpy on this CPU has no AVX-512F (its elementwise kernels take "
                    "other paths), and refengine and torch compute this program alike to "
                    "the bit here: there is no difference to classify")
    assert found is not None and (found.kind, found.stmt) == ("value", "{a}.sin_()")
    ref, tor = arrays_of(found)
    gap = abs(ref[1, 2] - tor[1, 2])
    assert gap > 0.5
    # mpmath: the exact function at the float 0.173 and at its neighbours a few ulps
    # away spreads over more than the engines' gap, so neither engine is wrong
    mpmath.mp.dps = 80
    f = [mpmath.sin(mpmath.exp(mpmath.mpf(x) ** mpmath.mpf(-2.478)))
         for x in (0.173, *np.nextafter(0.173, [0.0, 1.0]),
                   np.nextafter(np.nextafter(0.173, 1.0), 1.0))]
    assert float(max(f) - min(f)) > gap
    assert torch_moves_as_much(found, p, PAIR)
    assert classify(found, p.source(), p, PAIR) == "known"
    assert classify(found, p.source()) == "new"          # known by the second runs only


def test_seed_40_double_backward_through_abs_of_sin_is_rounding():
    # the gradient of v2[0, 0] sums terms of 1e9 (|cos w|^2 |exp v0|^2 with |cos w| of
    # 3e3) that cancel to 47.5: both engines are some 1e-9 off the exact value
    p = program_for(40, 16077)
    found = difference(p, PAIR)
    assert found is not None and (found.kind, found.label) == ("grad", "end v2")
    ref, tor = (a[0, 0] for a in arrays_of(found))
    mpmath.mp.dps = 50
    v0, v1 = mpmath.mpc(2.0, -0.956), mpmath.mpc(-0.478, 2.724)

    def loss(x):        # v13 as a function of v2[0, 0], where v5.real > 0
        e = mpmath.exp(v0)
        w = e - v1 + x
        g = mpmath.conj(mpmath.cos(w)) * mpmath.sin(w) / abs(mpmath.sin(w))
        return abs(g * mpmath.conj(e)) ** 2 + mpmath.re(g) ** 2
    exact = float(mpmath.diff(loss, mpmath.mpf(0.5)))
    assert abs(tor - exact) > 1e-10 * exact and abs(ref - exact) > 1e-10 * exact
    assert abs(ref - tor) > 1e-9 * exact
    assert torch_moves_as_much(found, p, PAIR)
    assert classify(found, p.source(), p, PAIR) == "known"
    # the same program with torch's sin off by a single-precision constant: the
    # well-conditioned elements differ by 3e-8 where torch moves by ulps
    planted = _Scaled("sin")
    wrong = difference(p, (refengine, planted))
    assert wrong is not None and not torch_moves_as_much(wrong, p, (refengine, planted))
    assert classify(wrong, p.source(), p, (refengine, planted)) == "new"


def test_a_single_precision_constant_in_a_well_conditioned_chain_is_found():
    p = _leaves(_with_templates(_program(
        "v0 = E.tensor([0.731, 1.42, 2.537], dtype=E.float64, requires_grad=True)",
        "v1 = E.tensor([-0.35, 0.813, 1.7], dtype=E.float64, requires_grad=True)",
        "v2 = E.xlogy(v1, v0)", "v3 = v2.sum()", "v3.backward()"), ("E.xlogy({a}, {b})",)))
    assert difference(p, PAIR) is None
    planted = _Scaled("xlogy")
    found = difference(p, (refengine, planted))
    assert found is not None and found.kind == "value"
    ref, tor = arrays_of(found)
    np.testing.assert_allclose(tor / ref, 1 + 3e-8, rtol=1e-12)
    assert not torch_moves_as_much(found, p, (refengine, planted))
    assert classify(found, p.source(), p, (refengine, planted)) == "new"


def test_atanh_near_1_is_known_within_what_a_few_ulps_of_its_input_make():
    # tanh(10.1) is 0.9999999966249402 in NumPy, ...403 in torch (one ulp); atanh's
    # condition there is 1 / (1 - x^2) = 1.5e8, so the results are 1.6e-8 apart
    p = _leaves(_with_templates(_program("v0 = E.tensor([10.1, 0.3], dtype=E.float64)",
                                         "v1 = E.tanh(v0)", "v2 = E.atanh(v1)"),
                                ("E.atanh({a})",)))
    found = difference(p, PAIR)
    assert found is not None and (found.kind, found.stmt) == ("value", "E.atanh({a})")
    x = float(torch.tanh(torch.tensor(10.1, dtype=torch.float64)))
    ulp_effect = float(mpmath.atanh(mpmath.mpf(x)) - mpmath.atanh(mpmath.mpf(np.nextafter(x, 0))))
    ref, tor = arrays_of(found)
    assert abs(ref[0] - tor[0]) <= 2 * ulp_effect
    assert classify(found, p.source()) == "known"
    # atanh off by 3e-8 relative where it is well conditioned (0.3) is a finding
    planted = _Scaled("atanh")
    wrong = difference(p, (refengine, planted))
    assert classify(wrong, p.source(), p, (refengine, planted)) == "new"
