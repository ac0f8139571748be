"""Where a task was when its timeout fired, and what to try, in one line.

``TaskTimeout`` is raised by the alarm wherever the task happens to be; its
traceback says where. ``timeout_text`` reads it: the check that was running
and its Jacobian plan (the runner's and gradcheck's own frames hold them),
the stage of that check (the innermost of adcheck's modules that names one),
and the user's own frame if the time went there; then the options that make
such a check fit: ``--jacobian probed``, a longer ``--timeout``, smaller
``--inputs``.
"""
from __future__ import annotations

import os

from adcheck.runner.tracebacks import is_users

#: the stage each of gradcheck's modules is, innermost first wins (a module's path
#: relative to the checkout, as the frames name it)
STAGES = (
    ("gradcheck/large/window", "locating the wrong entry of a failed check"),
    ("gradcheck/large/compressed", "reading the formula's sparsity pattern"),
    ("gradcheck/large/pattern", "reading the formula's sparsity pattern"),
    ("gradcheck/numerics/", "building the expected Jacobian by finite differences"),
    ("gradcheck/core/numerical", "building the expected Jacobian by finite differences"),
    ("gradcheck/core/analytical", "building the AD Jacobian (one vjp or jvp per row or column)"),
    ("gradcheck/verdict/", "comparing the Jacobians"),
    ("gradcheck/core/secondorder", "building the first derivative for a second-order check"),
)
#: where adcheck's own packages live
_ADCHECK = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def timeout_text(exc: BaseException, seconds: float) -> str:
    """``timed out after 120s in the reverse check (plan chunked) while building
    the expected Jacobian by finite differences; try ...``"""
    check, plan, stage, user = _where(exc.__traceback__)
    place = f" in the {check} check" if check else ""
    place += f" (Jacobian plan {plan})" if plan else ""
    place += f" while {stage}" if stage else ""
    place += f", in your code at {user}" if user else ""
    advice = ("try --jacobian probed (checks J U along random directions, in seconds, and "
              "states the odds that a wrong entry escapes), a longer --timeout, or smaller "
              "--inputs") if plan != "probed" else (
              "try a longer --timeout or smaller --inputs")
    return f"timed out after {seconds:g}s{place}; {advice}"


def kept_text(kept: int) -> str:
    """What a timeout's message adds for the ``kept`` checks that ended before it."""
    return f"; {kept} check{'s' if kept != 1 else ''} ended before it, kept above" \
        if kept else ""


def _where(tb) -> tuple:
    """``(check, plan, stage, user frame)`` from the traceback, each or None."""
    check = plan = stage = user = None
    while tb is not None:
        frame, path = tb.tb_frame, os.path.abspath(tb.tb_frame.f_code.co_filename)
        local = frame.f_locals
        name = frame.f_code.co_name
        if name == "run_check" and isinstance(local.get("check"), str):
            check = local["check"]
        if name == "slow" and hasattr(local.get("plan"), "kind"):
            plan = local["plan"].kind
        if is_users(path):
            user = f"{path}:{tb.tb_lineno}"
        else:
            relative = os.path.relpath(path, _ADCHECK).replace(os.sep, "/")
            stage = next((words for prefix, words in STAGES if relative.startswith(prefix)),
                         stage)
        tb = tb.tb_next
    return check, plan, stage, user
