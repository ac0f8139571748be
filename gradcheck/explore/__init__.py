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
(``shrink``), and described with a reproducer in the report (``point``). A
point still failing is judged by the op's mpmath reference when the check
carries one (``Options.explore_reference``, ``arbiter``): where it agrees with
the formula and not with finite differences, the forward loses precision there
and the point is counted apart, not failed.
``search`` runs it all within a budget of seconds, each point stopped at its
own deadline (``deadline``). The quick pass (``explore="quick"``, ``check()``'s
default; ``gradcheck()``'s is False, as PyTorch's) runs once the given inputs
pass, within ``search.QUICK_BUDGET`` seconds: it tries only the cheapest points
(``catalogue.cheapest``) of inputs of double precision and screens each with a
few evaluations (``quick``) before any full check. Explored points are judged
precisely whatever tolerances the given inputs were judged with. A process that checks for another (the runner's workers)
announces each point and skips those it died at before (``watch``).

Owns: the catalogue of special points, the one-sided verdicts, the mpmath
arbiter of a failing point, the quick
screen, the search, the shrinking, the description of an explored point and
the announcement of each point to a watching parent process.

May import: every room of ``gradcheck`` below ``api`` (``core``, ``numerics``,
``verdict``, ...). It does not import ``api``: ``api.check`` enters it and
hands it ``run`` (the one way a check is put together), so imports stay
one-way.
"""
from adcheck.gradcheck.explore.search import explore

__all__ = ["explore"]
