"""``--html PATH``: the run as one self-contained HTML page.

The page holds the summary table, then each failed check with its
diagnosis, every failing (output, input) pair in words and, for the first
``JACOBIAN_PAIRS`` of them, the expected (numerical or reference) and the
analytical Jacobian blocks and their difference as heatmaps (see
``cli.formats.heatmap_svg``: the entries that differ are outlined, the worst
one heavily), and a Python snippet that reproduces the check. Errors, known
failures and skips follow. A complex block is drawn as its real and its
imaginary part.

Self-contained: CSS and SVG are inline, fonts are the system's, there is no
script and no link out of the page; its Content-Security-Policy forbids
loading anything, so a browser opens it offline. Every text from the run is
escaped. The page is written whole or not at all (``runner.files``), so a
failure or a second Ctrl-C never leaves half a page.
"""
from __future__ import annotations

import shlex
from html import escape
from types import SimpleNamespace
from typing import TextIO

from adcheck.cli.errors import InputError
from adcheck.cli.formats import heatmap_svg as svg
from adcheck.cli.formats.advice import cli_terms
from adcheck.cli.formats.table import SHORT
from adcheck.runner.results import STATUSES, TASK_CHECK, RunReport

#: heatmap cells one page draws at most (about 250 bytes each); failures past
#: this budget are described in words, without heatmaps
MAX_CELLS = 60_000

CSS = """
:root { --ink: #1f2328; --muted: #59636e; --line: #d1d9e0; --soft: #f6f8fa;
  --passed: #1a7f37; --failed: #cf222e; --known-failure: #9a6700; --skipped: #6e7781;
  --error: #8250df; }
* { box-sizing: border-box; }
body { margin: 0; color: var(--ink); background: #fff; line-height: 1.45;
  font: 15px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, "DejaVu Sans", sans-serif; }
main { max-width: 1500px; margin: 0 auto; padding: 24px 32px 48px; }
h1 { font-size: 26px; margin: 0 0 4px; } h1 small { color: var(--muted); font-weight: 400; }
h2 { font-size: 19px; margin: 32px 0 12px; padding-bottom: 6px;
  border-bottom: 1px solid var(--line); }
h3 { font-size: 16px; margin: 0 0 8px; display: flex; gap: 10px; align-items: center;
  flex-wrap: wrap; }
code, pre, .mono { font-family: ui-monospace, "DejaVu Sans Mono", Menlo, Consolas, monospace;
  font-size: 13px; }
.meta { color: var(--muted); margin: 0 0 10px; }
.totals { display: flex; gap: 8px; flex-wrap: wrap; margin: 8px 0; }
.badge { display: inline-block; padding: 1px 9px; border-radius: 999px; font-size: 13px;
  font-weight: 600; color: #fff; background: var(--skipped); }
.badge.passed { background: var(--passed); } .badge.failed { background: var(--failed); }
.badge.known-failure { background: var(--known-failure); }
.badge.error { background: var(--error); }
.badge.none { background: #eaeef2; color: var(--muted); font-weight: 400; }
.banner { border: 1px solid #d4a72c; background: #fff8c5; padding: 8px 12px; border-radius: 6px; }
table.summary { border-collapse: collapse; font-size: 14px; }
.summary th, .summary td { border: 1px solid var(--line); padding: 4px 10px; text-align: left; }
.summary th { background: var(--soft); }
.summary td.count span + span { margin-left: 6px; }
.s-passed { color: var(--passed); } .s-failed { color: var(--failed); font-weight: 700; }
.s-known-failure { color: var(--known-failure); } .s-skipped { color: var(--skipped); }
.s-error { color: var(--error); font-weight: 700; } .dim { color: var(--muted); }
.card { border: 1px solid var(--line); border-left: 5px solid var(--failed); border-radius: 6px;
  padding: 14px 18px; margin: 0 0 22px; }
.card.accepted { border-left-color: var(--known-failure); }
.what { margin: 4px 0; } .diagnosis { margin: 10px 0; padding: 8px 12px; background: #eef6ff;
  border-radius: 6px; } .diagnosis b { color: #0a3069; }
.pair { margin: 16px 0 6px; padding-top: 10px; border-top: 1px dashed var(--line); }
.maps { display: grid; grid-template-columns: repeat(3, max-content); gap: 18px 32px;
  align-items: start; margin: 10px 0; overflow-x: auto; }
@media (max-width: 1100px) { .maps { grid-template-columns: max-content; } }
figure { margin: 0; } figcaption { font-weight: 600; font-size: 14px; margin-bottom: 2px; }
figcaption span { color: var(--muted); font-weight: 400; }
.heatmap .axis { font: 11px ui-monospace, "DejaVu Sans Mono", monospace; fill: var(--muted); }
.heatmap .value { font: 11px ui-monospace, "DejaVu Sans Mono", monospace; pointer-events: none; }
.heatmap .cell { stroke: #ffffff; stroke-width: 1; }
.heatmap .cell:hover { stroke: #0969da; stroke-width: 2; }
.heatmap .cell.differs { stroke: #111111; stroke-width: 2.5; }
.heatmap .cell.worst { stroke: #111111; stroke-width: 4; }
.heatmap .flag { fill: #111111; pointer-events: none; }
.legend { display: flex; align-items: center; gap: 6px; font-size: 12px; color: var(--muted);
  margin-top: 4px; } .legend .bar { width: 150px; height: 10px; border-radius: 2px;
  border: 1px solid var(--line); }
.key { font-size: 13px; color: var(--muted); margin: 4px 0; display: flex; flex-wrap: wrap;
  gap: 4px 22px; align-items: center; }
.swatch { display: inline-block; width: 14px; height: 14px; vertical-align: -2px; margin: 0 4px;
  background: #f7f7f5; border: 2.5px solid #111; }
.swatch.worst { border-width: 3.5px; background: linear-gradient(135deg, #111 38%, #f7f7f5 38%); }
.note { font-size: 14px; margin: 4px 0; }
pre { background: #0d1117; color: #e6edf3; padding: 12px 14px; border-radius: 6px;
  overflow-x: auto; margin: 6px 0 0; }
details { margin: 10px 0; } summary { cursor: pointer; font-weight: 600; }
ul.lines { padding-left: 20px; margin: 6px 0; } ul.lines li { margin: 3px 0; }
footer { margin-top: 40px; color: var(--muted); font-size: 13px; }
"""
#: nothing may be loaded from anywhere: no scripts, no fonts, no images, no fetches
CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:"


def page(report: RunReport) -> str:
    """The whole report as one HTML document."""
    failed = [r for r in report.results if r.status == "failed"]
    anchors = {id(r): f"failure-{i}" for i, r in enumerate(failed)}
    accepted = set(report.baseline.accepted) if report.baseline is not None else set()
    body = [_header(report), _summary(report, anchors)]
    if failed:
        body.append(f'<h2>Failures <span class="dim">({len(failed)})</span></h2>')
        reproduce = _reproducer(report)
        budget, undrawn = MAX_CELLS, 0
        for r in failed:
            cells = _cells(r)
            drawn = cells <= budget
            if drawn:
                budget -= cells
            else:
                undrawn += 1
            body.append(_card(r, anchors[id(r)], reproduce, drawn, r.key in accepted))
        if undrawn:
            body.append(f'<p class="note">{undrawn} failed checks are described without '
                        f"heatmaps, to keep this page under {MAX_CELLS:,} heatmap cells.</p>")
    body += [_baseline(report), _others(report)]
    title = f"adcheck {_subject(report)}: {report.counts()['failed']} failed"
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f'<meta http-equiv="Content-Security-Policy" content="{CSP}">'
            '<meta name="viewport" content="width=device-width, initial-scale=1">'
            f"<title>{escape(title)}</title><style>{CSS}</style></head>\n<body><main>\n"
            + "\n".join(part for part in body if part)
            + f'\n<footer>adcheck {escape(_version())}</footer>\n</main></body></html>\n')


def _subject(report: RunReport) -> str:
    op = report.settings.get("op")
    return f"{report.command} {op}" if op else report.command


def _version() -> str:
    from adcheck.cli.formats.json_format import _version as version
    return version()


def _how(s) -> list:
    """How every check ran, beyond tolerances and seed: the options of the run's
    record (``runner.record.RunRecord``) that rebuild it."""
    budget = s.get("memory_budget")
    explore = s.get("explore")
    timeout = s.get("timeout")
    return [f"timeout {'none' if not timeout else f'{timeout:g} s'}",
            f"jacobian {s.get('jacobian', 'auto')}",
            *([f"memory budget {budget / 2**20:g} MiB"] if budget else []),
            *([] if explore is None else [f"explore {explore}" if isinstance(explore, str)
                                          else f"explore {explore:g} s" if explore
                                          else "explore"]),
            *([] if s.get("batching", True) else ["batching off"])]


def _header(report: RunReport) -> str:
    s = report.settings
    registry = s.get("registry", "opinfo")
    dtypes = s.get("dtypes") or (["float64", "complex128"] if registry == "opinfo"
                                 else ["every dtype of each op"])
    where = f"registry {registry}"
    if s.get("kind"):       # adcheck check MODULE:OBJECT: the user's object, its own dtypes
        where = f"{s['kind']} {s.get('target')}"
        dtypes = list(dict.fromkeys(r.dtype for r in report.results)) or ["none run"]
    meta = [where, f"engine {s.get('engine', '?')}",
            "precise tolerances" if s.get("precise") else "torch tolerances",
            f"seed {s.get('seed')}", f"checks {', '.join(s.get('checks') or [])}",
            f"dtypes {', '.join(dtypes)}", *_how(s),
            f"{report.seconds:.1f} s", f"exit status {int(report.exit_code())}"]
    counts = report.counts()
    badges = "".join(f'<span class="badge {status if counts[status] else "none"}">'
                     f"{counts[status]} {_plural(status, counts[status])}</span>"
                     for status in STATUSES)
    out = [f"<header><h1>adcheck {escape(_subject(report))} <small>report</small></h1>",
           f'<p class="meta">{escape(" · ".join(meta))}</p>',
           f'<div class="totals">{badges}</div>']
    if report.error is not None:
        out.append(f'<p class="banner"><b>Stopped</b>: {escape(report.error)}; this report '
                   "holds the results that arrived before.</p>")
    if report.interrupted:
        by = "Ctrl-C" if report.signal in (None, "SIGINT") else escape(report.signal)
        out.append(f'<p class="banner"><b>Interrupted</b> ({by}): this report is partial; '
                   "it holds the results that arrived before the interrupt.</p>")
    elif report.stopped_early:
        out.append('<p class="banner">Stopped at the first failing op (--fail-fast).</p>')
    return "\n".join(out) + "</header>"


def _plural(status: str, n: int) -> str:
    label = status.replace("-", " ")
    return label + "s" if status in ("known-failure", "error") and n != 1 else label


def _groups(report: RunReport) -> tuple:
    """(column titles, ``{row key: row cells}``, key of a result): one row per op,
    or per dtype and sample for a single op."""
    if report.command == "op":
        rows = {(r.dtype, r.sample): [r.dtype, "*" if r.sample is None else str(r.sample),
                                      r.sample_name] for r in report.results}
        return ["dtype", "#", "sample"], rows, lambda r: (r.dtype, r.sample)
    kind = "kind" if report.settings.get("kind") else "family"
    rows = {r.op: [r.op, r.family] for r in report.results}
    return ["op", kind], rows, lambda r: r.op


def _summary(report: RunReport, anchors: dict) -> str:
    if not report.results:
        return '<p class="note">No results.</p>'
    titles, rows, key_of = _groups(report)
    checks = report.checks()
    counts: dict = {}
    links: dict = {}
    for r in report.results:
        cell = counts.setdefault((key_of(r), r.check), dict.fromkeys(STATUSES, 0))
        cell[r.status] += 1
        if id(r) in anchors:
            links.setdefault((key_of(r), r.check), anchors[id(r)])
    head = "".join(f"<th>{escape(t)}</th>" for t in [*titles, *checks])
    lines = ['<h2>Summary</h2><table class="summary"><thead><tr>', head, "</tr></thead><tbody>"]
    for key, cells in rows.items():
        tds = "".join(f"<td>{escape(str(c))}</td>" for c in cells)
        for check in checks:
            tds += _count_cell(counts.get((key, check)), links.get((key, check)))
        lines.append(f"<tr>{tds}</tr>")
    lines.append("</tbody></table>")
    return "".join(lines)


def _count_cell(cell: dict | None, link: str | None) -> str:
    if not cell:
        return '<td class="dim">-</td>'
    spans = "".join(f'<span class="s-{status}">{SHORT[status]} {n}</span>'
                    for status, n in cell.items() if n)
    if link:
        spans = f'<a href="#{link}">{spans}</a>'
    return f'<td class="count">{spans}</td>'


def _cells(r) -> int:
    """How many heatmap cells the card of ``r`` draws."""
    total = 0
    for blocks in filter(None, r.jacobians):
        shape = getattr(blocks[0], "shape", ())
        if len(shape) == 2:
            maps = 6 if any(b.dtype.kind == "c" for b in blocks) else 3
            total += maps * min(shape[0], svg.MAX_SIDE) * min(shape[1], svg.MAX_SIDE)
    return total


def _reproducer(report: RunReport):
    """How a failed check is reproduced: the Python of ``runner.rebuild`` (an op
    of a registry) or ``runner.rebuild_target`` (a user's object), with the
    command line too for the latter."""
    from adcheck.runner.reproduction import reproducer
    settings = report.settings
    if report.command == "check" and settings.get("kind"):
        def command(r) -> str:
            words = ["adcheck", "check", settings["target"]]
            for spec in settings.get("inputs") or []:
                words += ["--inputs", spec]
            words += ["--check", r.check, "--seed", str(settings.get("seed"))]
            if settings.get("engine", "refengine") != "refengine":
                words += ["--engine", settings["engine"]]
            if not settings.get("precise", True):
                words.append("--torch-tolerances")
            line = " ".join(shlex.quote(w) for w in words)
            return f"{reproducer(r, settings)}\n# or, the whole command:\n# {line}\n"
        return command
    return lambda r: reproducer(r, settings)


def _card(r, anchor: str, reproduce, drawn: bool, accepted: bool) -> str:
    sample = "*" if r.sample is None else r.sample
    tag = ' <span class="badge known-failure">accepted by the baseline</span>' if accepted else ""
    out = [f'<section class="card{" accepted" if accepted else ""}" id="{anchor}">',
           f'<h3><span class="badge failed">failed</span><span class="mono">'
           f"{escape(f'{r.op} {r.dtype}[{sample}] {r.check}')}</span>{tag}</h3>",
           f'<p class="dim">sample: {escape(r.sample_name or "-")} · seed '
           f'{"-" if r.seed is None else r.seed}</p>',
           '<p class="diagnosis"><b>diagnosis:</b> '
           f"{escape(cli_terms(r.diagnosis) or 'no recognised pattern')}</p>"]
    if r.dispute:
        out.append(f'<p class="diagnosis"><b>torch:</b> {escape(r.dispute)}</p>')
    for i, failure in enumerate(r.failures):
        blocks = r.jacobians[i] if drawn and i < len(r.jacobians) else None
        out.append(_pair(failure, blocks, r.op))
    if len(r.failures) > len(r.jacobians) and drawn:
        out.append(f'<p class="note dim">Jacobians are drawn for the first {len(r.jacobians)} '
                   "failing pairs.</p>")
    code = reproduce(r)
    if code is not None:
        out.append(f"<details open><summary>Reproduce</summary><pre><code>{escape(code)}"
                   "</code></pre></details>")
    out.append("</section>")
    return "\n".join(out)


def _describe(failure: dict, name: str) -> str:
    """gradcheck's one-line description of a failing pair, from its dict."""
    from adcheck.gradcheck.verdict.report import describe

    def number(value):
        return None if value is None else float(value)
    where = failure.get("where")
    return describe(SimpleNamespace(**{**failure, "max_error": number(failure["max_error"]),
                                       "tolerance": number(failure["tolerance"]),
                                       "where": None if where is None else tuple(where)}), name)


def _pair(failure: dict, blocks, name: str) -> str:
    what = f'<p class="what mono">{escape(cli_terms(_describe(failure, name)))}</p>'
    if blocks is None:
        return f'<div class="pair">{what}</div>'
    return f'<div class="pair">{what}{svg.jacobian_pair(failure, *blocks)}</div>'


def _baseline(report: RunReport) -> str:
    b = report.baseline
    if b is None:
        return ""
    out = [f"<h2>Baseline <span class=\"dim\">{escape(b.path)}</span></h2>",
           f'<p class="note">{len(b.new)} new, {len(b.accepted)} accepted, '
           f"{len(b.fixed)} fixed</p>"]
    for label, keys in (("new", b.new), ("fixed (remove it from the baseline)", b.fixed)):
        if keys:
            items = "".join(f"<li class=\"mono\">{escape(k)}</li>" for k in keys)
            out.append(f'<p class="note">{label}:</p><ul class="lines">{items}</ul>')
    return "\n".join(out)


def _others(report: RunReport) -> str:
    """Errors in the open; known failures and skips folded away."""
    out = []
    for status, title, folded in (("error", "Errors", False),
                                  ("stale", "Passed although declared known failures", False),
                                  ("known-failure", "Known failures", True),
                                  ("skipped", "Skipped", True)):
        found = report.stale() if status == "stale" else \
            [r for r in report.results if r.status == status]
        if not found:
            continue
        extra = _error_detail(report) if status == "error" else (lambda r: "")
        items = "".join(f'<li><span class="mono">{escape(_label(r))}</span>: '
                        f"{escape(cli_terms(r.message))}{extra(r)}</li>" for r in found)
        listing = f'<ul class="lines">{items}</ul>'
        if folded:
            out.append(f"<details><summary>{title} ({len(found)})</summary>{listing}</details>")
        else:
            out.append(f'<h2>{title} <span class="dim">({len(found)})</span></h2>{listing}')
    return "\n".join(out)


def _error_detail(report: RunReport):
    """An error's traceback (the user's frames) and the Python that reruns its
    check, below its line."""
    reproduce = _reproducer(report)

    def detail(r) -> str:
        parts = []
        if r.traceback:
            parts.append(f"<details open><summary>Traceback</summary><pre><code>"
                         f"{escape(r.traceback)}</code></pre></details>")
        code = reproduce(r)
        if code is not None:
            parts.append(f"<details><summary>Reproduce</summary><pre><code>{escape(code)}"
                         "</code></pre></details>")
        return "".join(parts)
    return detail


def _label(r) -> str:
    sample = "*" if r.sample is None else r.sample
    check = "" if r.check == TASK_CHECK else f" {r.check}"
    return f"{r.op} {r.dtype}[{sample}]{check}"


class HtmlFormat:
    """Writes ``page(report)``."""

    name = "html"

    def render(self, report: RunReport, out: TextIO, *, color: bool = False,
               verbosity: int = 0) -> None:
        out.write(page(report))


def write_report(path: str, report: RunReport) -> None:
    """Render the page, then put it at ``path`` in one step (a failure while
    rendering or writing leaves any earlier file as it was)."""
    from adcheck.runner.files import write_atomic
    text = page(report)
    try:
        write_atomic(path, text)
    except OSError as exc:
        raise InputError(f"cannot write {path!r}: {exc.strerror}; choose a writable path") \
            from None
