"""A sample as the function PyTorch's gradient tests check, and those tests' flags.

``TorchCall`` builds what ``TestGradients._check_helper`` builds: the
differentiable inputs are the tensors that require grad among the sample's
input (each tensor of it, when the input is a list of tensors), its
positional args and its kwarg values, in that order; the function takes
them as positional arguments, puts each back where it came from (a tensor
list is rebuilt as a list), calls ``op.gradcheck_wrapper(variant, input,
*args, **kwargs)`` and applies the sample's ``output_process_fn_grad``.

``torch_runs`` lists the calls of torch's gradcheck or gradgradcheck that
the test of a check makes (with the op's flags and the defaults of torch's
testing wrappers: ``fast_mode`` and ``check_batched_grad`` on unless the op
says otherwise); ``torch_verdict`` makes them; ``adcheck_options`` gives
the same flags as ``gradcheck.check`` keywords.
"""
from __future__ import annotations

import time
from dataclasses import dataclass


def _is_tensor_list(value) -> bool:
    from torch.testing._internal.common_utils import is_iterable_of_tensors
    return is_iterable_of_tensors(value)


def _differentiable(value) -> bool:
    import torch
    return isinstance(value, torch.Tensor) and value.requires_grad


def gradcheck_inputs(sample) -> tuple:
    """The tensors torch's gradient tests hand to gradcheck, in their order."""
    first = list(sample.input) if _is_tensor_list(sample.input) else [sample.input]
    candidates = [*first, *sample.args, *sample.kwargs.values()]
    return tuple(x for x in candidates if _differentiable(x))


def _put_back(value, inputs: tuple, pos: int):
    """``value`` with its differentiable tensors taken from ``inputs[pos:]``, and
    the position after them. A tensor list comes back as a list."""
    if _is_tensor_list(value):
        rebuilt = []
        for tensor in value:
            if tensor.requires_grad:
                rebuilt.append(inputs[pos])
                pos += 1
            else:
                rebuilt.append(tensor)
        return rebuilt, pos
    if _differentiable(value):
        return inputs[pos], pos + 1
    return value, pos


def _widened(value, wider: dict):
    """``value`` with its fixed tensors (those that do not require grad) and
    its dtype values of a dtype in ``wider`` converted to the wider one."""
    import torch
    if not wider:
        return value
    if isinstance(value, torch.dtype):
        return wider.get(value, value)
    if isinstance(value, torch.Tensor):
        if value.requires_grad or value.dtype not in wider:
            return value
        return value.to(wider[value.dtype])
    if type(value) in (list, tuple):
        return type(value)(_widened(v, wider) for v in value)
    return value


class TorchCall:
    """``func(*inputs)`` is the op on the sample with ``inputs`` in place of its
    differentiable tensors, exactly as PyTorch's gradient tests call it.

    ``variant`` is the callable checked (the function, or a safe in-place
    wrapper); ``wrapper`` the OpInfo's ``gradcheck_wrapper``.
    """

    def __init__(self, variant, wrapper, sample):
        self.op, self.wrapper, self.sample = variant, wrapper, sample
        self.inputs = gradcheck_inputs(sample)
        self.process = sample.output_process_fn_grad
        #: no mpmath reference: op_db's references are NumPy ones, called otherwise
        self.reference = None

    def func(self, *inputs):
        """The op with ``inputs`` put back into the sample (gradcheck's function).

        Inputs in a wider dtype than the sample's (adcheck's double-precision
        run of a low-precision sample) take the sample's fixed tensors and its
        dtype arguments of the same narrow dtype along: the same op at the same
        values, exactly widened (``_softmax_backward_data``'s float32 softmax
        output and ``input_dtype`` would otherwise refuse float64 gradients)."""
        sample = self.sample
        wider = self._widening(inputs)
        first, pos = _put_back(sample.input, inputs, 0)
        args = []
        for value in sample.args:
            value, pos = _put_back(value, inputs, pos)
            args.append(_widened(value, wider))
        kwargs = {}
        for key, value in sample.kwargs.items():
            kwargs[key], pos = _put_back(value, inputs, pos)
            kwargs[key] = _widened(kwargs[key], wider)
        if wider:
            first = _widened(first, wider)
        output = self.wrapper(self.op, first, *args, **kwargs)
        return output if self.process is None else self.process(output)

    def _widening(self, inputs) -> dict:
        """``{sample dtype: given dtype}`` for the inputs given in a wider
        floating or complex dtype than the sample's own."""
        import torch
        wider = {}
        for given, own in zip(inputs, self.inputs):
            if (isinstance(given, torch.Tensor) and given.dtype != own.dtype
                    and (own.is_floating_point() or own.is_complex())
                    and torch.finfo(given.dtype).eps < torch.finfo(own.dtype).eps):
                wider[own.dtype] = given.dtype
        return wider

    def has_plain_output(self) -> bool:
        """Whether the output is differentiated as the op returns it."""
        return self.process is None or _is_identity(self.process)

    def nan_outputs(self) -> None:
        """op_db samples are torch's own: there is no NumPy reference saying where the
        output may be NaN, so this never objects (gradcheck itself handles NaN)."""
        return None


def _is_identity(fn) -> bool:
    sentinel = object()
    try:
        return fn(sentinel) is sentinel
    except Exception:  # noqa: BLE001 - a processing function that needs a tensor
        return False


def fast_mode_default() -> bool:
    """torch's testing wrappers run gradcheck in fast mode, except in its slow-gradcheck job."""
    from torch.testing._internal.common_utils import TEST_WITH_SLOW_GRADCHECK
    return not TEST_WITH_SLOW_GRADCHECK


def torch_runs(op, check: str, inplace: bool = False) -> list:
    """``[(function name, keywords)]``: the gradcheck (or gradgradcheck) calls
    PyTorch's test of ``check`` makes for each sample of ``op``."""
    fast = op.gradcheck_fast_mode if op.gradcheck_fast_mode is not None \
        else fast_mode_default()
    common = {"check_grad_dtypes": True, "nondet_tol": op.gradcheck_nondet_tol,
              "fast_mode": fast}
    if check == "reverse":
        return [("gradcheck", dict(common, check_batched_grad=bool(op.check_batched_grad),
                                   check_forward_ad=False, check_backward_ad=True,
                                   check_undefined_grad=True,
                                   check_batched_forward_grad=False))]
    if check == "forward":
        batched = op.check_inplace_batched_forward_grad if inplace \
            else op.check_batched_forward_grad
        return [("gradcheck", dict(common, check_batched_grad=False, check_forward_ad=True,
                                   check_backward_ad=False, check_undefined_grad=True,
                                   check_batched_forward_grad=bool(batched)))]
    if check == "gradgrad":
        return [("gradgradcheck", dict(common, gen_non_contig_grad_outputs=noncontig,
                                       check_batched_grad=bool(op.check_batched_gradgrad)))
                for noncontig in (False, True)]
    if check == "fwgrad_bwgrad":
        return [("gradgradcheck", dict(common, gen_non_contig_grad_outputs=noncontig,
                                       check_batched_grad=False, check_fwd_over_rev=True,
                                       check_rev_over_rev=False, check_undefined_grad=False))
                for noncontig in (False, True)]
    raise ValueError(f"no PyTorch gradient test runs the check {check!r}; choose reverse, "
                     "forward, gradgrad or fwgrad_bwgrad")


#: torch keywords that gradcheck.check takes under the same name
_SHARED = ("nondet_tol", "check_grad_dtypes", "check_undefined_grad", "check_batched_grad",
           "check_batched_forward_grad")


def adcheck_options(op, check: str, precise: bool, tolerance, inplace: bool = False) -> dict:
    """``gradcheck.check`` keywords for the adcheck check ``check`` with the flags
    torch's test passes (``precise``: error-estimated tolerances, else
    ``tolerance``'s atol/rtol). ``fast`` takes the flags of the reverse test; there
    is no ``reference`` check (op_db has no mpmath references)."""
    from adcheck.gradcheck.core.modes import check_named
    if check == "reference":
        raise ValueError("op_db entries have no mpmath reference; the reference check "
                         "does not apply to them")
    name, flags = torch_runs(op, "reverse" if check == "fast" else check, inplace)[0]
    options = check_named(check).keywords(precise=precise, atol=tolerance.atol,
                                          rtol=tolerance.rtol,
                                          has_forward=bool(op.supports_forward_ad))
    options.update({k: flags[k] for k in _SHARED if k in flags})
    # op_db ops return the outputs their derivative formulas declare
    # non-differentiable (native_layer_norm's saved mean and inverse std) without
    # requires_grad; torch's gradcheck ignores them, and no gradient is promised
    options["check_detached"] = False
    if not precise and check != "fast":
        options["fast_mode"] = flags["fast_mode"]
    return options


@dataclass
class Verdict:
    """torch's verdict on one sample: ``passed``, and when not, the exception
    (``error``: its class name, ``message``: its text); ``seconds`` spent."""

    passed: bool
    error: str = ""
    message: str = ""
    seconds: float = 0.0


def torch_verdict(call: TorchCall, runs: list) -> Verdict:
    """Run torch's gradcheck as its test does (every run must pass)."""
    import torch
    start = time.perf_counter()
    try:
        for name, flags in runs:
            check = getattr(torch.autograd, name)
            if not check(call.func, call.inputs, **flags):
                return Verdict(False, "AssertionError", f"{name} returned False",
                               time.perf_counter() - start)
    except Exception as exc:  # noqa: BLE001 - a failing check raises; so does the op
        return Verdict(False, type(exc).__name__, str(exc), time.perf_counter() - start)
    return Verdict(True, seconds=time.perf_counter() - start)
