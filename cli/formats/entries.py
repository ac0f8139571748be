"""What is wrong in a failed check of ``adcheck check``, in the user's own terms.

A failing pair's Jacobians are real matrices whose flat indices mean
nothing to the user (``[17, 17]`` for a 4x5 input; complex rows interleave
the real and imaginary parts). With the input set's layout (the tensors'
shapes, ``runner.layouts``, recorded by ``adcheck check``) each entry is
named by the output's and the input's own index and complex part::

    20 of 400 entries differ (error above 1.2e-08, the tolerance at the worst entry); the worst:
      output 0 [1, 2] by input 1 [1, 2]: reverse 0.7365, numerical 0.491 (error 2.5e-01)

With ``-v`` the Jacobians' worst block follows, side by side, as ``adcheck
op`` shows it (``cli.formats.detail.jacobian_pair``).
"""
from __future__ import annotations

from types import SimpleNamespace

import numpy as np
from rich.text import Text

from adcheck.runner.layouts import entry_name, real_size

#: the worst entries listed per failing pair
WORST = 3


def _pairs(result):
    """``(failure dict, (expected, actual))`` of each failing first-order pair
    whose two Jacobians the result kept."""
    for failure, arrays in zip(result.failures, result.jacobians or ()):
        if arrays is None or failure.get("order", 1) != 1 or \
                failure.get("check", "").startswith("fast"):
            continue
        if failure.get("out_idx") is None or failure.get("in_idx") is None:
            continue
        yield failure, arrays


def _tensor(pairs: list, index: int):
    return pairs[index] if index < len(pairs) else None


def _columns(block: np.ndarray, in_pair):
    """The input's layout as the block's columns run: a complex input's
    Jacobian is kept in complex form (one column per element, ``d/dx + 1j
    d/dy``), so its columns are its elements, with no real or imaginary part."""
    if in_pair[1] and np.iscomplexobj(block):
        return [in_pair[0], False, *in_pair[2:]]
    return in_pair


def _label(kind: str, index: int, pair, coordinate: int) -> str:
    name = f" ({pair[2]})" if len(pair) > 2 and pair[2] else ""
    return f"{kind} {index}{name} {entry_name(pair, coordinate)}"


def _value(x) -> str:
    if np.iscomplexobj(x):
        return f"{x.real:.6g}{x.imag:+.6g}j"
    return f"{float(x):.6g}"


def pair_lines(failure: dict, arrays, layout: dict) -> list:
    """The lines naming the worst entries of one failing pair (empty when the
    layout does not describe its Jacobians)."""
    expected, actual = (np.atleast_2d(np.asarray(a)) for a in arrays)
    out_pair = _tensor(layout.get("outputs") or [], failure["out_idx"])
    in_pair = _tensor(layout.get("inputs") or [], failure["in_idx"])
    origin = tuple(failure.get("origin") or (0, 0))
    if out_pair is None or in_pair is None or expected.shape != actual.shape:
        return []
    in_pair = _columns(expected, in_pair)
    whole = (real_size(out_pair), real_size(in_pair))
    if origin[0] + expected.shape[0] > whole[0] or origin[1] + expected.shape[1] > whole[1]:
        return []      # not the Jacobian of these tensors (the layout does not fit)
    with np.errstate(invalid="ignore"):
        errors = np.abs(actual - expected).astype(float)
    errors[np.isnan(errors)] = np.inf
    tol = failure.get("tolerance") or 0.0
    differ = int((errors > tol).sum())
    shown = "" if origin == (0, 0) and expected.shape == whole else " shown"
    lines = [Text(f"      {differ} of {errors.size} entries{shown} differ (error above "
                  f"{tol:.1e}, the tolerance at the worst entry); the worst:", style="dim")]
    order = np.argsort(-errors, axis=None, kind="stable")[:min(WORST, max(differ, 1))]
    for flat in order:
        r, c = np.unravel_index(flat, errors.shape)
        where = (f"{_label('output', failure['out_idx'], out_pair, r + origin[0])} by "
                 f"{_label('input', failure['in_idx'], in_pair, c + origin[1])}")
        lines.append(Text(f"        {where}: {failure.get('mode', 'analytical')} "
                          f"{_value(actual[r, c])}, {failure.get('against', 'numerical')} "
                          f"{_value(expected[r, c])} (error {errors[r, c]:.1e})"))
    return lines


def entry_lines(result, layouts, verbosity: int = 0) -> list:
    """For a failed ``result`` of ``adcheck check``: each failing pair's worst
    entries in the tensors' own indices, and with ``verbosity`` > 0 the worst
    block of its Jacobians side by side (rich renderables)."""
    if result.status != "failed" or not layouts or result.sample is None or \
            result.sample >= len(layouts) or layouts[result.sample] is None:
        return []
    from adcheck.cli.formats.detail import jacobian_pair
    parts = []
    for k, (failure, arrays) in enumerate(_pairs(result)):
        lines = pair_lines(failure, arrays, layouts[result.sample])
        if lines and k:   # (the message is the first pair's: a later one says its own)
            name = f" ({failure['in_name']})" if failure.get("in_name") else ""
            lines.insert(0, Text(f"      output {failure['out_idx']}, input "
                                 f"{failure['in_idx']}{name}: "
                                 f"{failure.get('diagnosis') or 'no recognised pattern'}",
                                 style="cyan"))
        parts += lines
        if lines and verbosity > 0:
            view = SimpleNamespace(expected=arrays[0], actual=arrays[1],
                                   where=tuple(failure["where"] or ()), origin=failure.get(
                                       "origin"), tolerance=failure.get("tolerance"),
                                   against=failure["against"], mode=failure["mode"])
            parts.append(jacobian_pair(view, f"output {failure['out_idx']}, input "
                                             f"{failure['in_idx']}"))
    return parts
