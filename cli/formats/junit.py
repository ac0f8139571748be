"""``--junit-xml PATH``: JUnit XML, the test report format CI systems read.

One ``<testsuite name="adcheck">`` holding one ``<testcase>`` per op, dtype,
sample and check: ``classname`` is ``adcheck.<command>.<op>`` and ``name`` is
``<dtype>[<sample>] <check>``. A failed check is a ``<failure>``, an error
an ``<error>`` (``type`` is ``<check>-<status>``, the text adds the
diagnosis, sample and seed), a skip or a known failure a ``<skipped>`` (its
message says which). The suite's properties hold the settings, the exit
status of the run (``exit_code``), for a shard ``shard`` (``K/N``, or ``N
merged`` for ``adcheck merge``) and, for a partial run, ``interrupted``
with the ``signal``, or the ``error`` that stopped it. Written with
``xml.etree``, so text is escaped.
"""
from __future__ import annotations

import xml.etree.ElementTree as ET
from typing import TextIO

from adcheck.runner.results import CheckResult, RunReport

_ELEMENT = {"failed": "failure", "error": "error", "skipped": "skipped",
            "known-failure": "skipped"}


def _case(report: RunReport, r: CheckResult) -> ET.Element:
    sample = "*" if r.sample is None else str(r.sample)
    case = ET.Element("testcase", classname=f"adcheck.{report.command}.{r.op}",
                      name=f"{r.dtype}[{sample}] {r.check}", time=f"{r.seconds:.3f}")
    tag = _ELEMENT.get(r.status)
    if tag is None:
        return case
    message = r.message if r.status != "known-failure" else f"known failure: {r.message}"
    child = ET.SubElement(case, tag, message=message)
    if tag in ("failure", "error"):
        child.set("type", f"{r.check}-{r.status}")
        lines = [r.message] + ([f"diagnosis: {r.diagnosis}"] if r.diagnosis else [])
        lines += [f"torch: {r.dispute}"] if r.dispute else []
        lines += [f"sample: {r.sample_name}"] if r.sample_name else []
        lines += [f"seed: {r.seed}"] if r.seed is not None else []
        child.text = "\n".join(lines)
    return case


def tree(report: RunReport) -> ET.ElementTree:
    counts = report.counts()
    suite = ET.Element("testsuite", name="adcheck", tests=str(len(report.results)),
                       failures=str(counts["failed"]), errors=str(counts["error"]),
                       skipped=str(counts["skipped"] + counts["known-failure"]),
                       time=f"{report.seconds:.3f}")
    props = ET.SubElement(suite, "properties")
    for name, value in sorted(report.settings.items()):
        ET.SubElement(props, "property", name=name, value=str(value))
    if report.interrupted:
        ET.SubElement(props, "property", name="interrupted", value="true")
        ET.SubElement(props, "property", name="signal", value=report.signal or "SIGINT")
    if report.error is not None:
        ET.SubElement(props, "property", name="error", value=report.error)
    shard = report.shard or {}
    if "index" in shard or "merged" in shard:
        ET.SubElement(props, "property", name="shard", value=f"{shard['index']}/{shard['count']}"
                      if "index" in shard else f"{shard['merged']} merged")
    ET.SubElement(props, "property", name="exit_code", value=str(int(report.exit_code())))
    for r in report.results:
        suite.append(_case(report, r))
    root = ET.Element("testsuites")
    root.append(suite)
    return ET.ElementTree(root)


class JunitFormat:
    """Writes the report as JUnit XML."""

    name = "junit"

    def render(self, report: RunReport, out: TextIO, *, color: bool = False,
               verbosity: int = 0) -> None:
        document = tree(report)
        ET.indent(document)
        out.write('<?xml version="1.0" encoding="utf-8"?>\n')
        document.write(out, encoding="unicode")
        out.write("\n")
