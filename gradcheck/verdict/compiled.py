"""A torch.compile'd function checked in forward mode.

torch 2.13's ``torch.compile`` (the inductor backend) may return outputs
without the forward-mode tangents of its dual inputs (pytorch#187284; whether
it does depends on what the process compiled before): the jvp of a compiled
function is then silently zero, which the forward check fails as "analytical
is zero". ``name`` adds that cause where the function checked
is a compiled one (``_torchdynamo_orig_callable`` on a function,
``_orig_mod`` on a module) and its forward-mode block is zero.
"""
from __future__ import annotations

import numpy as np


def is_compiled(func) -> bool:
    """Whether ``func`` is what ``torch.compile`` returned."""
    return hasattr(func, "_torchdynamo_orig_callable") or (
        hasattr(func, "_orig_mod") and type(func).__name__ == "OptimizedModule")


def name(report, problem) -> None:
    """Say the cause in each forward-mode failure of ``report`` whose jvp is zero
    everywhere, where the function checked is a torch.compile'd one."""
    if not is_compiled(problem.source):
        return
    for result in report.failures:
        if result.check != "forward" or result.actual is None or np.any(result.actual):
            continue
        text = ("the function is torch.compile'd, and torch.compile returns no forward-mode "
                "tangent for dual inputs where it runs its compiled graph (pytorch#187284: "
                "the jvp is silently zero); check forward mode on the function it compiles")
        result.diagnosis = text if not result.diagnosis else f"{text}; {result.diagnosis}"
