"""Evidence for the probed reverse tolerance: svd_lowrank's complex128 second derivative.

    python bench/probed_tolerance.py data            # the mpmath derivatives (5 s)
    python bench/probed_tolerance.py probed 0 1 ...  # the registry's probed check, by seed
    python bench/probed_tolerance.py dense 4 10 0    # the same check, dense
    python bench/probed_tolerance.py rounding        # what torch's AD error is made of
    python bench/probed_tolerance.py premise         # the probed formulas under the dense premise
    python bench/probed_tolerance.py floor 0 1 ...   # a measured AD rounding floor, by seed
    python bench/probed_tolerance.py calibrate 0 1   # the factor adrounding's floor needs

The function is op_db's first svd_lowrank sample in complex128 (``--registry
torch``): ``f(a, b) = (U V^H, S)`` of ``svd_lowrank(a @ b.mT, q=2)`` with
torch's generator seeded at 42 before each call (op_db's ``wrapper_set_seed``),
``a`` and ``b`` 3 x 2. The check of the second order checks
``g(a, b, v0, v1)``, torch's vjp of ``f`` (``secondorder.first_derivative``).

``data`` computes, in mpmath at 150 digits, the Jacobian ``Jf`` (20 real
outputs by 24 real inputs, adcheck's real layout) and the Hessians ``H`` of
each real output of ``f`` at the sample. ``f`` is written from its
definition (Halko et al.'s algorithm with torch's draw ``R``: the basis of
``(A A^H)^2 A R``, then the SVD of ``Q^H A`` through ``B B^H``), which
with ``A`` of rank 2 = q equals the rank-2 SVD of ``A`` whatever ``R``.
Then every Jacobian the check compares is exact: ``g``'s real coordinates
are ``Jf^T v`` (torch's vjp: ``dL/dRe z + i dL/dIm z`` for
``L = Re <v, f>``), so ``dg/d(a, b) = sum_r v_r H_r`` and ``dg/dv = Jf^T``.
The data go to ``tests/gradcheck/data/svd_lowrank_c128.npz`` for the tests.

Results and the decision: ``bench/probed_tolerance.md``.
"""
from __future__ import annotations

import sys
import time
from pathlib import Path

import mpmath
import numpy as np

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "gradcheck" / "data" / "svd_lowrank_c128.npz"
DPS = 150
STEP = mpmath.mpf(10) ** -40


def sample_call():
    """op_db's svd_lowrank sample 0 in complex128, as the torch registry calls it."""
    import torch

    from adcheck.runner.torchregistry import TorchRegistry
    registry = TorchRegistry()
    entry = registry.get("svd_lowrank")
    sample = list(registry.samples(entry, torch.complex128))[0]
    return registry, entry, registry.call(entry, sample, "torch")


def _matrix(values: np.ndarray):
    return mpmath.matrix([[values[i, j] for j in range(values.shape[1])]
                          for i in range(values.shape[0])])


def _orth(x):
    """Orthonormal columns spanning ``x``'s (Gram-Schmidt: QR's span)."""
    out = mpmath.matrix(x.rows, x.cols)
    for j in range(x.cols):
        v = x[:, j]
        for q in range(j):
            col = out[:, q]
            v = v - col * (col.transpose_conj() * v)[0, 0]
        v = v / mpmath.sqrt(mpmath.re((v.transpose_conj() * v)[0, 0]))
        for i in range(x.rows):
            out[i, j] = v[i]
    return out


def lowrank(a, b, r):
    """``(U V^H, S)`` of ``svd_lowrank(a @ b.T, q=2, niter=2)`` with draw ``r``."""
    A = a * b.T
    Q = _orth(A * r)
    for _ in range(2):
        Q = _orth(A.transpose_conj() * Q)
        Q = _orth(A * Q)
    B = Q.transpose_conj() * A
    h = B * B.transpose_conj()
    tr, det = mpmath.re(h[0, 0] + h[1, 1]), mpmath.re(h[0, 0] * h[1, 1] - h[0, 1] * h[1, 0])
    gap = mpmath.sqrt(tr * tr / 4 - det)
    s = [mpmath.sqrt(tr / 2 + gap), mpmath.sqrt(tr / 2 - gap)]
    # B = U S V^H, so U V^H = (B B^H)^(-1/2) B; a 2 x 2 square root in closed form
    root_det = mpmath.sqrt(det)
    inv_sqrt = mpmath.sqrt(tr + 2 * root_det) * mpmath.inverse(h + root_det * mpmath.eye(2))
    return Q * inv_sqrt * B, s


def _real_outputs(x: list, r) -> list:
    a = _matrix(np.array([mpmath.mpc(x[2 * k], x[2 * k + 1]) for k in range(6)],
                         dtype=object).reshape(3, 2))
    b = _matrix(np.array([mpmath.mpc(x[12 + 2 * k], x[13 + 2 * k]) for k in range(6)],
                         dtype=object).reshape(3, 2))
    F, s = lowrank(a, b, r)
    out = []
    for i in range(3):
        for j in range(3):
            out += [mpmath.re(F[i, j]), mpmath.im(F[i, j])]
    return out + s


def exact_data() -> dict:
    """``Jf`` and ``H`` at the sample, central differences at ``DPS`` digits."""
    import torch

    from adcheck.gradcheck.core import coords
    _, _, call = sample_call()
    torch.manual_seed(42)   # the draw op_db's wrapper makes before each call
    draw = torch.randn(3, 2, dtype=torch.complex128).numpy()
    x0 = np.concatenate([coords.to_real(t.detach().numpy()) for t in call.inputs])
    with mpmath.workdps(DPS):
        r = _matrix(np.vectorize(lambda z: mpmath.mpc(z.real, z.imag), otypes=[object])(draw))
        x = [mpmath.mpf(float(v)) for v in x0]

        def at(moves: dict) -> list:
            return _real_outputs([v + moves.get(k, 0) for k, v in enumerate(x)], r)
        h, n = STEP, len(x)
        jf, hess = np.zeros((20, n)), np.zeros((20, n, n))
        for i in range(n):
            jf[:, i] = [float((p - m) / (2 * h)) for p, m in zip(at({i: h}), at({i: -h}))]
            for j in range(i, n):
                if i == j:   # a second difference of step 2h: f(x+2h) - 2 f(x) + f(x-2h)
                    quads = [at({i: 2 * h}), at({}), at({}), at({i: -2 * h})]
                else:
                    quads = [at({i: si * h, j: sj * h})
                             for si, sj in ((1, 1), (1, -1), (-1, 1), (-1, -1))]
                hess[:, i, j] = hess[:, j, i] = [float((pp - pm - mp + mm) / (4 * h * h))
                                                 for pp, pm, mp, mm in zip(*quads)]
    return {"Jf": jf, "H": hess, "x0": x0, "draw": draw}


def exact_blocks(data: dict, v_real: np.ndarray) -> dict:
    """Every block ``(out, in)`` of ``g``'s Jacobian, real layout, for the
    grad_outputs ``v_real`` (``to_real`` of v0 then of v1)."""
    hg = np.einsum("r,rij->ij", v_real, data["H"])
    cols = {0: hg[:, :12], 1: hg[:, 12:], 2: data["Jf"].T[:, :18], 3: data["Jf"].T[:, 18:]}
    return {(o, i): c[12 * o:12 * (o + 1)] for o in (0, 1) for i, c in cols.items()}



def load() -> dict:
    with np.load(DATA) as held:
        return dict(held)


def grad_outputs(call, seed: int) -> tuple:
    """``g`` and its inputs as ``check(order=2, seed=seed)`` draws them."""
    from adcheck.gradcheck.core import coords
    from adcheck.gradcheck.core.secondorder import first_derivative
    g, ins = first_derivative(call.func, call.inputs, None, np.random.default_rng(seed))
    v = np.concatenate([coords.to_real(ins[2].detach().numpy()),
                        coords.to_real(ins[3].detach().numpy())])
    return g, ins, v


def _cells(seed, dense, report, captured, exact) -> list:
    """Per compared cell: |AD - exact|, |numerical - exact|, tolerance."""
    from adcheck.gradcheck.core import coords
    from adcheck.gradcheck.numerics.precise import precise_tolerances
    rows = []
    if dense:
        num, ad = report.jacobians["numerical"], report.jacobians["reverse"]
        tols = precise_tolerances(num, 2.0 ** -52)
        for key, tol in tols.items():
            true = coords.complex_columns(exact[key], num.layout.in_complex[key[1]])
            a, n = ad.complex_form(*key), num.complex_form(*key)
            rows += [(key, abs(a[i] - true[i]), abs(n[i] - true[i]), tol[i])
                     for i in np.ndindex(tol.shape)]
        return rows
    _, plan, (proj, tols) = captured[0]
    ad = report.jacobians["reverse"]
    for key, tol in tols.items():
        true = plan.rows[key[0]] @ exact[key] @ plan.seeds[key[1]].vectors.T
        rows += [(key, abs(ad.blocks[key][i] - true[i]), abs(proj.blocks[key][i] - true[i]),
                  tol[i]) for i in np.ndindex(tol.shape)]
    return rows


def _spied_check(call, keywords: dict) -> tuple:
    """``check`` with the probed reverse tolerances it computes captured."""
    from adcheck import gradcheck
    from adcheck.gradcheck import producers
    captured, projected = [], producers.projected

    def spy(numerical, plan, how, epsilon):
        found = projected(numerical, plan, how, epsilon)
        captured.append((numerical, plan, found))
        return found
    producers.projected = spy
    try:
        return gradcheck.check(call.func, call.inputs, **keywords), captured
    finally:
        producers.projected = projected


def run_seeds(mode: str, seeds: list) -> None:
    """The registry's gradgrad check of the sample by seed (``dense``: with a
    dense Jacobian), each compared cell set against the exact values."""
    import torch
    registry, entry, call = sample_call()
    keywords = registry.check_keywords(entry, "gradgrad", torch.complex128, True)
    data = load()
    print("| seed | check | largest AD error/tol | numerical error/tol there | "
          "largest numerical error/tol |\n|---|---|---|---|---|")
    for seed in seeds:
        options = {**keywords, "seed": seed}
        if mode == "dense":
            options = {**options, "jacobian": "dense"}
            options.pop("probes", None)
        report, captured = _spied_check(call, options)
        rows = _cells(seed, mode == "dense", report, captured,
                      exact_blocks(data, grad_outputs(call, seed)[2]))
        worst = max(rows, key=lambda r: r[1] / r[3])
        print(f"| {seed} | {'passed' if report.passed else 'FAILED'} | "
              f"{worst[1] / worst[3]:.3f} | {worst[2] / worst[3]:.3f} | "
              f"{max(r[2] / r[3] for r in rows):.3f} |", flush=True)


def measured_floor(seeds: list, moves: int = 4) -> None:
    """The follow-up's evidence: reverse mode's cells ``W^T A U`` again at
    inputs moved by up to 4 ulps of the largest (``moves`` pairs, the second
    difference's largest kept, as ``noisefloor`` does for the function), and
    whether ``SAFETY`` times that, added to the tolerance, covers the AD error."""
    import torch

    from adcheck.gradcheck.core.evaluation import Evaluator
    from adcheck.gradcheck.core.problem import Problem
    from adcheck.gradcheck.large.probed import probed_reverse
    from adcheck.gradcheck.numerics.precise import SAFETY
    registry, entry, call = sample_call()
    keywords = registry.check_keywords(entry, "gradgrad", torch.complex128, True)
    data = load()
    torch.manual_seed(0)   # the moves' draws
    print("| seed | AD error / tol | AD error / (tol + 8 floor) | floor / tol |\n|---|---|---|---|")
    for seed in seeds:
        report, captured = _spied_check(call, {**keywords, "seed": seed})
        _, plan, (_, tols) = captured[0]
        g, ins, v = grad_outputs(call, seed)
        base = report.jacobians["reverse"].blocks
        floor = {key: np.zeros_like(t) for key, t in tols.items()}
        for _ in range(moves):
            step = [4 * 2.0 ** -52 * max(float(t.detach().abs().max()) for t in ins[:2]) *
                    (2 * torch.rand(t.shape, dtype=t.dtype) - (1 + 1j)) for t in ins[:2]]
            at = [probed_reverse(Evaluator(Problem(g, tuple(
                (t.detach() + s * m).requires_grad_() for t, m in zip(ins[:2], step)) +
                tuple(ins[2:]), order=2)), plan).blocks for s in (1, -1)]
            for key in floor:
                np.fmax(floor[key], np.abs(at[0][key] + at[1][key] - 2 * base[key]), out=floor[key])
        exact = exact_blocks(data, v)
        ratios = [(np.abs(base[k] - plan.rows[k[0]] @ exact[k] @ plan.seeds[k[1]].vectors.T),
                   tols[k], floor[k]) for k in tols]
        print(f"| {seed} | {max(np.max(e / t) for e, t, f in ratios):.3f} | "
              f"{max(np.max(e / (t + SAFETY * f)) for e, t, f in ratios):.3f} | "
              f"{max(np.max(f / t) for e, t, f in ratios):.3f} |", flush=True)


def _cells_again(call, keywords: dict, seed: int, dense: bool) -> tuple:
    """The check of ``seed`` (``dense`` or probed) and, for its reverse
    Jacobian: the tolerances it was judged by, and its largest second
    difference at moved inputs (``adrounding.second_differences``, by block)."""
    from functools import partial

    from adcheck.gradcheck.core.evaluation import Evaluator
    from adcheck.gradcheck.core.problem import Problem
    from adcheck.gradcheck.large.probed import probed_reverse
    from adcheck.gradcheck.numerics.adrounding import second_differences
    from adcheck.gradcheck.numerics.precise import precise_tolerances
    from adcheck.gradcheck.core.analytical import ad_blocks
    from adcheck.gradcheck.core.sides import REVERSE
    from adcheck.gradcheck.verdict.noise import moved_evaluators
    options = {**keywords, "seed": seed}
    if dense:
        options = {**options, "jacobian": "dense"}
        options.pop("probes", None)
    report, captured = _spied_check(call, options)
    if dense:
        tols = precise_tolerances(report.jacobians["numerical"], 2.0 ** -52)
        produce = partial(ad_blocks, side=REVERSE)
        plan = None
    else:
        _, plan, (_, tols) = captured[0]
        produce = partial(probed_reverse, plan=plan)
    g, ins, v = grad_outputs(call, seed)
    ev = Evaluator(Problem(g, ins, order=2))
    jac = produce(ev)
    moved = [(produce(a), produce(b)) for a, b in moved_evaluators(ev)]
    return report, plan, tols, jac, second_differences(jac, moved, list(tols)), v


def calibrate(seeds: list) -> None:
    """The factor the measured AD floor needs: per entry (cell) of the reverse
    Jacobian, ``(|AD - exact| - tol) / second difference``, the largest over
    the block; and how much ``FACTOR`` times the floor widens the tolerance."""
    import torch

    from adcheck.gradcheck.core import coords
    from adcheck.gradcheck.numerics.adrounding import FACTOR
    registry, entry, call = sample_call()
    keywords = registry.check_keywords(entry, "gradgrad", torch.complex128, True)
    data = load()
    print("| plan | seed | check | AD error/tol | factor needed | FACTOR floor / tol (median, max) |"
          "\n|---|---|---|---|---|---|")
    for dense in (True, False):
        for seed in seeds:
            report, plan, tols, jac, second, v = _cells_again(call, keywords, seed, dense)
            exact = exact_blocks(data, v)
            need, ratio, widen = 0.0, 0.0, []
            for key, tol in tols.items():
                if dense:
                    true = coords.complex_columns(exact[key], jac.layout.in_complex[key[1]])
                else:
                    true = plan.rows[key[0]] @ exact[key] @ plan.seeds[key[1]].vectors.T
                err = np.abs(jac.complex_form(*key) - true)
                ratio = max(ratio, float(np.max(err / tol)))
                if second[key] > 0:
                    need = max(need, float(np.max((err - tol) / second[key])))
                widen += list((FACTOR * second[key] / tol).ravel())
            print(f"| {'dense' if dense else 'probed'} | {seed} | "
                  f"{'passed' if report.passed else 'FAILED'} | {ratio:.3f} | {need:.3f} | "
                  f"{np.median(widen):.2f}, {np.max(widen):.2f} |", flush=True)


def ad_hessian(x0: np.ndarray, v_real: np.ndarray, draw_seed: int, dtype=None) -> np.ndarray:
    """torch's double backward of ``f``: ``d grad_(a,b) / d(a,b)`` (24 x 24, real
    layout) with the generator seeded at ``draw_seed`` (42: op_db's draw)."""
    import torch
    dtype = dtype or torch.complex128
    real = torch.float64 if dtype == torch.complex128 else torch.float32
    v0 = torch.view_as_complex(torch.tensor(v_real[:18]).reshape(9, 2)).reshape(3, 3)
    v1 = torch.tensor(v_real[18:])
    x = torch.tensor(x0).requires_grad_()
    z = torch.view_as_complex(x.reshape(12, 2)).to(dtype)
    torch.manual_seed(draw_seed)
    U, S, V = torch.svd_lowrank(z[:6].reshape(3, 2) @ z[6:].reshape(3, 2).mT, q=2)
    loss = (v0.to(dtype).conj() * (U @ V.mH)).real.sum() + (v1.to(real) * S).sum()
    grad, = torch.autograd.grad(loss, x, create_graph=True)
    return np.array([torch.autograd.grad(grad[k], x, retain_graph=True)[0].numpy()
                     for k in range(len(x0))])


def rounding() -> None:
    """Whether torch's AD error is rounding: it must change with the draw ``R``
    (which the exact function does not depend on), grow as the precision
    shrinks, and show when the inputs move by a few ulps."""
    import torch
    data = load()
    _, _, call = sample_call()
    v = grad_outputs(call, 4)[2]
    true = np.einsum("r,rij->ij", v, data["H"])
    scale = np.abs(true).max()
    print("| dtype | draw seed | max abs(AD - exact) / max abs(exact) | signed sum / max |\n"
          "|---|---|---|---|")
    for dtype in (torch.complex128, torch.complex64):
        for draw in (42, 0, 1, 2, 3):
            err = ad_hessian(data["x0"], v, draw, dtype) - true
            print(f"| {str(dtype)[6:]} | {draw} | {np.abs(err).max() / scale:.2e} | "
                  f"{err.sum() / scale:+.2e} |")
    base = ad_hessian(data["x0"], v, 42)
    rng = np.random.default_rng(1)
    for trial in range(4):
        move = 4 * 2.0 ** -52 * np.abs(data["x0"]).max() * rng.uniform(-1, 1, 24)
        second = np.abs(ad_hessian(data["x0"] + move, v, 42) +
                        ad_hessian(data["x0"] - move, v, 42) - 2 * base)
        print(f"moves of 4 ulps, trial {trial}: largest second difference of the AD values "
              f"{second.max() / scale:.2e} of the block's largest; AD error within 8 times it "
              f"in {np.mean(np.abs(base - true) <= 8 * second):.0%} of entries")


def premise(trials: int = 4000) -> None:
    """Every entry of ``A`` off by its dense allowance ``c |J_ij|`` with a random
    sign: how often each candidate reverse tolerance calls a cell of ``W^T A U``
    wrong (gradgrad blocks d grad_b / d b at random grad_outputs)."""
    data, rng = load(), np.random.default_rng(0)
    c = 2.0 ** -26 / 2
    found = {"|w|^T |J u| (the check's)": [], "||w * J u|| (root-sum-square)": [],
             "|w|^T |J| |u| (the bound, |J| unknown to a probed check)": []}
    for _ in range(trials):
        J = np.einsum("r,rij->ij", rng.uniform(-1, 1, 20), data["H"])[12:, 12:]
        W = rng.standard_normal((4, 12))
        W /= np.linalg.norm(W, axis=1, keepdims=True)
        U = rng.standard_normal((4, 12))
        err = np.abs(W @ (c * np.abs(J) * rng.choice([-1, 1], J.shape)) @ U.T)
        JU = J @ U.T
        for name, tol in zip(found, (np.abs(W) @ np.abs(JU), np.sqrt(W ** 2 @ JU ** 2),
                                     np.abs(W) @ np.abs(J) @ np.abs(U.T))):
            found[name].append((err / (c * tol)).ravel())
    print("| tolerance | cells over it | 99.9 % quantile of error/tolerance |\n|---|---|---|")
    for name, ratios in found.items():
        ratios = np.concatenate(ratios)
        print(f"| {name} | {np.mean(ratios > 1):.1%} | {np.quantile(ratios, 0.999):.2f} |")


def main(argv: list) -> None:
    mode, seeds = argv[0], [int(s) for s in argv[1:]]
    if mode == "data":
        start = time.perf_counter()
        DATA.parent.mkdir(parents=True, exist_ok=True)
        np.savez_compressed(DATA, **exact_data())
        print(f"{DATA} in {time.perf_counter() - start:.1f} s")
    elif mode in ("probed", "dense"):
        run_seeds(mode, seeds or list(range(24)))
    elif mode == "floor":
        measured_floor(seeds or list(range(24)))
    elif mode == "calibrate":
        calibrate(seeds or list(range(24)))
    elif mode == "rounding":
        rounding()
    else:
        premise()


if __name__ == "__main__":
    main(sys.argv[1:])
