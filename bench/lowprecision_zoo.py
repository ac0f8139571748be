"""Issue 17's zoo targets, measured: the planted bugs of tests/gradcheck run in
float32, bfloat16 and float16 with ``check(precise=True)``.

Per path (engine, dtype, and whether the numerical side ran in float64 or in
the dtype itself) it prints:

- ``target``: the relative-error entries of the zoo (``relative_entries``:
  vjp or jvp off by a factor ``1 + rel``) at the issue's target ``rel``,
  caught by the mode they were planted in;
- ``bugs``: every planted bug of the zoo (real-valued ones; complex ones too
  in float32, as complex64), caught or not. The zoo's ``rel_1e-6`` and
  ``rel_1e-4`` kinds are smaller than some dtypes can resolve: they are
  listed separately with the resolution the check stated;
- ``correct``: the zoo's correct formulas, first and second order, passing.

    python bench/lowprecision_zoo.py [--paths float32,bfloat16]
"""
from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests" / "gradcheck")]

import gradcheck_zoo as zoo  # noqa: E402
from adcheck import refengine  # noqa: E402
import torch  # noqa: E402

from adcheck.gradcheck import check  # noqa: E402

#: label -> (engine module, dtype name, low_precision keyword, target relative error)
PATHS = {"float32 refengine": (refengine, "float32", "auto", 1e-5),
         "float32": (torch, "float32", "auto", 1e-5),
         "float32 in float32": (torch, "float32", "dtype", 1e-3),
         "bfloat16": (torch, "bfloat16", "auto", 3e-2),
         "float16": (torch, "float16", "auto", 3e-2)}
#: bugs by design smaller than a relative 1e-3 (``vjp_nondeterministic``: noise of a
#: relative 1e-9, which rounding to float32 or narrower removes: the vjp is deterministic)
SMALL = ("rel_1e-6", "rel_1e-4", "vjp_nondeterministic")


def _cast(E, inputs, name: str):
    real, complex_ = getattr(E, name), E.complex64
    out = []
    for x in inputs:
        if hasattr(x, "is_floating_point") and (x.is_floating_point() or x.is_complex()):
            target = complex_ if x.is_complex() else real
            x = x.detach().to(target).requires_grad_(x.requires_grad)
        out.append(x)
    return tuple(out)


def _check(entry, E, name, low, **keywords):
    inputs = _cast(E, entry.inputs(E), name)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return check(entry.build(E), inputs, precise=True, seed=0, low_precision=low,
                         **keywords)
        except Exception as exc:  # noqa: BLE001 - a traceback is a finding here
            return exc


def _keywords(entry) -> dict:
    if entry.caught_by == "gradgrad":
        return {"order": 2}
    return {"check_forward_ad": True}


def _usable(entry, name: str) -> bool:
    return name == "float32" or "complex" not in entry.name and entry.name not in (
        "conj-missing_conj", "abs_squared-conj")


def run_path(label: str) -> None:
    E, name, low, target = PATHS[label]
    planted = zoo.relative_entries(target)
    caught = [e.name for e in planted
              if not isinstance(r := _check(e, E, name, low, check_forward_ad=True), Exception)
              and e.caught_by in {f.check for f in r.failures}]
    print(f"{label}: target {target:g}: {len(caught)}/{len(planted)} caught; missed: "
          f"{sorted(set(e.name for e in planted) - set(caught)) or 'none'}")
    bugs = [e for e in zoo.bugs() if _usable(e, name)]
    missed, small, errors = [], [], []
    for e in bugs:
        r = _check(e, E, name, low, **_keywords(e))
        if isinstance(r, Exception):
            errors.append(f"{e.name}: {type(r).__name__}")
        elif r.passed:
            stated = [x.precision.resolution for x in r.results
                      if x.precision is not None and x.precision.resolution]
            note = f"{e.name} (stated {max(stated):.1e})" if stated else e.name
            (small if any(s in e.name for s in SMALL) else missed).append(note)
    print(f"{label}: bugs {len(bugs) - len(missed) - len(small) - len(errors)}/{len(bugs)} "
          f"caught; missed: {missed or 'none'}; below resolution: {small or 'none'}; "
          f"errors: {errors or 'none'}")
    correct = [e for e in zoo.correct() if _usable(e, name)]
    alarms = []
    for e in correct:
        for keywords in ({"check_forward_ad": True}, {"order": 2}):
            r = _check(e, E, name, low, **keywords)
            if isinstance(r, Exception) or not r.passed:
                alarms.append(f"{e.name} {keywords}")
    print(f"{label}: correct {2 * len(correct) - len(alarms)}/{2 * len(correct)} passed; "
          f"false alarms: {alarms or 'none'}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--paths", default=",".join(PATHS),
                        help="comma-separated, from: " + ", ".join(PATHS))
    for label in parser.parse_args().paths.split(","):
        run_path(label)


if __name__ == "__main__":
    main()
