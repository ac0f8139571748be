"""Snapshot every verdict gradcheck gives, then compare two snapshots.

A refactor of gradcheck must not change what it finds. This script runs
``gradcheck.check`` over the test zoo (right and planted-wrong formulas, on
refengine and, when installed, torch) and over the first samples of every
registry op, in several modes (default with forward AD, precise, fast,
second order, the mpmath reference, the loop instead of batches, the extra
checks), and stores per run: pass/fail, every result (check, pair, error,
where, tolerance, diagnosis, detail), the message, and every Jacobian.

    python bench/verdicts.py record /tmp/before.pkl
    ... change gradcheck ...
    python bench/verdicts.py record /tmp/after.pkl
    python bench/verdicts.py compare /tmp/before.pkl /tmp/after.pkl

``compare`` prints each difference, grouped by what differs (verdict,
diagnosis, Jacobian bits, message, evidence), and exits 1 if a verdict, a
failing pair, a diagnosis or a Jacobian differs. Runs of formulas that draw
fresh noise on every call are compared by verdict only.
"""
from __future__ import annotations

import pickle
import sys
import traceback
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests" / "gradcheck")]

from adcheck import gradcheck  # noqa: E402  (after the path: measure this checkout)

ZOO_OPTIONS = {
    "default": {},
    "forward": {"check_forward_ad": True},
    "precise": {"precise": True, "check_forward_ad": True},
    "fast": {"fast_mode": True, "check_forward_ad": True, "probes": 3},
    "order2": {"order": 2},
    "order2-forward": {"order": 2, "check_forward_ad": True},
    "forward-only": {"check_forward_ad": True, "check_backward_ad": False},
    "extras": {"check_forward_ad": True, "check_batched_grad": True,
               "check_batched_forward_grad": True, "check_grad_dtypes": True},
    "loop": {"check_forward_ad": True, "_loop": True},
    "loop-precise": {"precise": True, "_loop": True},
    "loop-fast": {"fast_mode": True, "check_forward_ad": True, "_loop": True},
    "loop-order2": {"order": 2, "check_forward_ad": True, "_loop": True},
}


def _run(func, inputs, options: dict) -> dict:
    options = dict(options)
    loop = options.pop("_loop", False)
    gradcheck.set_batching(not loop)
    try:
        report = gradcheck.check(func, inputs, seed=0, **options)
    except Exception as exc:  # noqa: BLE001 - an error is a verdict too
        return {"error": f"{type(exc).__name__}: {exc}"}
    finally:
        gradcheck.set_batching(True)
    results = [(r.check, r.mode, r.against, r.out_idx, r.in_idx, r.passed, r.max_error,
                r.where, r.tolerance, r.diagnosis, r.detail) for r in report.results]
    jacobians = {mode: ({k: b.copy() for k, b in jac.blocks.items()},
                        None if not jac.errors else {k: e.copy() for k, e in jac.errors.items()})
                 for mode, jac in report.jacobians.items()}
    return {"passed": report.passed, "name": report.name, "results": results,
            "failing": [(r.check, r.mode, r.against, r.out_idx, r.in_idx)
                        for r in report.failures],
            "diagnosis": report.diagnosis, "message": report.message(),
            "jacobians": jacobians, "counts": dict(report.counts),
            "batching": dict(report.batching)}


def zoo_cases():
    import gradcheck_zoo as zoo
    engines = ["refengine"]
    try:
        import torch  # noqa: F401
        engines.append("torch")
    except ImportError:
        pass
    import importlib
    for engine in engines:
        E = importlib.import_module("adcheck.refengine" if engine == "refengine" else engine)
        for entry in zoo.all_entries():
            noisy = "noisy" in entry.name or "nondeterministic" in entry.name
            for label, options in ZOO_OPTIONS.items():
                yield (f"zoo/{engine}/{entry.name}/{label}", noisy,
                       lambda entry=entry, E=E, options=options:
                       _run(entry.build(E), entry.inputs(E), options))


def _sample_call(info, sample):
    """``func(*inputs)`` for the sample's tensors that require grad, and ``ref``."""
    from adcheck import refengine
    from adcheck.refengine.pytree import tree_leaves, tree_map

    def walk(value, fn):
        return tree_map(lambda v: fn(v) if isinstance(v, refengine.Tensor) else v, value)
    structure = (sample.input, sample.args, sample.kwargs)
    inputs = tuple(t for t in tree_leaves(structure)
                   if isinstance(t, refengine.Tensor) and t.requires_grad)

    def rebuild(values, other=lambda t: t):
        it = iter(values)
        return walk(structure, lambda t: next(it) if t.requires_grad else other(t))

    def func(*values):
        inp, args, kwargs = rebuild(values)
        return sample.output_process_fn_grad(info.op(inp, *args, **kwargs))

    ref = None
    from adcheck.opinfo import identity
    if info.mpmath_ref is not None and sample.output_process_fn_grad is identity:
        from adcheck.gradcheck.numerics.reference import to_mp

        def ref(*mp_values):
            def constant(t):
                array = t.detach().numpy().copy()
                return to_mp(array) if np.issubdtype(array.dtype, np.inexact) else array
            inp, args, kwargs = rebuild(mp_values, constant)
            return info.mpmath_ref(inp, *args, **kwargs)
    return func, inputs, ref


def registry_cases(samples: int = 2):
    from adcheck import opinfo
    import adcheck.refengine as E
    for info in opinfo.op_db:
        for dtype in (E.float64, E.complex128):
            if not info.supports("reverse", dtype):
                continue
            forward = info.supports("forward", dtype)
            modes = {"default": {"check_forward_ad": forward},
                     "loop": {"check_forward_ad": forward, "_loop": True},
                     "fast": {"fast_mode": True, "check_forward_ad": forward},
                     "precise": {"precise": True}}
            if info.supports("gradgrad", dtype):
                modes["order2"] = {"order": 2,
                                   "check_forward_ad": info.supports("fwgrad_bwgrad", dtype)}
            for i, sample in enumerate(info.sample_inputs(dtype, requires_grad=True)):
                if i >= samples:
                    break
                func, inputs, ref = _sample_call(info, sample)
                if not inputs:
                    continue
                cases = dict(modes)
                if ref is not None:
                    cases["reference"] = {"reference": ref, "precise": True}
                for label, options in cases.items():
                    yield (f"registry/{info.name}/{dtype}/{i}/{label}", False,
                           lambda func=func, inputs=inputs, options=options:
                           _run(func, inputs, dict(options, name=info.name)))


def _error_functions(E):
    """Functions that raise in the function, the backward or the jvp."""
    def broken(x):
        raise KeyError("weights")

    class NoBackward(E.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            raise ZeroDivisionError("oops")

    class NoJvp(E.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return 2 * g

    class ReadsItsTangent(E.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g * 2 if float(g.sum()) == float(g.sum()) else g

        @staticmethod
        def jvp(ctx, t):
            return t * 2 if float(t.sum()) == float(t.sum()) else t

    class SinCosNoneGrads(E.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.set_materialize_grads(False)
            ctx.save_for_backward(x)
            return E.sin(x), E.cos(x)

        @staticmethod
        def backward(ctx, g0, g1):
            x, = ctx.saved_tensors
            return g0 * E.cos(x) - g1 * E.sin(x)
    return {"broken": broken, "no_backward": NoBackward.apply, "no_jvp": NoJvp.apply,
            "reads_tangent": ReadsItsTangent.apply, "none_grads": SinCosNoneGrads.apply,
            "detached": lambda x: (x * 2, E.sin(x.detach())),
            "two_outputs": lambda x: (E.sin(x), x.sum() * 2, x.detach() > 0)}


def error_cases():
    import importlib
    for engine in ("refengine", "torch"):
        try:
            E = importlib.import_module("adcheck.refengine" if engine == "refengine" else engine)
        except ImportError:
            continue
        for name, func in _error_functions(E).items():
            for label in ("forward", "fast", "loop", "order2", "precise", "extras"):
                options = ZOO_OPTIONS[label]
                yield (f"errors/{engine}/{name}/{label}", False,
                       lambda func=func, E=E, options=options: _run(
                           func, (E.from_numpy(np.array([0.3, -0.7])).requires_grad_(),),
                           options))


def record(path: str) -> None:
    import warnings
    warnings.simplefilter("ignore")
    snapshot = {}
    for source in (error_cases(), zoo_cases(), registry_cases()):
        for key, noisy, run in source:
            try:
                snapshot[key] = dict(run(), noisy=noisy)
            except Exception:  # noqa: BLE001 - the script itself failed on this case
                snapshot[key] = {"crash": traceback.format_exc(), "noisy": noisy}
    with open(path, "wb") as f:
        pickle.dump(snapshot, f)
    print(f"{len(snapshot)} runs recorded in {path}")


def _same_arrays(a: dict, b: dict) -> bool:
    if a is None or b is None:
        return a is b
    return a.keys() == b.keys() and all(
        a[k].shape == b[k].shape and np.array_equal(a[k], b[k], equal_nan=True) for k in a)


def _differences(old: dict, new: dict) -> list:
    """(kind, text) for each difference; kinds 'verdict' ... 'evidence'."""
    if "error" in old or "error" in new or "crash" in old or "crash" in new:
        same = old.get("error") == new.get("error") and "crash" not in old and "crash" not in new
        return [] if same else [("verdict", f"{old.get('error') or old.get('crash')!r} -> "
                                            f"{new.get('error') or new.get('crash')!r}")]
    found = []
    if old["noisy"]:  # fresh noise on every call: which pairs fail may vary
        return [] if old["passed"] == new["passed"] else [("verdict", "passed differs")]
    if old["passed"] != new["passed"] or old["failing"] != new["failing"]:
        found.append(("verdict", f"{old['failing']} -> {new['failing']}"))
    if [r[9] for r in old["results"]] != [r[9] for r in new["results"]]:
        found.append(("diagnosis", f"{old['diagnosis']!r} -> {new['diagnosis']!r}"))
    if old["jacobians"].keys() != new["jacobians"].keys():
        found.append(("jacobian", f"{sorted(old['jacobians'])} -> {sorted(new['jacobians'])}"))
    for mode in old["jacobians"].keys() & new["jacobians"].keys():
        (ob, oe), (nb, ne) = old["jacobians"][mode], new["jacobians"][mode]
        if not _same_arrays(ob, nb) or not _same_arrays(oe, ne):
            found.append(("jacobian", f"{mode} blocks or errors differ"))
    if old["message"] != new["message"]:
        found.append(("message", f"{old['message'][:300]!r}\n      -> {new['message'][:300]!r}"))
    for o, n in zip(old["results"], new["results"]):
        if o != n:
            found.append(("evidence", f"{o[:9]} -> {n[:9]}"))
    if len(old["results"]) != len(new["results"]):
        found.append(("evidence", f"{len(old['results'])} results -> {len(new['results'])}"))
    if old["counts"] != new["counts"] or old["batching"] != new["batching"]:
        found.append(("evidence", f"counts {old['counts']} {old['batching']} -> "
                                  f"{new['counts']} {new['batching']}"))
    return found


def compare(before: str, after: str) -> int:
    with open(before, "rb") as f:
        old = pickle.load(f)
    with open(after, "rb") as f:
        new = pickle.load(f)
    by_kind: dict = {}
    for key in sorted(old.keys() | new.keys()):
        if key not in old or key not in new:
            by_kind.setdefault("verdict", []).append(f"{key}: only in one snapshot")
            continue
        for kind, text in _differences(old[key], new[key]):
            by_kind.setdefault(kind, []).append(f"{key}: {text}")
    for kind in ("verdict", "diagnosis", "jacobian", "message", "evidence"):
        lines = by_kind.get(kind, [])
        print(f"== {kind}: {len(lines)} runs differ")
        for line in lines[:40]:
            print("  " + line)
    print(f"{len(old)} runs before, {len(new)} after")
    return 1 if any(by_kind.get(k) for k in ("verdict", "diagnosis", "jacobian")) else 0


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "record":
        record(sys.argv[2])
    elif len(sys.argv) == 4 and sys.argv[1] == "compare":
        sys.exit(compare(sys.argv[2], sys.argv[3]))
    else:
        sys.exit(__doc__)
