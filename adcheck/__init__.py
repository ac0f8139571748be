"""adcheck: verify derivative formulas.

adcheck's packages live under this one name, so that no file of a user's
(``gradcheck.py``, ``runner.py``, ``cli.py`` beside their code) can shadow
them, and none of them shadows the user's:

- ``adcheck.refengine``: the reference autograd engine on NumPy;
- ``adcheck.gradcheck``: Jacobian-based verification (``check``,
  ``gradcheck``, ``gradgradcheck``);
- ``adcheck.opinfo``: the operator registry;
- ``adcheck.conformance``: PyTorch's documented semantics as runnable cases;
- ``adcheck.runner`` and ``adcheck.cli``: the ``adcheck`` command.

In a checkout the packages are the repository's top-level folders; installed,
they are folders of this package (``setup.py`` maps one to the other).
"""
import os as _os

if not _os.path.isdir(_os.path.join(__path__[0], "gradcheck")):
    # A checkout: the packages are this folder's siblings.
    __path__.append(_os.path.dirname(_os.path.realpath(__path__[0])))
