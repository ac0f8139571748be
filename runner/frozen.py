"""Imported last by a process that forks workers: what it holds so far is frozen.

A worker inherits its parent's objects: the libraries' (NumPy, refengine,
gradcheck; torch and the user's module on the command line: over a million
objects with torch). Python's collector walks every tracked object at each
full collection, and the checks allocate enough to run several: with torch
imported, 50 to 80 ms each (``import torch``, then its symbolic shapes and
gradcheck: 0.23 s of collections, 0.12 s after ``gc.freeze()``). Objects
frozen here are left out of every later collection in this process and its
forks (they are import-time objects, alive until the process ends; Python's
documentation recommends the freeze before forking for this reason and for
copy-on-write). The fork server imports this module last of its preload;
``WorkerPool.forking_here`` calls ``gc.freeze()`` itself, in adcheck's own
command only (a program that runs checks in its own process keeps its
objects collectable).
"""
from __future__ import annotations

import gc


gc.freeze()
