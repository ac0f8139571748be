"""Running a fuzzed program on one engine, and comparing what two runs saw.

``observe(program, E)`` executes the program's own text statement by
statement on the engine module ``E`` and records, in order: after each
statement the value, dtype, shape, flags (requires_grad, is_leaf, whether it
has a grad_fn), version and tangent of the variable it defined or wrote, or
the error it raised (type and message); at the end the same for every
variable plus its ``.grad``; and every hook call with the gradient it got.

``first_difference(a, b)`` walks two such records in step and names the first
observation where they disagree: that is what the shrinker keeps alive.
"""
from __future__ import annotations

import json
import os
import re
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

# Value agreement: float64 programs, so differences of a few ulps through a
# dozen ops are rounding; a relative 1e-9 still sees a single-precision constant.
RTOL, ATOL = 1e-9, 1e-10


@dataclass(frozen=True)
class Difference:
    """The first disagreement between the two engines' runs."""

    kind: str       # raises, error-type, message, value, grad, tangent, flags, version, hooks
    stmt: str       # the statement's template (or "final")
    label: str      # where: "s3 v2" (after statement 3, variable v2) or "end v2"
    refengine: str
    torch: str
    raw: tuple = field(default=(None, None), compare=False, repr=False)  # the two observations

    @property
    def key(self) -> tuple:
        """What groups findings: the kind of difference and the statement template."""
        return (self.kind, self.stmt)


def _to_numpy(t):
    t = t.detach()
    if hasattr(t, "resolve_conj"):
        t = t.resolve_conj().resolve_neg()
    try:
        return np.array(t.numpy(), copy=True)
    except RuntimeError:        # torch's ZeroTensor (a zero tangent) refuses numpy()
        return np.array(t.numpy(force=True), copy=True)


def normalize_message(text: str) -> str:
    """An error message with the engine's own names made neutral."""
    text = re.sub(r"\s*\(Triggered internally at [^)]*\)", "", text)
    text = text.replace("torch::autograd::", "").replace("adcheck.refengine", "torch")
    return re.sub(r"\brefengine\b", "torch", text)


def _is_tensor(x) -> bool:
    return hasattr(x, "requires_grad") and hasattr(x, "detach")


def _read(getter):
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return getter()
    except Exception as error:      # noqa: BLE001 - what is read may raise on either side
        return ("raises", type(error).__name__)


def snapshot(E, t, final: bool = False):
    """What is observable of ``t`` (a tensor, a tuple of them, or anything else)."""
    if isinstance(t, (tuple, list)):
        return ("seq", tuple(snapshot(E, x, final) for x in t))
    if not _is_tensor(t):
        return ("py", repr(t) if not isinstance(t, (int, float, complex)) else complex(t))
    flags = (str(t.dtype).rsplit(".", 1)[-1], tuple(t.shape), _read(lambda: t.requires_grad),
             _read(lambda: t.is_leaf), _read(lambda: t.grad_fn is None))
    shot = {"value": _read(lambda: _to_numpy(t)), "flags": flags,
            "version": _read(lambda: t._version)}
    fwd = E.autograd.forward_ad
    tangent = _read(lambda: fwd.unpack_dual(t).tangent)
    shot["tangent"] = _to_numpy(tangent) if _is_tensor(tangent) else tangent
    if final:
        grad = _read(lambda: t.grad)
        shot["grad"] = _to_numpy(grad) if _is_tensor(grad) else grad
    return ("tensor", shot)


SNAP = 2.0 ** -40       # the grid of ``snap``: far below ATOL, far above a last bit at 1


def snap(E, t):
    """``t`` moved onto a grid of 2**-40 (each part of a complex number), its
    zeros all +0, a complex element with an infinite or NaN part nan + nanj
    (which non-finite pattern is the engines' own), its graph and tangent kept:
    the same tensor in both engines when theirs agreed to rounding, or were both
    not finite (fuzz_rerun's second run at a discontinuity)."""
    if not _is_tensor(t) or not (t.is_floating_point() or t.is_complex()):
        return t
    a = _to_numpy(t)
    with np.errstate(all="ignore"):
        grid = (np.round(a.real / SNAP) * SNAP + 0) - a.real
        if np.iscomplexobj(a):
            grid = grid + 1j * ((np.round(a.imag / SNAP) * SNAP + 0) - a.imag)
    shift = np.where(np.isfinite(grid), grid, 0)   # a real inf or NaN stays
    if np.iscomplexobj(a):
        shift = np.where(np.isfinite(a), shift, complex(np.nan, np.nan))
    return t + E.tensor(shift, dtype=t.dtype)


def observe(program, E) -> list:
    """Run ``program`` on ``E``; the list of (label, stmt kind, observation).
    With ``ADCHECK_FUZZ_TRACE`` set, the program and the engine are written to
    that file first: the last one written is the one an engine crashed on."""
    trace = os.environ.get("ADCHECK_FUZZ_TRACE")
    if trace:
        Path(trace).write_text(json.dumps({"engine": E.__name__, "mode": program.mode,
                                           "source": program.source()}))
    seen, log = [], []

    def hook(k, factor):
        def h(g):
            log.append(("hook", k, _read(lambda: _to_numpy(g)) if _is_tensor(g) else g))
            return None if factor is None else g * factor
        return h

    ns = {"E": E, "hook": hook, "snap": lambda t: snap(E, t)}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if program.mode == "forward":
            with E.autograd.forward_ad.dual_level():
                _steps(program, E, ns, seen, log)
        else:
            _steps(program, E, ns, seen, log)
    return seen


def _steps(program, E, ns, seen, log) -> None:
    for i, stmt in enumerate(program.stmts):
        try:
            exec(_compiled(stmt.source()), ns)
        except Exception as error:      # noqa: BLE001 - the error is the observation
            seen.append((f"s{i}", stmt.kind, ("raises", type(error).__name__,
                                                normalize_message(str(error)))))
        else:
            if stmt.observe is not None and stmt.observe in ns:
                seen.append((f"s{i} {stmt.observe}", stmt.kind, snapshot(E, ns[stmt.observe])))
        seen.extend((f"s{i} hook {k}", "register_hook", ("hook", v)) for _, k, v in log)
        log.clear()
    for name in sorted((n for n in ns if re.fullmatch(r"v\d+", n)), key=lambda n: int(n[1:])):
        seen.append((f"end {name}", "final", snapshot(E, ns[name], final=True)))


_CODE: dict = {}


def _compiled(source: str):
    code = _CODE.get(source)
    if code is None:
        if len(_CODE) > 50_000:
            _CODE.clear()
        code = _CODE[source] = compile(source, "<fuzzed program>", "exec")
    return code
