"""Output formats: each one module behind one interface, as pip-audit does it.

A format renders a ``RunReport`` to a text stream::

    fmt = get_format("json")
    fmt.render(report, sys.stdout, color=False, verbosity=0)

``table`` is for people (rich, colour on a terminal), ``json`` for programs
(a versioned schema, see ``cli.formats.json_format``), ``junit`` for CI test
reports (``--junit-xml PATH``); ``op-table`` and ``op-json`` are ``adcheck
op``'s detailed views of one operator. Modules are imported only when asked
for.
"""
from __future__ import annotations

import importlib
from typing import Protocol, TextIO

from adcheck.runner.results import RunReport

#: format name -> (module, class)
FORMATS = {
    "table": ("adcheck.cli.formats.table", "TableFormat"),
    "json": ("adcheck.cli.formats.json_format", "JsonFormat"),
    "junit": ("adcheck.cli.formats.junit", "JunitFormat"),
    "op-table": ("adcheck.cli.formats.op_view", "OpTableFormat"),
    "op-json": ("adcheck.cli.formats.op_view", "OpJsonFormat"),
}


class Format(Protocol):
    """The one interface every output format implements."""

    name: str

    def render(self, report: RunReport, out: TextIO, *, color: bool = False,
               verbosity: int = 0) -> None:
        """Write ``report`` to ``out``. ``verbosity`` is -1 (quiet), 0 or 1."""


def get_format(name: str) -> Format:
    """The format called ``name`` (one of ``FORMATS``)."""
    module_name, class_name = FORMATS[name]
    return getattr(importlib.import_module(module_name), class_name)()
