"""gradcheck: verify derivative formulas against finite differences, each
other and mpmath, and say what is wrong when they disagree.

The entry points are ``gradcheck`` and ``gradgradcheck`` (drop-ins for
PyTorch's) and ``check`` (returns a ``Report``). The Jacobian builders
``numerical_jacobian``, ``reverse_jacobian``, ``forward_jacobian`` and
``reference_jacobian`` each return a ``Jacobian``.
"""
from gradcheck.api import check, gradcheck, gradgradcheck
from gradcheck.errors import GradcheckError
from gradcheck.forward import forward_jacobian
from gradcheck.jacobian import Jacobian
from gradcheck.numerical import numerical_jacobian
from gradcheck.reference import reference_jacobian
from gradcheck.report import Report
from gradcheck.reverse import reverse_jacobian

__all__ = ["gradcheck", "gradgradcheck", "check", "Report", "GradcheckError",
           "numerical_jacobian", "reverse_jacobian", "forward_jacobian",
           "reference_jacobian", "Jacobian"]
