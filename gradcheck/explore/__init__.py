"""Explore: look for the inputs where a derivative formula is wrong.

``check(func, inputs, explore=True)`` checks ``func`` at its given inputs,
then at special points built from them: exact zeros, ties within and across
inputs, tiny and huge magnitudes, small integers, repeated eigenvalues,
complex values on the axes and the unit circle (``catalogue``), and random
magnitude sweeps. Every explored point is a whole check of the same function
at another input (the one comparator, the one report), in precise mode so
that an entry off by 10 % of itself fails at 1e-8 as at 40. A failing point
is judged again with one-sided derivatives where the function may have a kink
or a tie (``brackets``), shrunk to as few special entries as possible
(``shrink``), and described with a reproducer in the report (``point``).
``search`` runs it all within a budget of seconds. The quick pass
(``explore="quick"``) tries only the cheapest points (``catalogue.cheapest``)
and screens each with a few evaluations (``quick``) before any full check.

Owns: the catalogue of special points, the one-sided verdicts, the quick
screen, the search, the shrinking and the description of an explored point.

May import: every room of ``gradcheck`` below ``api`` (``core``, ``numerics``,
``verdict``, ...). It does not import ``api``: ``api.check`` enters it and
hands it ``run`` (the one way a check is put together), so imports stay
one-way.
"""
from adcheck.gradcheck.explore.search import explore

__all__ = ["explore"]
