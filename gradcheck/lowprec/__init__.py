"""Low precision: judging a float32, bfloat16 or float16 formula.

Owns the rounding model of a low-precision Jacobian (``lowprecision``), the
wider-precision and in-dtype producers (``widening``, ``indtype``), the
rounding of second-order formulas (``adrounding``) and kinks within a rounding
of the input (``kinks``).

May import: ``gradcheck.core``, ``gradcheck.numerics``.
"""
