"""Writing files whole or not at all.

A report or a baseline is first written to a temporary file in the same
folder, then moved over the target in one step (``os.replace``), so a reader
sees the old file or the new one, never half of one: not after a crash, a
second Ctrl-C, a full disk, nor when two runs write the same path at once
(each writes its own temporary file; the last move wins, whole).

``stage(path, text)`` does the first half and returns a ``Staged`` file to
``commit()`` (or ``discard()``); ``write_atomic(path, text)`` does both.
Both raise ``OSError`` (the temporary file is removed).
"""
from __future__ import annotations

import os
import tempfile


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


class Staged:
    """A file written beside its target, waiting to replace it."""

    def __init__(self, path: str, temp: str):
        self.path, self.temp = str(path), temp

    def rewrite(self, text: str) -> None:
        """Replace the staged content (before ``commit``)."""
        with open(self.temp, "w", encoding="utf-8") as handle:
            handle.write(text)

    def commit(self) -> None:
        """Put the staged file at its path, in one step."""
        try:
            os.replace(self.temp, self.path)
        except BaseException:
            self.discard()
            raise

    def discard(self) -> None:
        try:
            os.remove(self.temp)
        except OSError:
            pass


def stage(path, text: str) -> Staged:
    """Write ``text`` to a new temporary file beside ``path``."""
    folder, name = os.path.split(os.path.abspath(str(path)))
    handle, temp = tempfile.mkstemp(prefix=f".{name}.", suffix=".partial", dir=folder)
    staged = Staged(path, temp)
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            os.chmod(temp, 0o666 & ~_umask())     # as an ordinary new file, not mkstemp's 0600
            out.write(text)
    except BaseException:
        staged.discard()
        raise
    return staged


def write_atomic(path, text: str) -> None:
    """Write ``text`` to ``path`` whole, or leave ``path`` as it was."""
    stage(path, text).commit()
