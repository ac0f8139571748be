"""gradcheck: verify derivative formulas against finite differences, each
other and mpmath, and say what is wrong when they disagree.

The entry points are ``gradcheck`` and ``gradgradcheck`` (drop-ins for
PyTorch's) and ``check`` (returns a ``Report``). The Jacobian builders
``numerical_jacobian``, ``reverse_jacobian``, ``forward_jacobian`` and
``reference_jacobian`` each return a ``Jacobian``.

Example::

    import torch, gradcheck
    x = torch.rand(3, dtype=torch.float64, requires_grad=True)
    gradcheck.gradcheck(MySin.apply, (x,), check_forward_ad=True)   # True or raises
    report = gradcheck.check(MySin.apply, (x,), precise=True)      # a Report
    if not report.passed:
        print(report.message())      # which pair, largest error, where, diagnosis
        report.to_dict()             # JSON-serializable

Inputs may be ``refengine`` or ``torch`` tensors, or JAX arrays; the engine
is taken from them (see ``gradcheck.engines``). Jacobians are built in
batches through the engine's vmap (see ``gradcheck.evaluation``), within a
memory budget (``memory_budget``, see ``gradcheck.budget``). Large blocks
are built as ``J S`` for seeds ``S`` (compressed by their sparsity pattern,
or probed along random directions) or in chunks: ``gradcheck.producers``
says which and when.

Layout, each layer importing only from those above it:

- ``coords``, ``serialize``, ``modes`` (the vocabulary of checks), ``errors``,
  ``batching``, ``budget``, ``options`` (the validated keywords), ``engines``
  (adapters), ``structure`` (sparsity patterns), ``seeds`` (the ``S`` of
  ``J S``);
- ``jacobian``: the one ``Jacobian`` type;
- ``problem`` (a validated function and inputs), ``evaluation`` (outputs,
  vjps and jvps, batched or looped inside), ``sides`` (reverse and forward
  mode described once);
- producers: ``numerical`` (central differences), ``richardson``,
  ``reference`` (mpmath), ``analytical`` (reverse and forward), ``fast``
  (projections), ``cells`` (columns of ``J S``), ``compressed`` and
  ``decompress`` (structured blocks), ``probed`` (random directions), chosen
  from the options and the sizes in ``producers``;
- ``diagnosis``, ``compare`` (the one comparator, whole or by chunks),
  ``precise``, ``adjoint``, ``window`` (a failure in cells located and shown);
- ``checks`` (scaling, reentrancy, undefined gradients, ...), ``report``,
  ``secondorder``, ``streamed`` (chunked dense blocks), ``flow`` (the steps
  of a check);
- ``api``: ``check``, ``run``, ``gradcheck``, ``gradgradcheck``.
"""
from gradcheck.api import check, gradcheck, gradgradcheck
from gradcheck.batching import batching_enabled, set_batching
from gradcheck.errors import GradcheckError, UncheckableError
from gradcheck.jacobian import Jacobian
from gradcheck.options import Options
from gradcheck.producers import forward_jacobian, numerical_jacobian, reverse_jacobian
from gradcheck.reference import reference_jacobian
from gradcheck.report import Report

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
           "numerical_jacobian",
           "reference_jacobian",
           "reverse_jacobian",
]
