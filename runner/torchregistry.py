"""PyTorch's operator database as a registry of the runner (``--registry torch``).

The ops are ``opinfo.torchdb``'s entries (every op_db OpInfo with autograd
on CPU, in op_db's order), read through ``runner.registry.Registry`` like
adcheck's own. What differs is said here, once:

- the engine is always torch: these are torch's formulas;
- a sweep that names no dtype checks every dtype torch supports backward for
  on CPU (``default_dtypes``), and the first ``samples`` samples of each
  (two by default: op_db holds up to a hundred per op);
- the checks default to the four PyTorch's gradient tests run (reverse,
  forward, gradgrad, fwgrad_bwgrad); each applies where the OpInfo declares
  it, and runs with the flags torch's test passes (``nondet_tol``, batched
  gradients: ``TorchOpEntry.adcheck_options``);
- op_db's skips and expected failures are known failures of the checks their
  tests run (the runner reports one that passes as stale);
- a dtype adcheck's gradcheck cannot take yet is a skip naming why
  (``dtype_problem``: a probe, so every dtype it learns counts at once);
- the worker processes are forked from a server that has built the entries
  (``preload``: ``runner.torchwarm``), so op_db is imported once per run.

The registry object holds only its settings: it is what travels to the
workers, and every process reads its own ``opinfo.torchdb``.
"""
from __future__ import annotations

from itertools import islice
from typing import Iterable

from adcheck.runner.errors import PluginError, RunnerError
from adcheck.runner.protocol import RegistryDefaults

#: op_db holds up to a hundred samples per op and dtype: a sweep takes the first few
DEFAULT_SAMPLES = 2
#: the checks of PyTorch's gradient tests (test_fn_grad, test_forward_mode_AD,
#: test_fn_gradgrad, test_fn_fwgrad_bwgrad)
TORCH_TESTS = ("reverse", "forward", "gradgrad", "fwgrad_bwgrad")

#: dtype name -> why gradcheck cannot check it (None: it can), probed once per process
_PROBED: dict = {}


def _torchdb():
    """``opinfo.torchdb`` (cheap: it imports neither torch nor op_db)."""
    from adcheck.opinfo import torchdb
    return torchdb


def _loaded():
    """``opinfo.torchdb`` with its entries built; op_db's failure to import is a
    ``RunnerError`` (exit 2) naming what to install."""
    torchdb = _torchdb()
    try:
        torchdb.entries()
    except torchdb.TorchDbUnavailable as exc:
        raise RunnerError(f"--registry torch: {exc}") from None
    return torchdb


def dtype_problem(dtype) -> str | None:
    """Why adcheck's gradcheck cannot check torch tensors of ``dtype``, or ``None``.

    Probed by checking the identity on two entries of that dtype: an exception
    (rather than a verdict) means the dtype cannot be checked; its text is the
    reason. Cached per process."""
    torchdb = _torchdb()
    name = torchdb.dtype_name(dtype)
    if name not in _PROBED:
        import warnings

        import torch

        from adcheck import gradcheck
        x = torch.ones(2, dtype=torchdb.dtype_named(name), requires_grad=True)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")   # "experimental" dtypes warn on creation
                gradcheck.check(torch.clone, (x,), precise=True, seed=0)
        except Exception as exc:  # noqa: BLE001 - whatever it raises is the reason
            _PROBED[name] = (f"adcheck's gradcheck cannot check {name} tensors yet "
                             f"({type(exc).__name__}: {' '.join(str(exc).split())})")
        else:
            _PROBED[name] = None
    return _PROBED[name]


class TorchRegistry(RegistryDefaults):
    """PyTorch's op_db (see the module docstring); ``samples``: how many samples
    of each op and dtype a sweep checks (``None``: every one)."""

    name = "torch"
    engine = "torch"
    default_checks = TORCH_TESTS
    preload = ("adcheck.runner.torchwarm",)
    #: the two second-order checks draw the same grad_outputs, so the second
    #: reuses the first one's numerical Jacobian of the first derivative
    seed_checks = {"fwgrad_bwgrad": "gradgrad"}
    chooses_dtypes = True

    def __init__(self, samples: int | None = DEFAULT_SAMPLES):
        if samples is not None and samples < 1:
            raise RunnerError(f"samples={samples}: check at least one sample per op and "
                              "dtype, or None for every sample")
        self.samples_per_dtype = samples

    @staticmethod
    def require() -> None:
        """``RunnerError`` naming what to install when op_db cannot be imported."""
        missing = _torchdb().missing()
        if missing:
            raise RunnerError(
                f"--registry torch needs {' and '.join(missing)}, which "
                f"{'is' if len(missing) == 1 else 'are'} not installed (PyTorch's op_db "
                "imports them); install them with pip install \"adcheck[torch]\"")

    @property
    def dtype_names(self) -> tuple:
        return _torchdb().DTYPE_ORDER

    def record(self) -> dict:
        """What a report's settings say about this registry."""
        import torch
        return {"registry": self.name, "samples_per_dtype": self.samples_per_dtype,
                "torch_version": torch.__version__}

    def load_plugins(self, paths: Iterable) -> list:
        if list(paths):
            raise PluginError("plugin files add OpInfos to adcheck's own registry; PyTorch's "
                              "op_db (--registry torch) takes none")
        return []

    def ops(self) -> list:
        return list(_loaded().entries())

    def get(self, name: str):
        return _loaded().get(name)

    def families(self) -> list:
        return _loaded().families()

    def dtype(self, name: str):
        return _torchdb().dtype_named(name)

    def default_dtypes(self, info) -> list:
        """Every dtype torch supports backward for on CPU, double precision first."""
        return [_torchdb().dtype_name(d) for d in info.dtypes]

    def sample_names(self, info, dtype) -> list:
        return [s.name for s in self.samples(info, dtype)]

    def samples(self, info, dtype, index: int | None = None) -> Iterable:
        if index is not None:
            return [info.sample(index, dtype)]
        return islice(info.sample_inputs(dtype), self.samples_per_dtype)

    def call(self, info, sample, engine: str):
        """The call torch's gradient tests check (``engine`` is always torch),
        its forward run once: what it raises is the sample's, before any check
        (``unsupported_forward`` says which of it is a skip)."""
        call = info.call(sample)
        call.func(*call.inputs)
        return call

    @staticmethod
    def unsupported_derivative(message: str, dtype) -> str | None:
        """A check's error ``message`` when torch's derivative raised "not
        implemented" for ``dtype``, said as the failure it is: op_db declares
        backward support in that dtype. ``None`` for any other error."""
        if "NotImplementedError" not in message and "not implemented for" not in message:
            return None
        return (f"torch's derivative does not run in {_torchdb().dtype_name(dtype)} on CPU, "
                f"though op_db declares backward support for it: {message}")

    @staticmethod
    def unsupported_forward(exc: BaseException, dtype) -> str | None:
        """Why the op's forward raising ``exc`` means torch has no kernel for
        ``dtype`` on CPU (``NotImplementedError``, or torch's "not implemented
        for 'ComplexHalf'"), else ``None``. Only the forward: a derivative that
        does not run where op_db declares backward support is a failure."""
        text = " ".join(str(exc).split())
        if not isinstance(exc, NotImplementedError) and "not implemented for" not in text:
            return None
        return (f"torch's forward does not run in {_torchdb().dtype_name(dtype)} on CPU "
                f"({type(exc).__name__}: {text})")

    def check_keywords(self, info, check: str, dtype, precise: bool) -> dict:
        """``gradcheck.check``'s keywords with the flags torch's test passes."""
        return info.adcheck_options(check, dtype, precise=precise)

    @staticmethod
    def dispute(info, sample, call, dtype, check: str, report) -> str | None:
        """For a failed check in double precision: whether torch's gradcheck, run as
        PyTorch's test of ``check`` runs it, fails the sample too, and if not the
        evidence of who is right (``opinfo.torchdb.dispute``)."""
        from adcheck.opinfo.torchdb.dispute import dispute
        if check not in ("reverse", "forward", "gradgrad", "fwgrad_bwgrad", "fast"):
            return None
        name = _torchdb().dtype_name(dtype)
        command = (f"adcheck op {info.name} --registry torch --dtype {name} "
                   f"--sample {sample.index}")
        runs = info.torch_runs("reverse" if check == "fast" else check)
        return dispute(call.func, call.inputs, runs, name, report, command)

    @staticmethod
    def confirm_error(info, sample, call, dtype, check: str, message: str) -> str | None:
        """A check that raised ``message``, said as the failure it is when torch
        raises the same without adcheck (its own gradcheck as PyTorch's test runs
        it, or the derivative called directly: ``opinfo.torchdb.raised``);
        ``None`` when torch does not, and the error stays the run's."""
        from adcheck.opinfo.torchdb.raised import confirm
        if check not in TORCH_TESTS:
            return None
        name = _torchdb().dtype_name(dtype)
        command = (f"adcheck op {info.name} --registry torch --dtype {name} "
                   f"--sample {sample.index} --check {check}")
        return confirm(call.func, call.inputs, info.torch_runs(check), check, message, command)

    def skip_reason(self, info, dtype, check: str) -> str | None:
        return dtype_problem(dtype)

    def __eq__(self, other) -> bool:
        return isinstance(other, TorchRegistry) and \
            other.samples_per_dtype == self.samples_per_dtype

    def __hash__(self) -> int:
        return hash((self.name, self.samples_per_dtype))

    def __repr__(self) -> str:
        return f"TorchRegistry(samples={self.samples_per_dtype})"
