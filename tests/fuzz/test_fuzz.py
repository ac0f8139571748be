"""The differential fuzzer: its parts checked on planted differences, and a
short fixed-seed run that must find nothing outside the known and open lists."""
from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import adcheck.refengine as refengine  # noqa: E402
from fuzz_compare import first_difference, same  # noqa: E402
from fuzz_engine import observe  # noqa: E402
from fuzz_known import classify  # noqa: E402
from fuzz_program import Program, Stmt, generate  # noqa: E402
from fuzz_shrink import difference, reproducer, shrink  # noqa: E402

HERE = Path(__file__).resolve().parent


def _program(*lines, mode="backward"):
    stmts = []
    for line in lines:
        target = line.split(" = ")[0] if " = " in line else None
        uses = tuple(sorted({w for w in line.replace("(", " ").replace(")", " ").replace(
            ".", " ").replace(",", " ").split() if w.startswith("v") and w[1:].isdigit()}
            - {target}))
        stmts.append(Stmt(line, target, uses, line.split(" = ")[-1].split("(")[0],
                          observe=target or (uses[0] if uses else None)))
    return Program(tuple(stmts), mode)


class _Planted:
    """torch with one planted bug: ``op`` (sin unless named) is off by ``off``."""

    def __init__(self, op: str = "sin", off: float = 1e-6):
        self.op, self.off = op, off

    def __getattr__(self, name):
        if name == self.op:
            return lambda x: getattr(torch, name)(x) + self.off
        return getattr(torch, name)


def test_generated_programs_are_reproducible_and_varied():
    a = [generate(random.Random(i)).source() for i in range(30)]
    b = [generate(random.Random(i)).source() for i in range(30)]
    assert a == b
    assert len(set(a)) == 30
    text = "\n".join(a)
    for feature in ("register_hook", "_(", "E.no_grad()", "complex128", "backward()",
                    "create_graph=True", "make_dual"):
        assert feature in text, feature


def test_observations_agree_on_a_plain_program_and_see_gradients():
    p = _program("v0 = E.tensor([1.0, 2.0, 3.0], dtype=E.float64, requires_grad=True)",
                 "v1 = E.sin(v0)", "v0.register_hook(hook(1, 2.0))", "v2 = v1.sum()",
                 "v2.backward()")
    ref, tor = observe(p, refengine), observe(p, torch)
    assert first_difference(ref, tor) is None
    grad = dict((label, obs) for label, _, obs in ref)["end v0"][1]["grad"]
    np.testing.assert_allclose(grad, 2 * np.cos([1.0, 2.0, 3.0]), rtol=1e-12)
    assert any("hook 1" in label for label, _, _ in tor)


def test_a_planted_value_difference_is_found_and_shrunk():
    p = _program("v0 = E.tensor([1.0, 2.0], dtype=E.float64, requires_grad=True)",
                 "v1 = E.exp(v0)", "v2 = E.sin(v0)", "v3 = v1 * v2", "v4 = v3.sum()",
                 "v4.backward()")
    found = difference(p, (refengine, _Planted()))
    assert (found.kind, found.stmt, found.label) == ("value", "E.sin", "s2 v2")
    small, d = shrink(p, (refengine, _Planted()))
    assert small.source() == ("v0 = E.tensor([1.0, 2.0], dtype=E.float64, "
                              "requires_grad=True)\nv2 = E.sin(v0)")
    assert d.key == found.key


def test_errors_are_compared_by_whether_raised_type_and_message():
    ok = _program("v0 = E.ones(3) + E.ones(3)")
    bad = _program("v0 = E.ones(3) + E.ones(4)")
    assert first_difference(observe(ok, refengine), observe(bad, torch)).kind == "raises"
    typed = _program("v0 = E.ones(3)[7]")
    ref, tor = observe(typed, refengine), observe(typed, torch)
    assert ref[0][2][:2] == tor[0][2][:2] == ("raises", "IndexError")


def test_comparison_tolerates_rounding_but_not_a_single_precision_constant():
    x = np.array([1.0, -2.5, np.nan, np.inf])
    assert same(x, x * (1 + 1e-13))
    assert not same(x, x * (1 + 2e-8))
    assert not same(x, np.array([1.0, -2.5, 0.0, np.inf]))
    assert not same(x, np.array([1.0, -2.5, np.nan, -np.inf]))


def test_the_reproducer_runs_standalone_and_shows_both_engines(tmp_path):
    p = _program("v0 = E.tensor([0.0, 1.0], dtype=E.float64, requires_grad=True)",
                 "v1 = (v0 * 2).sum()", "v1.backward()")
    found = first_difference(observe(p, refengine), observe(_program("v0 = 1"), torch))
    script = tmp_path / "repro.py"
    script.write_text(reproducer(p, found, script.name))
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    assert "adcheck.refengine" in out.stdout and "torch" in out.stdout
    assert out.stdout.count("v0.grad = ") == 2


def test_a_short_fixed_seed_run_finds_nothing_new():
    from fuzz import program_for
    news = []
    for i in range(25):
        p = program_for(0, i)
        d = difference(p, (refengine, torch))
        if d is not None and classify(d, p.source(), p, (refengine, torch)) == "new":
            news.append((i, d))
    assert news == [], "\n".join(f"program {i}: {d}" for i, d in news)


def test_a_crash_is_reported_and_the_run_goes_on(tmp_path, monkeypatch):
    from fuzz import run
    monkeypatch.setenv("ADCHECK_FUZZ_CRASH_AT", "1")
    classes = run(3, 0, tmp_path, report=lambda text: None)
    crashes = [(key, record) for key, (hits, record) in classes.items() if key[0] == "crash"]
    assert [r["index"] for _, r in crashes] == [1]
    assert (tmp_path / "at").read_text() == "2"      # the program after the crash ran
    # the planted crash is no crash of torch's: run alone, torch finishes the program
    assert crashes[0][0][2] == "new" and "torch alone: exit 0" in crashes[0][1]["torch"]


def test_a_crash_in_a_second_run_is_put_down_to_the_engine_that_crashes_alone(tmp_path):
    from fuzz import _whose_crash, program_for
    from fuzz_engine import Difference
    # program 11778 of seed 42 runs on torch alone; its conj() rerun (conj_physical, so
    # v1 is written in place under its view v2) crashes torch in v2.register_hook
    text = _whose_crash(42, 11778, tmp_path)
    assert text.startswith("torch alone: exit 0; a second run of it (crash_11778.json)")
    assert text.endswith("on torch alone: exit -11")
    traced = json.loads((tmp_path / "crash_11778.json").read_text())
    assert traced["engine"] == "torch" and "E.conj_physical(v0)" in traced["source"]
    found = Difference("crash", "exit", "", "", f"exit -11; {text}")
    assert classify(found, program_for(42, 11778).source()) == "open"


def _conj_template(program):
    """The program with its conj() lines named by their template, as the generator names them."""
    from dataclasses import replace
    return replace(program, stmts=tuple(replace(st, kind="{a}.conj()") if ".conj()" in st.code
                                        else st for st in program.stmts))


def test_a_conj_view_difference_is_known_only_when_a_copy_makes_it_go_away():
    writes = _conj_template(_program("v0 = E.tensor([complex(1.0, 2.0)], dtype=E.complex128)",
                                     "v1 = v0.conj()", "v1.mul_(2)"))
    found = difference(writes, (refengine, torch))
    assert found is not None        # torch's conj() is a view: the write reaches v0
    assert classify(found, writes.source(), writes, (refengine, torch)) == "known"
    assert classify(found, writes.source()) == "new"     # known by the second run only
    planted = _conj_template(_program("v0 = E.tensor([complex(1.0, 2.0)], dtype=E.complex128)",
                                      "v1 = v0.conj()", "v2 = E.sin(v1.real)"))
    found = difference(planted, (refengine, _Planted()))
    assert found is not None and found.stmt == "E.sin"
    assert classify(found, planted.source(), planted, (refengine, _Planted())) == "new"


def _found(kind, ref, tor):
    from fuzz_engine import Difference
    shot = lambda a: ("tensor", {kind: np.array(a), "value": np.array(a)})  # noqa: E731
    return Difference(kind, "E.exp", "s1 v1", repr(ref), repr(tor), raw=(shot(ref), shot(tor)))


def test_a_number_against_nan_is_not_a_singular_point():
    nan, inf = float("nan"), float("inf")
    assert classify(_found("grad", [1.0, nan], [1.0, inf])) == "known"
    assert classify(_found("grad", [1.0, complex(nan, 0.3)], [1.0, complex(nan, nan)])) \
        == "known"
    assert classify(_found("grad", [1.0, nan], [1.0, 0.0])) == "new"
    assert classify(_found("grad", [1.0, 2.0], [1.0, 2.0 + 1e-6])) == "new"


def test_hooks_of_a_double_backward_in_another_order_are_known_only_with_the_same_gradients():
    lines = ("v0 = E.tensor([-0.786, 2.381, -1.434], dtype=E.float64, requires_grad=True)",
             "v1 = E.tensor([0.749, -0.725, 1.0], dtype=E.float64, requires_grad=True)",
             "v0.register_hook(hook(1, None))", "v1.register_hook(hook(2, None))",
             "v2 = E.xlogy(v1, v0)", "v3 = v0 - v2", "v4 = v3.sum()",
             "v5 = E.autograd.grad(v4, [v0, v1], create_graph=True, allow_unused=True)",
             "v6 = sum((g * g.conj()).real.sum() for g in v5 if g is not None)",
             "v6.backward()")
    p = _program(*lines, mode="double")
    found = difference(p, (refengine, torch))
    assert found is not None and found.kind == "hooks"     # the two hooks swap places
    assert classify(found, p.source(), p, (refengine, torch)) == "known"
    assert classify(found, p.source()) == "new"          # known by the second run only

    class ScaledXlogy:
        """torch with xlogy off by 1e-6: the hooks' gradients differ too."""

        def __getattr__(self, name):
            if name == "xlogy":
                return lambda a, b: torch.xlogy(a, b) * (1 + 1e-6)
            return getattr(torch, name)
    from fuzz_rerun import hooks_in_another_order
    assert not hooks_in_another_order(found, p, (refengine, ScaledXlogy()))


def _with_templates(program, templates):
    """The program with each line that calls one of ``templates`` named by it."""
    from dataclasses import replace
    named = [next((t for t in templates if t.split("(")[0] in st.code), st.kind)
             for st in program.stmts]
    return replace(program, stmts=tuple(replace(st, kind=k)
                                        for st, k in zip(program.stmts, named)))


def test_a_branch_cut_met_by_rounding_is_known_only_when_snapped_operands_agree():
    # z / sgn(z) is |z| with an imaginary part of +-1e-17 (rounding): atanh of a
    # real > 1 then lands on either side of its cut (imaginary part pi/2 or -pi/2)
    p = _with_templates(_program(
        "v0 = E.autograd.forward_ad.make_dual(E.tensor(complex(0.044, 1.104), "
        "dtype=E.complex128), E.tensor(complex(0.288, 0.367), dtype=E.complex128))",
        "v1 = E.sgn(v0)", "v2 = v0 / v1", "v3 = E.atanh(v2)", mode="forward"),
        ("E.sgn({a})", "E.atanh({a})"))
    found = difference(p, (refengine, torch))
    assert found is not None and found.stmt == "E.atanh({a})" and found.kind == "value"
    assert classify(found, p.source(), p, (refengine, torch)) == "known"
    assert classify(found, p.source()) == "new"          # known by the second run only
    # off by 1e-3: far beyond what a few ulps of atanh's input make of it
    wrong = _Planted("atanh", 1e-3)
    assert classify(difference(p, (refengine, wrong)), p.source(), p, (refengine, wrong)) == "new"


def _abs_loss_program(seen_inside: bool = True):
    """Seed 90's program 29134, shrunk: the complex loss |log z - 1 / (1 / log z)|,
    the outer reciprocal under no_grad, then a double backward; the values before
    the loss observed or not (``seen_inside``)."""
    from dataclasses import replace
    p = _program(
        "v0 = E.tensor([complex(-2.0, 1.146), complex(1.314, 0.548), complex(-1.633, -0.114),"
        " complex(-0.56, 2.0)], dtype=E.complex128, requires_grad=True)",
        "v2 = E.log(v0)", "v3 = E.reciprocal(v2)", "v5 = E.reciprocal(v3)",
        "v6 = v2 - v5", "v7 = E.abs(v6).sum()",
        "v8 = E.autograd.grad(v7, [v0], create_graph=True, allow_unused=True)",
        "v9 = sum((g * g.conj()).real.sum() for g in v8 if g is not None)", "v9.backward()",
        mode="double")
    kinds = {3: ("E.reciprocal({a})", "E.set_grad_enabled(False)"), 5: ("loss", None)}
    stmts = [replace(st, kind=kinds[i][0], grad_mode=kinds[i][1]) if i in kinds else st
             for i, st in enumerate(p.stmts)]
    if not seen_inside:
        stmts[1:5] = [replace(st, observe=None) for st in stmts[1:5]]
    return replace(p, stmts=tuple(stmts))


def test_an_abs_loss_of_a_rounding_residue_is_known_only_when_snapping_it_agrees():
    # log z - 1 / (1 / log z) is 0 up to a last bit of each engine's complex
    # division; abs's gradient at that residue is its direction, so the double
    # backward differs by O(1) where the residue is not exactly 0
    p = _abs_loss_program()
    pair = (refengine, torch)
    found = difference(p, pair)
    # the first gradient (abs's direction) differs, then the second
    assert found is not None and found.kind in ("value", "grad")
    assert classify(found, p.source(), p, pair) == "known"
    assert classify(found, p.source()) == "new"          # known by the second run only
    # torch's reciprocal off by 1e-9 (added: a factor would cancel in 1 / (1 / w)):
    # its root is about 1e-9, no residue, and the loss and its gradients differ still
    hidden = _abs_loss_program(seen_inside=False)

    class OffReciprocal:
        def __getattr__(self, name):
            if name == "reciprocal":
                return lambda x: torch.reciprocal(x) + 1e-9
            return getattr(torch, name)
    wrong = (refengine, OffReciprocal())
    planted = difference(hidden, wrong)
    assert planted is not None and planted.stmt in ("loss", "E.autograd.grad")
    assert classify(planted, hidden.source(), hidden, wrong) == "new"


def test_a_result_cancelled_to_zero_is_known_only_below_the_programs_scale():
    p = _program("v0 = E.tensor([1e4, 2.0], dtype=E.float64, requires_grad=True)",
                 "v1 = v0.sum()", "v1.backward()")
    pair = (refengine, torch)
    # 2**-40 * 1e4 is 9.1e-9
    assert classify(_found("grad", [1.0, 5e-9], [1.0, 0.0]), p.source(), p, pair) == "known"
    assert classify(_found("grad", [1.0, 5e-9], [1.0, 0.0])) == "new"
    assert classify(_found("grad", [1.0, 5e-8], [1.0, 0.0]), p.source(), p, pair) == "new"
    assert classify(_found("grad", [1.0, 5e-9], [1.0, 1e-9]), p.source(), p, pair) == "new"


def test_cumprod_and_complex_zero_powers_are_known_only_where_a_side_is_not_finite():
    from dataclasses import replace
    nan, inf = float("nan"), float("inf")
    products = "v1 = E.cumprod(v0, 0)"
    assert classify(_found("grad", [-2.0, inf], [nan, nan]), products) == "known"
    assert classify(_found("grad", [-2.0, 1.0], [nan, 1.5]), products) == "new"
    power = lambda ref, tor: replace(_found("value", ref, tor), stmt="E.pow({a}, {b})")  # noqa
    assert classify(power([1 + 0j, complex(nan, nan)], [complex(nan, nan), complex(inf, nan)])) \
        == "known"
    assert classify(power([1 + 0j, 0.5 + 0j], [complex(nan, nan), 0.25 + 0j])) == "new"
    assert classify(power([1 + 0j], [0j])) == "new"


def test_gradients_that_share_memory_in_torch_are_known_only_when_clones_agree():
    from dataclasses import replace
    lines = ("v0 = E.tensor(complex(-1.393, 0.325), dtype=E.complex128, requires_grad=True)",
             "v1 = E.tensor(0.453, dtype=E.float64, requires_grad=True)",
             "v2 = (v1 + v0).real.sum()", "v2.backward(retain_graph=True)", "v2.backward()")
    p = _program(*lines)
    p = replace(p, stmts=tuple(replace(st, kind="backward") if ".backward(" in st.code else st
                               for st in p.stmts))
    found = difference(p, (refengine, torch))
    assert found is not None and found.kind == "grad"     # torch's z.grad is 3, not 2
    assert classify(found, p.source(), p, (refengine, torch)) == "known"
    assert classify(found, p.source()) == "new"


def test_torchs_is_leaf_assert_is_known_only_for_a_view_as_real_of_a_base_made_to_require_grad():
    # seed 49, program 10071 without make_dual: b is a view of a tensor that does not
    # require grad; torch replays b.real from that root and fails its own assert
    lines = ("v0 = E.tensor([complex(1.0, 2.0), complex(3.0, -1.0)], dtype=E.complex128)[:]",
             "v1 = v0[1]", "v0.requires_grad_()", "v2 = v0.real", "v1.neg_()")
    p = _program(*lines)
    found = difference(p, (refengine, torch))
    assert found is not None and found.kind == "flags"      # torch's v2.is_leaf raises
    assert classify(found, p.source(), p, (refengine, torch)) == "known"
    # the same difference in a program with a slice instead, or no in-place requires_grad_
    assert classify(found, p.source().replace("v0.real", "v0[0:1]")) == "new"
    assert classify(found, p.source().replace("v0.requires_grad_()", "v0.sum()")) == "new"


def test_sgns_zero_tensor_is_known_where_what_it_is_added_to_is_inf_too():
    # seed 57, program 19978: v / sgn(v ** v) at v = [1, -1, -1.405]; torch's ZeroTensor
    # gradient of sgn skips pow's NaN backward (log of a negative base): torch's gradient
    # is 1 / sgn = [1, -1, inf] (sgn(NaN) is 0), refengine's [1, NaN, NaN]
    nan, inf = float("nan"), float("inf")
    with_sgn = "v1 = E.pow(v0, v0)\nv2 = E.sgn(v1)\nv3 = v0 / v2"
    assert classify(_found("grad", [1.0, nan, nan], [1.0, -1.0, inf]), with_sgn) == "known"
    assert classify(_found("grad", [1.0, nan, nan], [1.0, -1.0, inf]),
                    "v1 = E.pow(v0, v0)\nv3 = v0 / v1") == "new"
    assert classify(_found("grad", [1.0, nan, 2.0], [1.0, -1.0, 3.0]), with_sgn) == "new"

