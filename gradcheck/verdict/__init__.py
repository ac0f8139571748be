"""Verdicts: comparing Jacobians and saying what is wrong.

Owns the one comparator (``compare``), the diagnosis of an error's shape
(``diagnosis``), the adjoint identity (``adjoint``), faults of the function
itself (``faults``), the checks beyond Jacobian agreement (``checks``:
reentrancy, scaling, undefined gradients, ...; ``repeats``: reentrancy of a
block made a batch at a time) and the ``Report``.

May import: ``gradcheck.core``, ``gradcheck.numerics``, ``gradcheck.lowprec``.
"""
