"""The exception gradcheck raises."""
from __future__ import annotations


class GradcheckError(RuntimeError):
    """A check failed, or the function could not be checked.

    ``report`` is the ``Report`` of the failing check (``None`` when the
    function could not be run at all, for example because it raised).
    """

    def __init__(self, message: str, report=None):
        super().__init__(message)
        self.report = report


class SteppedOffError(GradcheckError):
    """The function runs at the given inputs but raised at a point finite
    differences moved them to: a step left its domain. A whole model's probed
    check meets it where a parameter is constrained (``harvest.api.whole_model``
    judges it again densely, where such coordinates are left out)."""


class UncheckableError(ValueError):
    """The call has nothing gradcheck can check, as given: no input requires grad,
    no output depends on one, NumPy arrays, integer or sparse tensors, a dtype or
    a mode the engine cannot run. A ``ValueError``; a sweep reports such a check
    as skipped with this message, where any other exception is an error."""


class NoDoubleBackward(RuntimeError):
    """The backward of the function raised when asked to build a graph
    (``create_graph=True``), as a backward computed in NumPy does: the function
    has no double backward. Raised by a second-order check's first derivative
    (``gradcheck.core.secondorder``), with the backward's exception as its cause."""
    #: the skip's words for why (``None``: the backward raised when asked to build a graph)
    reason: str | None = None


def no_derivative_formula(exc: BaseException) -> NoDoubleBackward | None:
    """A ``NoDoubleBackward`` caused by ``exc`` where ``exc`` is the engine saying
    it has no derivative of an operation a backward calls (torch: "derivative
    for aten::_scaled_dot_product_flash_attention_for_cpu_backward is not
    implemented", the CPU attention kernel's backward) or of a torch.compile'd
    function's backward ("torch.compile with aot_autograd does not currently
    support double backward"), raised while the backward is differentiated;
    else ``None``."""
    text = str(exc)
    if not isinstance(exc, RuntimeError):
        return None
    if COMPILED_BACKWARD in text:
        reason = (f"its backward is torch.compile's ({text}): check second order on the "
                  "function it compiles")
    elif "derivative for " in text and "not implemented" in text:
        reason = f"the engine implements no derivative of an operation its backward calls: {text}"
    else:
        return None
    missing = NoDoubleBackward(f"differentiating the backward raised {type(exc).__name__} "
                               f"({text}): the function has no double backward there")
    missing.reason = reason
    missing.__cause__ = exc
    return missing


#: how torch refuses to differentiate the backward of a torch.compile'd function
COMPILED_BACKWARD = "does not currently support double backward"


#: how torch's backward of svd and eigh refuses a cotangent that depends on the
#: arbitrary phase of complex singular or eigen vectors, and what to check instead
PHASE_WORDS = "specified up to multiplication by e^{i phi}"
PHASE_FIX = ("the vectors are defined up to a phase each, and the check's unit cotangents "
             "depend on it: check a function of them that does not (abs(U), U @ Vh, "
             "U diag(S) Vh), as PyTorch's tests of svd and eigh do")

#: how autograd refuses a saved tensor changed in place since it was saved
INPLACE_WORDS = "modified by an inplace operation"
INPLACE_FIX = ("a tensor autograd saved for the backward was changed in place after it was "
               "saved (by the forward, or by the backward itself where it is differentiated "
               "again): compute into a new tensor (x = x * 2, not x.mul_(2)), or clone it "
               "before changing it")

#: how torch refuses ``autograd.grad`` through reentrant activation checkpointing
CHECKPOINT_WORDS = "use_reentrant=True, torch.utils.checkpoint"
CHECKPOINT_FIX = ("the model runs torch.utils.checkpoint with use_reentrant=True, whose backward "
                  "torch.autograd.grad cannot run (torch's gradcheck cannot either): check it "
                  "with use_reentrant=False, which computes the same gradients (a Hugging Face "
                  "model: gradient_checkpointing_enable(gradient_checkpointing_kwargs="
                  "{'use_reentrant': False})), or with checkpointing off")


def known_fix(exc: BaseException, otherwise: str) -> str:
    """What to do about ``exc`` where its words name a cause we know, else ``otherwise``."""
    text = str(exc)
    if PHASE_WORDS in text:
        return PHASE_FIX
    if INPLACE_WORDS in text:
        return INPLACE_FIX
    if CHECKPOINT_WORDS in text:
        return CHECKPOINT_FIX
    return otherwise
