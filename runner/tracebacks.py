"""The traceback of an error in the user's code, its frames only.

An error of a check is an exception the code under check raised, usually
wrapped by gradcheck (``GradcheckError`` ... ``from`` the user's exception).
``user_traceback`` walks the chain, keeps the frames of files that are
neither adcheck's packages, nor an installed library, nor Python's own, and
ends with the innermost exception's type and message: what a user needs to
find the line, without adcheck's or torch's frames around it.
"""
from __future__ import annotations

import os
import sysconfig
import traceback

#: adcheck's own package folders, below the folder that holds them
_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_PACKAGES = ("adcheck", "gradcheck", "runner", "cli", "refengine", "opinfo", "conformance",
             "pytest_adcheck")
#: where Python's own and installed libraries live
_LIBRARIES = tuple({os.path.abspath(sysconfig.get_paths()[key])
                    for key in ("stdlib", "platstdlib", "purelib", "platlib")})


def is_users(path: str) -> bool:
    """Whether a frame's file is the user's: not adcheck's, a library's, or Python's."""
    if path.startswith("<"):
        return False
    path = os.path.abspath(path)
    if "site-packages" in path or path.startswith(_LIBRARIES):
        return False
    relative = os.path.relpath(path, _ROOT).replace(os.sep, "/")
    return relative.split("/")[0] not in _PACKAGES


def user_traceback(exc: BaseException) -> str | None:
    """``Traceback of your code ...`` with the user's frames of ``exc``'s chain, or
    ``None`` when no frame of it is the user's."""
    chain, seen = [], set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        chain.append(exc)
        exc = exc.__cause__ or (None if exc.__suppress_context__ else exc.__context__)
    frames = []
    for error in reversed(chain):      # the original error first, as Python prints
        frames += [f for f in traceback.extract_tb(error.__traceback__) if is_users(f.filename)]
    if not frames:
        return None
    innermost = chain[-1]
    lines = ["Traceback of your code (most recent call last):\n"]
    lines += traceback.format_list(frames)
    lines += traceback.format_exception_only(type(innermost), innermost)
    return "".join(lines).rstrip("\n")
