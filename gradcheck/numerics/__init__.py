"""Precise numerics: finite differences whose error is known, and the
tolerances derived from it.

Owns Richardson extrapolation (``richardson``, ``quotients``, ``sentinel``),
the measured rounding noise of the function (``noisefloor``) and of the
AD side (``adrounding``), the mpmath reference Jacobian (``reference``), what
a comparison can resolve (``precision``), the precise mode's tolerance
(``precise``), and the scheme a check's plan differences and judges by
(``scheme``: central differences with ``atol``/``rtol``, or extrapolation with
the precise tolerance).

May import: ``gradcheck.core``.
"""
