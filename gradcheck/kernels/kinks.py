"""A reference that fails its own check only where it is not differentiable.

The reference's precise check runs at the kernel's inputs cast to float64. A
bfloat16 or float16 draw holds few distinct values, so it often sits exactly
on a kink of the reference (hardswish's ``clamp(x + 3, 0, 6)`` at x = -3.0,
a ReLU at 0, a tie of a max): central differences there average the two
sides, and the check fails a right formula. Before the reference is blamed,
each coordinate where it failed is judged by its one-sided derivatives
(``explore.brackets``, on the reference as a function of that coordinate
alone): a kink where its formula lies between two sides that differ, right
(the precise check's failure not confirmed) where they agree with it; then
the reference is checked again over every other coordinate. It is right when
that check passes; wrong when a failing coordinate's formula leaves its
bracket (or is NaN, or jumps), when the failures cannot be located, or when
more than ``MAX_KINKS`` coordinates would have to be set aside. At a kink
the kernel may take either side's derivative or one between them
(``widened``): torch's hardswish takes the other side's than a reference's
``clamp``.
"""
from __future__ import annotations

import numpy as np
import torch

from adcheck.gradcheck.api import run as run_check
from adcheck.gradcheck.core.evaluation import Evaluator
from adcheck.gradcheck.core.jacobian import Jacobian
from adcheck.gradcheck.core.options import Options
from adcheck.gradcheck.core.problem import Problem
from adcheck.gradcheck.explore import brackets
from adcheck.gradcheck.explore.search import EXPLAINABLE
from adcheck.gradcheck.kernels import device

#: coordinates judged by their sides at most (the one-sided judgement moves each)
MAX_KINKS = 64
#: checks of the rest at most: each may locate one more kink per block
ROUNDS = 8
#: the one-sided derivatives' step, relative to the coordinate (at least 1): with
#: Richardson's step halved, their error is of its square times the curvature
SIDE_STEP = 2.0 ** -20
#: kinks named in the note at most
NAMED = 6
#: one-sided derivatives that differ by more than this fraction of the block's
#: largest entry make a kink (theirs differ by that step times the curvature)
SIDES_DIFFER = 1e-4


def between_sides(ref, cpu64: tuple, report, budget: int) -> dict | None:
    """Where the reference's failed ``report`` at ``cpu64`` is explained by its
    one-sided derivatives: by input, flat coordinate to verdict ("kink": not
    differentiable there, its formula one side's or between; "agree": the
    sides agree with its formula, the precise check's failure not confirmed);
    ``None`` where they do not explain it (see the module docstring)."""
    if any(torch.is_complex(x) for x in cpu64):
        return None     # (a failure's column is then a real coordinate of a pair)
    judged: dict = {}
    failed = report
    for _ in range(ROUNDS):
        found = _located(failed, cpu64, judged)
        if not found or sum(len(c) for c in judged.values()) + len(found) > MAX_KINKS:
            return None
        for i, c in found:
            verdict = _verdict(ref, cpu64, i, c)
            if verdict is None:
                return None
            judged.setdefault(i, {})[c] = verdict
        rest = {i: [c for c in range(cpu64[i].numel()) if c not in judged.get(i, ())]
                for i, x in enumerate(cpu64) if x.requires_grad}
        func, args = _restricted(ref, cpu64, rest)
        if not any(a.numel() for a in args):
            return judged
        failed = run_check(func, args, Options(precise=True, memory_budget=budget,
                                               explore=False))
        failed.settings["coordinates"] = rest
        if failed.passed:
            return judged
    return None


def at_failures(results: list, jacobians: dict, expected, ref, wide: tuple,
                judged: dict) -> dict:
    """Kinks of the reference among the columns where the kernel's failing
    Jacobian blocks (``results``) differ most from its float64 ``expected``
    (by input, flat coordinate to "kink"): coordinates along which the
    reference's one-sided derivatives differ, where its own check passed (a
    tie's gradient split in half is the central quotient too) and the kernel
    took another side. Columns already ``judged`` are left out."""
    found: dict = {}
    for result in results:
        key = (result.out_idx, result.in_idx)
        if result.passed or result.check not in ("reverse", "forward") \
                or key not in expected.blocks or result.check not in jacobians:
            continue
        i, wanted = result.in_idx, expected.blocks[key]
        with np.errstate(invalid="ignore"):
            errors = np.nan_to_num(np.abs(jacobians[result.check].blocks[key] - wanted),
                                   nan=np.inf).max(axis=0)
        columns = np.argsort(-errors)[:MAX_KINKS]
        scale = float(np.max(np.abs(wanted), initial=0.0))
        for c in (int(c) for c in columns if errors[c] >= errors.max() / 4):
            if c in judged.get(i, {}) or c in found.get(i, {}):
                continue
            left, right = _one_sided(ref, wide, i, c)
            if any(np.any(np.abs(left[o] - right[o]) > SIDES_DIFFER * scale) for o in left):
                found.setdefault(i, {})[c] = "kink"
    return found


def at_kinks(judged: dict | None) -> dict:
    """The coordinates of ``between_sides``' verdicts that are kinks, by input."""
    return {i: sorted(c for c, v in found.items() if v == "kink")
            for i, found in (judged or {}).items()
            if any(v == "kink" for v in found.values())}


def widened(expected, ref, wide: tuple, judged: dict | None) -> tuple:
    """``(expected, extra)``: the reference's float64 Jacobian with each kink's
    column at the middle of its one-sided derivatives, and by block the half
    width of that bracket in those columns (0 elsewhere): a kernel is right
    there with either side's derivative or one between them."""
    kinks = at_kinks(judged)
    if not kinks:
        return expected, {}
    blocks, extra = dict(expected.blocks), {}
    for i, columns in kinks.items():
        for c in columns:
            left, right = _one_sided(ref, wide, i, c)
            for (o, j), block in expected.blocks.items():
                if j != i or o not in left:
                    continue
                if blocks[o, j] is block:
                    blocks[o, j], extra[o, j] = block.copy(), np.zeros(block.shape)
                blocks[o, j][:, c] = (left[o] + right[o]) / 2
                extra[o, j][:, c] = np.abs(left[o] - right[o]) / 2
    return Jacobian(expected.mode, expected.layout, blocks), extra


def describe(judged: dict, wide: tuple) -> list:
    """The notes naming where the reference's own check failed and its one-sided
    derivatives cleared it."""
    def where(verdict):
        places = [f"input {i} at flat index {c} ({float(wide[i].detach().reshape(-1)[c]):g})"
                  for i, found in judged.items() for c, v in sorted(found.items())
                  if v == verdict]
        more = f", and {len(places) - NAMED} more" if len(places) > NAMED else ""
        return ", ".join(places[:NAMED]) + more
    notes = []
    if at_kinks(judged):
        notes.append(f"the inputs sit where the reference is not differentiable ({where('kink')}):"
                     " its derivatives there lie between its one-sided ones, and the kernel's "
                     "may be either side's or between")
    if any(v == "agree" for found in judged.values() for v in found.values()):
        notes.append(f"the reference's own precise check failed at {where('agree')}, where its "
                     "one-sided derivatives agree with its formula: judged right there")
    return notes


def _one_sided(ref, wide: tuple, i: int, c: int) -> tuple:
    """``(left, right)`` by output: the derivatives of the reference's outputs
    (flat) along flat coordinate ``c`` of input ``i`` from each side, each
    extrapolated from steps ``h`` and ``h / 2`` (Richardson)."""
    x = wide[i].detach()
    h = SIDE_STEP * max(1.0, abs(float(x.reshape(-1)[c])))

    def at(step):
        moved = list(wide)
        flat = x.reshape(-1).clone()
        flat[c] += step
        moved[i] = flat.reshape(x.shape)
        with torch.no_grad():
            outs = ref(*moved)
        outs = outs if isinstance(outs, (tuple, list)) else (outs,)
        return {o: y.detach().double().cpu().reshape(-1).numpy()
                for o, y in enumerate(outs) if device.floating(y)}
    base = at(0.0)
    sides = []
    for sign in (-1.0, 1.0):
        far, near = at(sign * h), at(sign * h / 2)
        sides.append({o: 2 * (near[o] - base[o]) / (sign * h / 2) - (far[o] - base[o]) / (sign * h)
                      for o in base})
    return sides[0], sides[1]


def _located(report, cpu64: tuple, kinks: dict) -> list:
    """``(input, flat coordinate)`` of each failure of ``report`` (a check of the
    reference or of its restriction to ``report.settings["coordinates"]``);
    empty where some failure is not a Jacobian's or has no location."""
    chosen = report.settings.get("coordinates")
    differentiable = [i for i, x in enumerate(cpu64) if x.requires_grad]
    found = []
    for failure in report.failures:
        if failure.check not in EXPLAINABLE or failure.where is None \
                or failure.in_idx is None or len(failure.where) != 2:
            return []
        i = failure.in_idx if chosen is None else list(chosen)[failure.in_idx]
        column = int(failure.where[1])
        c = column if chosen is None else chosen[i][column]
        if i not in differentiable or c in kinks.get(i, ()):
            return []
        found.append((i, c))
    return found


def _verdict(ref, cpu64: tuple, i: int, c: int) -> str | None:
    """The one-sided verdict on the reference along flat coordinate ``c`` of
    input ``i`` alone: "agree", "kink", or ``None`` (its formula outside the
    sides, NaN, a jump, or no verdict)."""
    func, args = _restricted(ref, cpu64, {i: [c]})
    try:
        checked = run_check(func, args, Options(precise=True, explore=False))
        if checked.passed:
            return "agree"
        if any(f.check not in EXPLAINABLE for f in checked.failures):
            return None
        jacobians = {m: checked.jacobians[m] for m in ("reverse", "forward")
                     if m in checked.jacobians}
        problem = Problem(func, args, "reference", warn_precision=False)
        verdict = brackets.judge(Evaluator(problem), jacobians, list(range(len(args))))
    except Exception:  # noqa: BLE001 - no one-sided verdict: the failure stands
        return None
    return verdict.verdict if verdict.verdict in ("agree", "kink") else None


def _restricted(ref, cpu64: tuple, coordinates: dict) -> tuple:
    """``(func, args)``: the reference as a function of the flat ``coordinates``
    of each input (by input index), the other coordinates and inputs held at
    their values; ``args`` those coordinates' values, requiring grad."""
    order = list(coordinates)
    index = {i: torch.tensor(coordinates[i], dtype=torch.long) for i in order}
    held = [x.detach() for x in cpu64]

    def restricted(*parts):
        full = list(held)
        for i, part in zip(order, parts):
            flat = held[i].reshape(-1).index_put((index[i],), part)
            full[i] = flat.reshape(held[i].shape)
        return ref(*full)
    restricted.__name__ = getattr(ref, "__name__", "reference")
    args = tuple(held[i].reshape(-1)[index[i]].clone().requires_grad_() for i in order)
    return restricted, args
