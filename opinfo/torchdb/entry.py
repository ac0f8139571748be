"""``TorchOpEntry``: one of PyTorch's OpInfos behind adcheck's registry protocol.

It answers what the sweep asks an ``opinfo.OpInfo`` (``name``, ``family``,
``dtypes``, ``supports``, ``sample_inputs``, ``sample``, ``known_failure``,
``tolerance``, ``torch_name``, ``mpmath_ref``) from the OpInfo's own data,
and builds the checked call as PyTorch's gradient tests do (``call``). Its
dtypes and samples are torch's: a dtype may be given as a ``torch.dtype``
or by name (``"float64"``).
"""
from __future__ import annotations

from itertools import islice

from adcheck.gradcheck.core.modes import CAPABILITIES
from adcheck.opinfo.core import DEFAULT_TOLERANCES, Tolerance

from . import call as _call
from . import skips
from .sampling import iter_samples

#: the order dtypes are listed in (double precision first: what torch's tests check)
DTYPE_ORDER = ("float64", "complex128", "float32", "complex64", "float16", "bfloat16",
               "complex32")

#: random directions of a precise second-order check in double precision
SECOND_ORDER_PROBES = 4
#: and in a narrower dtype, whose cells are resolved more coarsely (see
#: ``gradcheck.large.lowprobed``): more directions, for the same odds of escape
LOW_PRECISION_PROBES = 8

#: op_db classes whose ops have no module prefix, and the family they get
_CLASS_FAMILIES = {"UnaryUfuncInfo": "unary", "BinaryUfuncInfo": "binary",
                   "ReductionOpInfo": "reduction", "SpectralFuncInfo": "fft",
                   "ShapeFuncInfo": "shape"}

#: tolerances of fixed-tolerance checks (``--torch-tolerances``) for dtypes that have
#: no adcheck default: torch never gradchecks them (its tests run double precision only)
_HALF = Tolerance(1e-1, 1e-1, "half-precision formats (unit roundoff 1e-3 to 8e-3): "
                  "finite differences keep about one significant digit")


def dtype_named(dtype):
    """A ``torch.dtype`` from itself or its name (``"float64"``, ``"torch.float64"``)."""
    import torch
    if isinstance(dtype, torch.dtype):
        return dtype
    found = getattr(torch, str(dtype).rsplit(".", 1)[-1], None)
    if not isinstance(found, torch.dtype):
        raise ValueError(f"{dtype!r} is not a torch dtype; use a name such as float64, "
                         "complex128, float32 or bfloat16")
    return found


def dtype_name(dtype) -> str:
    """``"float64"`` for ``torch.float64``."""
    return str(dtype).rsplit(".", 1)[-1]


def family_of(op) -> str:
    """``torch.`` and the op's module (``nn.functional``, ``linalg``, ``fft``,
    ``special``, ``masked``, ``sparse``), else its op_db class (``unary``,
    ``binary``, ``reduction``, ``fft``, ``shape``), else plain ``torch``."""
    name = op.name.removeprefix("torch.")
    if name.startswith("ops."):
        return "torch." + ".".join(name.split(".")[:2])
    if "." in name:
        return "torch." + name.rsplit(".", 1)[0]
    for cls in type(op).__mro__:
        if cls.__name__ in _CLASS_FAMILIES:
            return "torch." + _CLASS_FAMILIES[cls.__name__]
    return "torch"


def torch_name_of(op) -> str | None:
    """The op as a dotted path below ``torch`` (``Tensor.x`` for methods), or ``None``."""
    import torch
    path = op.name.removeprefix("torch.")
    for root, prefix in ((torch, ""), (torch.Tensor, "Tensor.")):
        obj = root
        for part in path.split("."):
            obj = getattr(obj, part, None)
            if obj is None:
                break
        if obj is not None and callable(obj):
            return prefix + path
    return None


def _safe_inplace(inplace):
    """The in-place variant applied to a copy of its first argument, as torch's tests
    do (a leaf that requires grad cannot be modified in place)."""
    def inplace_on_copy(tensor, *args, **kwargs):
        return inplace(tensor.clone(), *args, **kwargs)
    inplace_on_copy.__wrapped__ = inplace
    return inplace_on_copy


class TorchOpEntry:
    """One op_db OpInfo (``opinfo``) as an adcheck registry entry.

    ``variant`` is ``"function"`` (what ``test_fn_grad`` checks) or ``"inplace"``
    (``test_inplace_grad``: the in-place variant on a copy; named ``<op>_``).
    """

    mpmath_ref = None
    ref = None
    torch_fn = None
    #: op_db ops return the outputs their derivative formulas declare
    #: non-differentiable without requires_grad (native_layer_norm's saved mean
    #: and inverse std); torch's gradcheck ignores them: so does the runner
    check_detached = False

    def __init__(self, opinfo, variant: str = "function"):
        import torch
        self.opinfo, self.variant = opinfo, variant
        suffix = f".{opinfo.variant_test_name}" if opinfo.variant_test_name else ""
        self.name = opinfo.name + ("_" if variant == "inplace" else "") + suffix
        self.family = family_of(opinfo)
        self.torch_name = torch_name_of(opinfo)
        self.op = opinfo.get_op() if variant == "function" \
            else _safe_inplace(opinfo.get_inplace())
        allowed = opinfo.supported_backward_dtypes("cpu") & opinfo.supported_dtypes("cpu")
        self.dtypes = tuple(getattr(torch, n) for n in DTYPE_ORDER if getattr(torch, n) in allowed)
        declared = skips.declared(opinfo, variant)
        self.known_failures = tuple(declared.known_failures)
        #: assertEqual tolerances op_db declares for these tests (gradcheck never sees them)
        self.declared_tolerances = dict(declared.tolerances)
        self.notes = tuple(declared.notes)
        self.description = f"PyTorch op_db: {opinfo.full_name} ({variant} variant)"

    # what the OpInfo declares -------------------------------------------------

    @property
    def supports_autograd(self) -> bool:
        return bool(self.opinfo.supports_autograd)

    @property
    def supports_forward_ad(self) -> bool:
        return bool(self.opinfo.supports_forward_ad)

    @property
    def supports_gradgrad(self) -> bool:
        return bool(self.opinfo.supports_gradgrad)

    @property
    def supports_fwgrad_bwgrad(self) -> bool:
        return bool(self.opinfo.supports_fwgrad_bwgrad) and self.variant == "function"

    @property
    def supports_complex_autograd(self) -> bool:
        return any(d.is_complex for d in self.dtypes)

    @property
    def gradcheck_nondet_tol(self) -> float:
        return float(self.opinfo.gradcheck_nondet_tol)

    @property
    def gradcheck_fast_mode(self) -> bool:
        """The fast_mode torch's tests run gradcheck with (the op's, else the default)."""
        own = self.opinfo.gradcheck_fast_mode
        return _call.fast_mode_default() if own is None else bool(own)

    @property
    def check_batched_grad(self) -> bool:
        return bool(self.opinfo.check_batched_grad)

    @property
    def check_batched_gradgrad(self) -> bool:
        return bool(self.opinfo.check_batched_gradgrad)

    @property
    def check_batched_forward_grad(self) -> bool:
        own = self.opinfo.check_inplace_batched_forward_grad if self.variant == "inplace" \
            else self.opinfo.check_batched_forward_grad
        return bool(own)

    def supports(self, mode: str, dtype=None) -> bool:
        """Whether the check capability ``mode`` (reverse, forward, gradgrad,
        fwgrad_bwgrad) applies, for ``dtype`` when given."""
        if mode not in CAPABILITIES:
            raise ValueError(f"unknown mode {mode!r}; expected one of {', '.join(CAPABILITIES)}")
        if dtype is not None and dtype_named(dtype) not in self.dtypes:
            return False
        own = {"reverse": self.supports_autograd, "forward": self.supports_forward_ad,
               "gradgrad": self.supports_gradgrad,
               "fwgrad_bwgrad": self.supports_fwgrad_bwgrad}[mode]
        if self.variant == "inplace":
            own = own and bool(self.opinfo.supports_inplace_autograd)
        return self.supports_autograd and own

    # samples -------------------------------------------------------------------

    def sample_inputs(self, dtype, requires_grad: bool = True, rng=None):
        """The samples for ``dtype``, as PyTorch's gradient tests list them (``rng`` is
        accepted for the protocol and ignored: each sample has its own stable seed).
        The in-place variant skips samples that broadcast their input, as torch does."""
        for sample in iter_samples(self.opinfo, self.name, dtype_named(dtype), requires_grad):
            if self.variant == "inplace" and sample.broadcasts_input:
                continue
            yield sample

    def special_inputs(self, dtype, requires_grad: bool = True, rng=None):
        """op_db has no samples at declared non-differentiable points."""
        return iter(())

    def sample(self, index: int, dtype, requires_grad: bool = True):
        """Sample number ``index`` for ``dtype``, rebuilt on its own."""
        every = iter_samples(self.opinfo, self.name, dtype_named(dtype), requires_grad)
        found = next(islice(every, index, None), None)
        if found is None:
            raise IndexError(f"{self.name}: no sample {index} for {dtype_name(dtype)}")
        if self.variant == "inplace" and found.broadcasts_input:
            raise IndexError(f"{self.name}: sample {index} broadcasts its input, which the "
                             "in-place variant cannot do; torch's tests skip it")
        return found

    def call(self, sample) -> _call.TorchCall:
        """The function and differentiable inputs torch's gradient tests check."""
        return _call.TorchCall(self.op, self.opinfo.gradcheck_wrapper, sample)

    # policy ----------------------------------------------------------------------

    def tolerance(self, dtype) -> Tolerance:
        """torch's gradcheck defaults for double precision (its tests pass no other);
        adcheck's defaults for the others."""
        dtype = dtype_named(dtype)
        for known, tol in DEFAULT_TOLERANCES.items():
            if str(known).rsplit(".", 1)[-1] == dtype_name(dtype):
                return tol
        return _HALF

    def known_failure(self, check: str, dtype, sample=None):
        """The known failure (from op_db's skips and xfails) covering ``check`` (a
        known-failure name such as ``torch_reverse``) here, or ``None``."""
        dtype = dtype_named(dtype)
        for kf in self.known_failures:
            if kf.matches(check, dtype, sample):
                return kf
        return None

    def torch_runs(self, check: str) -> list:
        """The torch gradcheck/gradgradcheck calls PyTorch's test of ``check`` makes."""
        return _call.torch_runs(self.opinfo, check, self.variant == "inplace")

    def adcheck_options(self, check: str, dtype, precise: bool = True) -> dict:
        """``gradcheck.check`` keywords for ``check`` with the flags torch's test passes.

        A precise second-order check compares ``J U`` for random directions
        (``jacobian="probed"``; the report states the odds that a wrong entry
        escapes) instead of whole Jacobians: the first derivative has twice the
        inputs, and a dense extrapolated Jacobian of it was most of a
        whole-op_db sweep's time. ``SECOND_ORDER_PROBES`` directions in double
        precision, ``LOW_PRECISION_PROBES`` in narrower dtypes (their rounding
        allowance is carried through the directions: ``gradcheck.large.lowprobed``)."""
        options = _call.adcheck_options(self.opinfo, check, precise, self.tolerance(dtype),
                                        self.variant == "inplace")
        if precise and check in ("gradgrad", "fwgrad_bwgrad"):
            double = dtype_name(dtype_named(dtype)) in ("float64", "complex128")
            options.update(jacobian="probed",
                           probes=SECOND_ORDER_PROBES if double else LOW_PRECISION_PROBES)
        return options

    def torch_verdict(self, sample, check: str = "reverse") -> _call.Verdict:
        """torch's own verdict on ``sample`` for ``check``, as its test reaches it."""
        return _call.torch_verdict(self.call(sample), self.torch_runs(check))

    def reproducer(self, index: int, dtype, check: str = "reverse", precise: bool = True,
                   seed: int = 0) -> str:
        """Python that rebuilds sample ``index`` and runs adcheck's check on it."""
        name = dtype_name(dtype_named(dtype))
        return (f"from adcheck import gradcheck\nfrom adcheck.opinfo import torchdb\n\n"
                f"entry = torchdb.get({self.name!r})\n"
                f"sample = entry.sample({index}, {name!r})\n"
                f"call = entry.call(sample)\n"
                f"options = entry.adcheck_options({check!r}, {name!r}, precise={precise})\n"
                f"report = gradcheck.check(call.func, call.inputs, name=entry.name, "
                f"seed={seed}, **options)\n"
                f"print(report.message())\n")

    def __repr__(self) -> str:
        return f"TorchOpEntry({self.name!r}, family={self.family!r})"
