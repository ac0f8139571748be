"""The core of a check: a function and its inputs made into real Jacobians.

Owns the vocabulary (``modes``, ``coords``, ``options``), the one
``Jacobian`` type, the ``Problem`` (a validated function and inputs, and
the dtype its double-precision outputs come through: ``grids``), the
``Evaluator`` (outputs, vjps and jvps, batched; its parts: the products asked
for ahead, ``prefetch``, and a first derivative's vmappable twin, ``twin``),
the memory budget (``budget``, ``heap``), and the plain producers: finite
differences (``numerical``), reverse and forward mode (``analytical`` over
``sides``), fast-mode projections (``fast``) and the first derivative as a
function (``secondorder``).

May import: ``gradcheck.errors``, ``gradcheck.engines`` and nothing else of gradcheck.
"""
