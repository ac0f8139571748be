"""What an explored point is, in words and as code that rebuilds it.

``describe`` names the entries that differ from the given inputs and the
kind of each ("exact zero in input 0 at [2]", "tie: input 0 [1] == input 1
[1]", "|x| = 4.0e+01", "on the unit circle"); ``reproducer`` writes the
failing inputs as engine code whose floats round-trip exactly (``repr`` of a
double); ``Finding`` is what the report keeps of one failing point.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

#: entries named one by one in a description; the others are counted
NAMED = 4


@dataclass(frozen=True)
class Explored:
    """Where a failing result was found (``Result.point``): the explored inputs
    that differ from the given ones, by index, the code that rebuilds them, and
    whether one-sided derivatives decided the verdict (a kink or a tie, where no
    central difference is the derivative)."""

    arrays: dict
    reproducer: str
    one_sided: bool = False


@dataclass
class Finding:
    """One failing explored point: its description, the failing results of
    the check at that point (each carrying the point in ``detail``), the
    inputs that rebuild it, and how the verdict was reached."""

    description: str
    reproducer: str
    results: list = field(default_factory=list)
    verdict: str = "fail"
    arrays: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        return {"point": self.description, "reproducer": self.reproducer,
                "verdict": self.verdict,
                "inputs": {str(i): _json(a) for i, a in self.arrays.items()}}


def _json(array: np.ndarray):
    if np.iscomplexobj(array):
        return [[float(z.real), float(z.imag)] for z in array.reshape(-1)]
    return [float(v) for v in array.reshape(-1)]


def _index(array: np.ndarray, flat: int) -> str:
    where = np.unravel_index(flat, array.shape) if array.ndim else ()
    return "[" + ", ".join(str(int(k)) for k in where) + "]"


def _single(value, i: int, flat: int, array: np.ndarray) -> str:
    at = f"input {i} at {_index(array, flat)}"
    if value == 0:
        return f"exact zero in {at}"
    if np.iscomplexobj(value):
        if abs(abs(value) - 1) < 1e-12:
            return f"on the unit circle in {at}"
        if value.imag == 0 or value.real == 0:
            return f"on the {'real' if value.imag == 0 else 'imaginary'} axis in {at}"
    return f"|x| = {abs(value):.1e} in {at}"


def describe(given: dict, point: dict) -> str:
    """The entries of ``point`` (arrays by input index) that differ from
    ``given``, each with its kind, equal entries named once as a tie;
    ``"the given inputs"`` if none differs."""
    parts, done = [], set()
    for i in sorted(point):
        flat = point[i].reshape(-1)
        for k in np.flatnonzero(flat != given[i].reshape(-1)):
            if (i, int(k)) in done:
                continue
            value = flat[k]
            equal = [(j, int(m)) for j in sorted(point)
                     for m in np.flatnonzero(point[j].reshape(-1) == value)[:NAMED]
                     if (j, int(m)) != (i, int(k))]
            if not equal:
                parts.append(_single(value, i, int(k), point[i]))
                continue
            done.update(equal)
            names = " == ".join(f"input {j} {_index(point[j], m)}"
                                for j, m in [(i, int(k))] + equal[:NAMED - 1])
            parts.append(f"tie{' at exact zero' if value == 0 else ''}: {names}")
    if not parts:
        return "the given inputs"
    shown = parts[:NAMED]
    if len(parts) > NAMED:
        shown.append(f"and {len(parts) - NAMED} more changed entries")
    return "; ".join(shown)


def _literal(array: np.ndarray) -> str:
    """A nested list literal of ``array`` whose floats round-trip exactly."""
    def nest(a):
        if a.ndim == 0:
            v = a.item()
            return repr(complex(v)) if isinstance(v, complex) else repr(float(v))
        return "[" + ", ".join(nest(x) for x in a) + "]"
    return nest(np.asarray(array)).replace("inf", "float('inf')")


def reproducer(engine: str, dtypes: dict, point: dict, given: dict) -> str:
    """Code that rebuilds the inputs changed at ``point`` (by index) exactly;
    the other inputs are the given ones. ``dtypes``: each input's dtype name."""
    module = {"torch": "torch", "refengine": "adcheck.refengine",
              "jax": "jax.numpy"}.get(engine, "numpy")
    lines = []
    for i in sorted(point):
        if np.array_equal(point[i], given[i]):
            continue
        dtype = dtypes[i].split(".")[-1]
        grad = ", requires_grad=True" if engine in ("torch", "refengine") else ""
        make = "array" if engine in ("jax", "numpy") else "tensor"
        lines.append(f"input{i} = {module}.{make}({_literal(point[i])}, "
                     f"dtype={module}.{dtype}{grad})")
    return "; ".join(lines)


def rebuilt(engine, inputs, arrays: dict) -> list:
    """``inputs`` with those of ``arrays`` (by index) replaced, each laid out as
    the input it replaces and requiring grad as it did."""
    ins = list(inputs)
    for i, array in arrays.items():
        ins[i] = engine.from_numpy_like(array, inputs[i],
                                        requires_grad=engine.requires_grad(inputs[i]))
    return ins


def _entries(flat: list) -> str:
    """Flat indices as a direction names them; a long run shortened."""
    if len(flat) <= 2 * NAMED:
        return f"entries {list(flat)}"
    return f"{len(flat)} entries [{', '.join(str(k) for k in flat[:NAMED])}, ..., {flat[-1]}]"


def annotate(results: list, description: str, code: str, bracket=None,
             arrays: dict | None = None) -> list:
    """``results`` (failing, from the check at the point) with the point, the
    one-sided pair when a bracket decided, and the reproducer in ``detail``;
    with ``arrays`` (the point's inputs by index), each result's ``point``."""
    text = f"at the explored point {description}"
    sided = bracket is not None and bracket.left is not None
    if sided:
        text += (f"; {bracket.mode}-mode directional derivative {bracket.formula:.6e} "
                 f"outside the one-sided derivatives [{bracket.left:.6e}, {bracket.right:.6e}]"
                 f" for output {bracket.out_idx} at [{bracket.row}] along "
                 + ", ".join(f"input {i} {_entries(ks)}" for i, ks in bracket.direction.items()))
    if bracket is not None and bracket.note:
        text += f"; {bracket.note}"
    text += f"; reproduce with: {code}"
    where = None if arrays is None else Explored(dict(arrays), code, sided)
    for result in results:
        result.detail = text if not result.detail else f"{result.detail}\n  {text}"
        result.point = where
    return results
