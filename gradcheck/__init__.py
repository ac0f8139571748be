"""gradcheck: verify derivative formulas against finite differences, each
other and mpmath, and say what is wrong when they disagree.

The entry points are ``gradcheck`` and ``gradgradcheck`` (drop-ins for
PyTorch's) and ``check`` (returns a ``Report``). The Jacobian builders
``numerical_jacobian``, ``reverse_jacobian``, ``forward_jacobian`` and
``reference_jacobian`` each return a ``Jacobian``.

Example::

    import torch
    from adcheck import gradcheck
    x = torch.rand(3, dtype=torch.float64, requires_grad=True)
    gradcheck.gradcheck(MySin.apply, (x,), check_forward_ad=True)   # True or raises
    report = gradcheck.check(MySin.apply, (x,), precise=True)      # a Report
    if not report.passed:
        print(report.message())      # which pair, largest error, where, diagnosis
        report.to_dict()             # JSON-serializable

Inputs may be ``refengine`` or ``torch`` tensors, or JAX arrays; the engine
is taken from them (see ``gradcheck.engines``).

Rooms, each importing only from those listed before it (``docs/architecture.md``
walks one check through them):

- ``errors``: the exceptions, below every room;
- ``engines``: adapters to refengine, torch and JAX;
- ``core``: the vocabulary, the one ``Jacobian`` type, the ``Problem``, the
  ``Evaluator``, the memory budget and the plain producers;
- ``numerics``: Richardson, the noise floor, the mpmath reference and the
  precise mode's tolerance;
- ``lowprec``: judging float32, bfloat16 and float16 formulas;
- ``verdict``: the one comparator, the diagnosis, the checks beyond Jacobian
  agreement and the ``Report``;
- ``large``: compressed, probed and chunked Jacobians beyond the budget;
- the plan, at this level: ``producers`` (which producer builds each
  Jacobian), ``flow`` (the steps of one check) and ``api`` (``check``,
  ``gradcheck``, ``gradgradcheck``).

New features that use whole checks (exploring inputs, harvesting Functions
from a model, judging kernels against a reference) are rooms of their own
above ``api``.
"""
if not __name__.startswith("adcheck."):     # the checkout's folder, imported by its short name
    raise ImportError(f"import adcheck.{__name__}, not {__name__}: adcheck's packages live "
                      "under the name 'adcheck' (see the README)")
from adcheck.gradcheck.api import check, gradcheck, gradgradcheck
from adcheck.gradcheck.core.batching import batching_enabled, set_batching
from adcheck.gradcheck.errors import GradcheckError, UncheckableError
from adcheck.gradcheck.core.jacobian import Jacobian
from adcheck.gradcheck.core.options import Options
from adcheck.gradcheck.producers import forward_jacobian, numerical_jacobian, reverse_jacobian
from adcheck.gradcheck.numerics.reference import reference_jacobian
from adcheck.gradcheck.harvest import harvest  # the function; its room: gradcheck.harvest.api
from adcheck.gradcheck.verdict.report import Report

__all__ = [
           "GradcheckError",
           "UncheckableError",
           "batching_enabled",
           "set_batching",
           "Jacobian",
           "Options",
           "Report",
           "check",
           "forward_jacobian",
           "gradcheck",
           "gradgradcheck",
           "harvest",
           "numerical_jacobian",
           "reference_jacobian",
           "reverse_jacobian",
]
