"""Matrices as inline SVG heatmaps, for the HTML report.

A heatmap draws one real matrix (a Jacobian block, or the real or the
imaginary part of a complex one) as a grid of cells on a diverging colour
scale symmetric around zero: blue below zero, near-white at zero, red above,
grey for a value that is not finite. Every cell is a ``<rect>`` with
``data-index="row,column"`` and a ``<title>`` tooltip; the cells of entries
that differ beyond the tolerance also carry the class ``differs`` and are
outlined, the worst entry carries ``worst``, a heavier outline and a flag in
its corner. Outlines are drawn last, so a neighbour never covers one. Small
windows print each value in its cell. Colours and geometry are attributes;
the outlines and fonts come from the page's CSS. Every text is escaped here.

``jacobian_pair`` draws a whole failing pair: the expected block, the
analytical one and their difference, with legends and the worst entry.
"""
from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from html import escape

import numpy as np

#: the most rows and columns one heatmap draws (a larger block is windowed)
MAX_SIDE = 32
#: (position on the scale, RGB): dark blue, light blue, near-white, light red, dark red
_ANCHORS = ((-1.0, (33, 82, 150)), (-0.5, (125, 166, 212)), (0.0, (247, 247, 245)),
            (0.5, (229, 139, 112)), (1.0, (165, 28, 42)))
NON_FINITE = "#8c8c8c"
#: windows of at most this many columns and rows print each value in its cell
_TEXT_COLUMNS, _TEXT_ROWS = 8, 24


def window(size: int, centre: int, limit: int = MAX_SIDE) -> range:
    """At most ``limit`` consecutive indices of ``range(size)``, around ``centre``."""
    start = max(0, min(centre - limit // 2, size - limit))
    return range(start, min(size, start + limit))


def colour(t: float) -> str:
    """The colour at ``t`` on the scale [-1, 1] (clipped), as ``#rrggbb``."""
    if not math.isfinite(t):
        return NON_FINITE
    t = min(1.0, max(-1.0, t))
    for (t0, c0), (t1, c1) in zip(_ANCHORS, _ANCHORS[1:]):
        if t <= t1:
            w = (t - t0) / (t1 - t0)
            return "#" + "".join(f"{round(a + (b - a) * w):02x}" for a, b in zip(c0, c1))
    return NON_FINITE  # pragma: no cover - t <= 1 always matches the last anchor


def gradient_css() -> str:
    """The scale from -1 to 1 as a CSS ``linear-gradient``, for a legend bar."""
    stops = ", ".join(f"{colour(t)} {50 * (t + 1):g}%" for t in np.linspace(-1, 1, 9))
    return f"linear-gradient(to right, {stops})"


def scale_of(*arrays: np.ndarray) -> float:
    """The largest finite magnitude in ``arrays`` (1.0 if there is none or it is 0)."""
    finite = [np.abs(a[np.isfinite(a)]) for a in arrays]
    top = max((float(f.max()) for f in finite if f.size), default=0.0)
    return top if top > 0 else 1.0


def short(value: float) -> str:
    """A cell's printed value: three significant digits, ``0`` for zero of any sign."""
    if value == 0:
        return "0"
    return f"{value:.3g}" if math.isfinite(value) else str(value)


@dataclass(frozen=True)
class _Grid:
    """Where the cells of a window go: cell size, margins for the labels."""

    rows: range
    cols: range
    cw: int
    ch: int
    printed: bool       # values printed in the cells
    left: int = 0
    top: int = 20
    #: the whole block's indices of the drawn array's [0, 0] (a window of it)
    origin: tuple = (0, 0)

    @classmethod
    def fit(cls, rows: range, cols: range, origin: tuple = (0, 0)) -> _Grid:
        left = 12 + 7 * len(str(rows[-1] + origin[0]))
        if len(cols) <= _TEXT_COLUMNS and len(rows) <= _TEXT_ROWS:
            return cls(rows, cols, 60, 26, True, left, origin=origin)
        side = max(8, min(22, 360 // len(cols)))
        return cls(rows, cols, side, side, False, left, origin=origin)

    def corner(self, r: int, c: int) -> tuple:
        return (self.left + self.cw * (c - self.cols.start),
                self.top + self.ch * (r - self.rows.start))

    def labels(self) -> list:
        """Row and column indices, every k-th one so that they never overlap."""
        out = []
        step = max(1, math.ceil(22 / self.cw))
        for c in self.cols[::step]:
            x = self.corner(self.rows.start, c)[0] + self.cw / 2
            out.append(f'<text class="axis" x="{x:g}" y="{self.top - 6}" '
                       f'text-anchor="middle">{c + self.origin[1]}</text>')
        step = max(1, math.ceil(22 / self.ch))
        for r in self.rows[::step]:
            y = self.corner(r, self.cols.start)[1] + self.ch / 2 + 4
            out.append(f'<text class="axis" x="{self.left - 5}" y="{y:g}" '
                       f'text-anchor="end">{r + self.origin[0]}</text>')
        return out


def heatmap(values: np.ndarray, rows: range, cols: range, *, vmax: float,
            marked: np.ndarray, worst: tuple | None, tooltip: Callable[[int, int], str],
            label: str, origin: tuple = (0, 0)) -> str:
    """The ``rows`` x ``cols`` window (not empty) of the real matrix ``values``
    as an ``<svg>``.

    ``vmax`` maps to the ends of the scale; ``marked`` (a boolean matrix of
    the same shape) says which entries differ; ``worst`` is ``(row, col)``
    or ``None``; ``tooltip(row, col)`` gives a cell's tooltip text. ``origin``:
    the whole block's indices of ``values[0, 0]`` when it is a window of it
    (the axes are labelled in the whole block's indices).
    """
    grid = _Grid.fit(rows, cols, origin)
    width = grid.left + grid.cw * len(cols) + 3
    height = grid.top + grid.ch * len(rows) + 3
    parts = [f'<svg class="heatmap" role="img" aria-label="{escape(label)}" width="{width}" '
             f'height="{height}" viewBox="0 0 {width} {height}">', *grid.labels()]
    cells = [(r, c) for r in rows for c in cols]
    # plain cells first, then the marked ones, the worst last: outlines stay on top
    cells.sort(key=lambda rc: (bool(marked[rc]), rc == worst))
    for r, c in cells:
        parts.append(_cell(grid, r, c, float(values[r, c]) / vmax, float(values[r, c]),
                           bool(marked[r, c]), (r, c) == worst, tooltip(r, c)))
    parts.append("</svg>")
    return "".join(parts)


def _cell(grid: _Grid, r: int, c: int, t: float, value: float, differs: bool,
          is_worst: bool, tip: str) -> str:
    """One cell: ``t`` is its place on the scale, ``value`` what it shows."""
    x, y = grid.corner(r, c)
    classes = "cell" + (" differs" if differs else "") + (" worst" if is_worst else "")
    out = (f'<rect class="{classes}" data-index="{r},{c}" x="{x}" y="{y}" width="{grid.cw}" '
           f'height="{grid.ch}" fill="{colour(t)}"><title>{escape(tip)}</title></rect>')
    if is_worst:
        flag = min(grid.cw, grid.ch) // 2
        out += f'<path class="flag" d="M{x} {y}h{flag}L{x} {y + flag}z"/>'
    if grid.printed:
        ink = "#ffffff" if not math.isfinite(t) or abs(t) > 0.6 else "#1c1c1c"
        out += (f'<text class="value" x="{x + grid.cw / 2:g}" y="{y + grid.ch / 2 + 4:g}" '
                f'text-anchor="middle" fill="{ink}">{escape(short(value))}</text>')
    return out


def _full(value) -> str:
    if np.iscomplexobj(value):
        return f"{value.real:.6g}{value.imag:+.6g}j"
    return f"{float(value):.6g}"


def _number(value) -> float | None:
    """A finite float from a JSON-style number (``"inf"`` and ``None`` give None)."""
    if value is None:
        return None
    value = float(value)
    return value if math.isfinite(value) else None


def _worst(failure: dict, err: np.ndarray) -> tuple:
    """The entry gradcheck reported, or (fast and adjoint checks report a probe,
    not an entry) the largest error."""
    where = failure.get("where")
    origin = failure.get("origin") or (0, 0)
    by_probe = failure["check"].startswith("fast") or failure["check"] == "adjoint"
    if where and len(where) == 2 and not by_probe:
        where = (where[0] - origin[0], where[1] - origin[1])
    if where and len(where) == 2 and not by_probe and all(
            0 <= k < n for k, n in zip(where, err.shape)):
        return int(where[0]), int(where[1])
    flat = int(np.argmax(err))
    return tuple(int(k) for k in np.unravel_index(flat, err.shape))


def jacobian_pair(failure: dict, expected, actual) -> str:
    """One failing pair's figures: the expected block, the analytical one and
    their difference (a complex block: a row of each for its real and its
    imaginary part), with legends, the key to the outlines and the worst entry.

    ``failure`` is a failing pair as ``CheckResult.failures`` holds it. An
    entry is outlined when its error exceeds the tolerance at the worst entry,
    the rule of the terminal view (``cli.formats.detail``).
    """
    from adcheck.gradcheck.verdict.compare import entry_errors
    e, a = np.atleast_2d(np.asarray(expected)), np.atleast_2d(np.asarray(actual))
    if e.shape != a.shape or e.size == 0 or e.ndim != 2:
        return '<p class="note dim">(no Jacobian block to draw)</p>'
    err = entry_errors(e, a)
    tol = _number(failure.get("tolerance"))
    worst = _worst(failure, err)
    marked = err > tol if tol is not None else np.zeros(err.shape, dtype=bool)
    marked[worst] = True
    rows, cols = window(err.shape[0], worst[0]), window(err.shape[1], worst[1])
    with np.errstate(invalid="ignore"):
        diff = a - e
    against, mode = failure["against"], failure["mode"]
    parts = (("real part", np.real), ("imaginary part", np.imag)) \
        if np.iscomplexobj(e) or np.iscomplexobj(a) else (("", np.real),)
    vmax = scale_of(*(take(m) for _, take in parts for m in (e, a)))
    dmax = scale_of(*(take(diff) for _, take in parts))

    r0, c0 = failure.get("origin") or (0, 0)

    def tip(r: int, c: int) -> str:
        lines = [f"[{r + r0}, {c + c0}]", f"{against}: {_full(e[r, c])}", f"{mode}: {_full(a[r, c])}",
                 f"|difference|: {err[r, c]:.3e}"]
        if marked[r, c]:
            lines.append("differs beyond the tolerance" + (" (worst entry)"
                                                           if (r, c) == worst else ""))
        return "\n".join(lines)

    draw = {"rows": rows, "cols": cols, "marked": marked, "worst": worst, "tooltip": tip,
            "origin": (r0, c0)}
    figures = []
    for part, take in parts:     # one row of three figures per part, on one grid
        figures += [_figure(against, "expected", part, take(e), vmax, draw),
                    _figure(mode, "analytical", part, take(a), vmax, draw),
                    _figure(f"{mode} − {against}", "difference", part, take(diff), dmax, draw)]
    notes = _notes(failure, e, a, err, tol, draw, complex_=len(parts) == 2)
    return f'<div class="maps">{"".join(figures)}</div>{notes}'


def _figure(title: str, role: str, part: str, values: np.ndarray, scale: float,
            draw: dict) -> str:
    """One heatmap with its caption and its colour legend."""
    sub = f"{role}, {part}" if part else role
    legend = (f'<div class="legend"><span>{escape(short(-scale))}</span><span class="bar" '
              f'style="background: {gradient_css()}"></span><span>{escape(short(scale))}'
              "</span></div>")
    return (f"<figure><figcaption>{escape(title)} <span>{escape(sub)}</span></figcaption>"
            f"{heatmap(values, vmax=scale, label=f'{title} ({sub})', **draw)}{legend}</figure>")


def _notes(failure: dict, e, a, err, tol: float | None, draw: dict, complex_: bool) -> str:
    """The key to the outlines, the worst entry, and what the drawing leaves out."""
    against, mode = failure["against"], failure["mode"]
    marked, rows, cols = draw["marked"], draw["rows"], draw["cols"]
    r, c = draw["worst"]
    r0, c0 = draw["origin"]
    tol_text = "none" if tol is None else f"{tol:.2e}"
    ratio = f" ({err[r, c] / tol:.3g} times the tolerance)" if tol else ""
    lines = [f'<p class="key"><span><span class="swatch"></span>differs: |{escape(mode)} − '
             f"{escape(against)}| above the tolerance at the worst entry ({tol_text}), "
             f"{int(marked.sum())} of {marked.size} entries</span><span><span class=\"swatch "
             'worst"></span>the worst entry</span><span>rows: output coordinates, columns: '
             "input elements</span></p>",
             f'<p class="note"><b>worst entry [{r + r0}, {c + c0}]</b>: {escape(against)} '
             f"{escape(_full(e[r, c]))}, {escape(mode)} {escape(_full(a[r, c]))}, "
             f"|difference| {err[r, c]:.3e}, tolerance {tol_text}{ratio}</p>"]
    if failure.get("origin") is not None:
        lines.append(f'<p class="note dim">Drawn: rows {r0}–{r0 + err.shape[0] - 1} and columns '
                     f"{c0}–{c0 + err.shape[1] - 1} of the whole block, a window built around "
                     "the worst entry (the block itself was compared in chunks or compressed "
                     "cells, never held whole).</p>")
    elif (len(rows), len(cols)) != err.shape:
        outside = int(marked.sum() - marked[rows.start:rows.stop, cols.start:cols.stop].sum())
        lies = "entry lies" if outside == 1 else "entries lie"
        lines.append(f'<p class="note dim">Drawn: rows {rows.start}–{rows.stop - 1} and columns '
                     f"{cols.start}–{cols.stop - 1} of the {err.shape[0]} × {err.shape[1]} "
                     f"block, a window around the worst entry; {outside} differing {lies} "
                     "outside it.</p>")
    if complex_:
        lines.append('<p class="note dim">Complex block: a column is d/dx + i·d/dy for one '
                     "input element; the rows are real output coordinates (a complex output's "
                     "real and imaginary parts alternate). Each is drawn as its real and its "
                     "imaginary part.</p>")
    return "".join(lines)
