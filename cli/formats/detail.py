"""``adcheck op NAME``: one operator in detail, for a terminal.

For a failing (output, input) pair the expected Jacobian (numerical or
reference) and the analytical one are shown side by side; entries whose
error exceeds the tolerance at the worst entry are highlighted, with a
colour by how far past it they are (a heatmap), and marked ``*`` so the
difference survives without colour. Large blocks are cut to a window around
the worst entry. Then the diagnosis and a Python snippet that reproduces
the failure.
"""
from __future__ import annotations

import numpy as np
from rich.console import Group
from rich.panel import Panel
from rich.syntax import Syntax
from rich.table import Table
from rich.text import Text

from adcheck.cli.formats.advice import cli_terms
from adcheck.runner.reproduction import reproducer

WINDOW = 8
#: (factor past the tolerance, style), worst first
HEAT = ((1e3, "bold white on red"), (1e1, "black on dark_orange"), (1.0, "black on yellow"))


def _window(size: int, centre: int) -> range:
    start = max(0, min(centre - WINDOW // 2, size - WINDOW))
    return range(start, min(size, start + WINDOW))


def _entry(value) -> str:
    if isinstance(value, complex) or np.iscomplexobj(value):
        return f"{value.real:.4g}{value.imag:+.4g}j"
    return f"{float(value):.4g}"


def _heat(ratio: float) -> str | None:
    for factor, style in HEAT:
        if ratio > factor:
            return style
    return None


def _matrix(title: str, values: np.ndarray, errors: np.ndarray, tol: float, rows, cols,
            mark: bool, origin: tuple = (0, 0)) -> Table:
    table = Table(title=title, show_edge=False, pad_edge=False, box=None, padding=(0, 1))
    table.add_column("", style="dim", justify="right")
    for c in cols:
        table.add_column(str(c + origin[1]), justify="right")
    for r in rows:
        cells = []
        for c in cols:
            style = _heat(errors[r, c] / tol) if mark and tol > 0 else None
            text = _entry(values[r, c]) + ("*" if style else " ")
            cells.append(Text(text, style=style or ""))
        table.add_row(str(r + origin[0]), *cells)
    return table


def jacobian_pair(failure, label: str) -> Group:
    """The two Jacobians of a failing ``gradcheck`` Result, side by side."""
    expected = np.atleast_2d(np.asarray(failure.expected))
    actual = np.atleast_2d(np.asarray(failure.actual))
    with np.errstate(invalid="ignore"):
        errors = np.abs(actual - expected).astype(float)
    errors[np.isnan(errors)] = np.inf
    # a window of a block too large to hold (origin: its first row and column)
    origin = tuple(getattr(failure, "origin", None) or (0, 0))
    where = failure.where if failure.where and len(failure.where) == 2 else origin
    where = (where[0] - origin[0], where[1] - origin[1])
    rows, cols = _window(expected.shape[0], where[0]), _window(expected.shape[1], where[1])
    tol = failure.tolerance or 0.0
    cut = "" if (len(rows), len(cols)) == expected.shape and origin == (0, 0) else \
        f" (rows {rows.start + origin[0]}-{rows.stop - 1 + origin[0]}, columns " \
        f"{cols.start + origin[1]}-{cols.stop - 1 + origin[1]})"
    grid = Table.grid(padding=(0, 4))
    grid.add_row(_matrix(f"{failure.against}", expected, errors, tol, rows, cols, False,
                         origin),
                 _matrix(f"{failure.mode}", actual, errors, tol, rows, cols, True, origin))
    legend = Text(f"{label}{cut}: * marks |{failure.mode} - {failure.against}| above the "
                  f"tolerance at the worst entry ({tol:.1e}); colour: ", style="dim")
    for factor, style in reversed(HEAT):
        legend.append(f" >{factor:g}x ", style=style)
    return Group(Text(""), grid, legend)


def snippet(result, settings: dict) -> Syntax | None:
    """Python that reruns the check of ``result`` exactly as the run did
    (``runner.rebuild``: see ``runner.reproduction``); ``None`` when no check
    reproduces it."""
    code = reproducer(result, settings)
    if code is None:
        return None
    return Syntax(code, "python", theme="ansi_dark", background_color="default")


def failure_panel(result, report, settings: dict, limit: int = 2) -> Panel:
    """One failing check: each failing pair's Jacobians, the diagnosis, and the
    snippet that reproduces it (the run's ``settings`` say how it ran)."""
    parts = []
    for failure in report.failures[:limit]:
        from adcheck.gradcheck.verdict.report import describe
        parts.append(Text(cli_terms(describe(failure, report.name))))
        if failure.expected is not None and failure.actual is not None \
                and np.ndim(failure.expected) == 2:
            name = getattr(failure, "in_name", None)
            pair = f"output {failure.out_idx}, input {failure.in_idx}" + \
                (f" ({name})" if name else "")
            parts.append(jacobian_pair(failure, pair))
    if len(report.failures) > limit:
        parts.append(Text(f"... and {len(report.failures) - limit} more failing pairs "
                          "(-v shows all)", style="dim"))
    parts.append(Text(f"\ndiagnosis: {report.diagnosis or 'no recognised pattern'}",
                      style="bold cyan"))
    code = snippet(result, settings)
    if code is not None:
        parts += [Text("\nreproduce:", style="bold"), code]
    title = Text(f"{result.op} {result.dtype}[{result.sample}] {result.check}: "
                 f"{result.status}", style="bold red")
    return Panel(Group(*parts), title=title, title_align="left", border_style="red")
