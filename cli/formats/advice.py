"""Advice in the command line's terms.

gradcheck's messages advise in Python keywords (``pass
check_forward_ad=False``, ``precise=True``), right for a caller of
``gradcheck.check``; on the command line the same advice is an option. The
terminal and HTML outputs pass each message through ``cli_terms``; JSON
keeps gradcheck's words (programs read them, and the reproducer is Python).
Advice with no option says it is for Python.
"""
from __future__ import annotations

import re

#: Python keyword advice -> the same on the command line (whole phrases first)
_PHRASES = (
    ("pass check_forward_ad=False if the function has none",
     "leave forward out of --check (--check reverse) if the function has none"),
    ("pass check_forward_ad=False", "leave forward out of --check (--check reverse)"),
    ("pass precise=True", "pass --precise"),
    ("precise=True", "--precise"),
)
#: advice to set a tolerance no option sets: said to be Python's
_TOLERANCE = re.compile(r"set nondet_tol >= ([0-9.e+-]+)")
#: keywords with no option: kept, marked as Python's
_PYTHON_ONLY = ("check_detached", "check_batched_grad", "check_batched_forward_grad",
                "check_undefined_grad")
_KEYWORD = re.compile(r"(?:pass )?\b((?:" + "|".join(_PYTHON_ONLY) + r")=(?:True|False))")


def cli_terms(text: str | None) -> str | None:
    """``text`` with its Python keyword advice in the command line's terms."""
    if not text:
        return text
    for python, option in _PHRASES:
        text = text.replace(python, option)
    text = _TOLERANCE.sub(lambda m: f"pass nondet_tol={m.group(1)} (or more) to "
                                    "gradcheck.check in Python: no option of the command line "
                                    "sets it", text)
    return _KEYWORD.sub(lambda m: f"in Python pass {m.group(1)} to gradcheck.check (no "
                                  "option of the command line turns it off)", text)
