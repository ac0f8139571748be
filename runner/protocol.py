"""The registry protocol: what the runner asks of a source of ops.

``Registry`` is the required part; ``RegistryDefaults`` declares every optional
hook with its default, and a registry derives from it (``runner.registry``
explains the protocol and holds adcheck's own registry; ``runner.torchregistry``
is PyTorch's op_db). A module of its own so that both import it without
importing each other.
"""
from __future__ import annotations

from typing import Iterable, Protocol

#: the dtypes a run may ask for, by name
DTYPE_NAMES = ("float32", "float64", "complex64", "complex128", "bfloat16", "float16")


class RegistryDefaults:
    """The optional part of the registry protocol: every hook, with its default.
    ``OpinfoRegistry`` keeps the defaults; ``TorchRegistry`` (PyTorch's op_db)
    overrides most of them."""

    name = "?"
    #: the only engine the registry's ops run on (``None``: any)
    engine: str | None = None
    #: the checks of a sweep that names none (``None``: ``DEFAULT_CHECKS``)
    default_checks: tuple | None = None
    #: modules the worker processes import once, before they are forked
    preload: tuple = ()
    #: check -> the check whose seed it shares (and so its grad_outputs and, through
    #: ``gradcheck.core.reuse``, its numerical Jacobian)
    seed_checks: dict = {}
    #: whether ``default_dtypes`` chooses an op's dtypes itself (every dtype it
    #: supports), so that a sweep adds no low-precision dtypes of its own
    chooses_dtypes = False

    @property
    def dtype_names(self) -> tuple:
        """The dtypes a run on this registry may name."""
        return DTYPE_NAMES

    def default_dtypes(self, info) -> list | None:
        """The dtypes of ``info`` a sweep checks when it names none; ``None``: the
        op's double-precision ones (float64, complex128)."""
        return None

    def check_keywords(self, info, check: str, dtype, precise: bool) -> dict | None:
        """``gradcheck.check``'s keywords for ``check``; ``None``: from the op's
        tolerance for ``dtype`` (``runner.checks.options``)."""
        return None

    def skip_reason(self, info, dtype, check: str) -> str | None:
        """Why ``check`` cannot run on ``dtype`` here, or ``None``."""
        return None

    def unsupported_forward(self, exc: BaseException, dtype) -> str | None:
        """Why the op's forward raising ``exc`` means it has no kernel for
        ``dtype`` (a skip), or ``None`` (an error)."""
        return None

    def unsupported_derivative(self, message: str, dtype) -> str | None:
        """The failure a check's error ``message`` is when a derivative the
        registry declares for ``dtype`` does not run, or ``None`` (an error)."""
        return None

    def confirm_error(self, info, sample, call, dtype, check: str, message: str) -> str | None:
        """The failure a check's error is when the code under check raises the
        same without adcheck, or ``None`` (it stays an error)."""
        return None

    def dispute(self, info, sample, call, dtype, check: str, report) -> str | None:
        """Another verdict on a failed check (``CheckResult.dispute``), or ``None``."""
        return None

    def record(self) -> dict:
        """What a report's settings record about this registry."""
        return {"registry": self.name}


class Registry(Protocol):
    """What the runner needs from a source of ops (the required part; the
    optional hooks are ``RegistryDefaults``')."""

    name: str

    def load_plugins(self, paths: Iterable) -> list:
        """Load plugin files (once per process); the names they added.
        ``PluginError`` names a file that does not load."""

    def ops(self) -> list:
        """Every op, in the registry's order."""

    def get(self, name: str):
        """The op called ``name``; ``KeyError`` whose text suggests close names."""

    def families(self) -> list:
        """The families, each once, in order of appearance."""

    def dtype(self, name: str):
        """The dtype object called ``name`` (``"float64"``)."""

    def sample_names(self, info, dtype) -> list:
        """The names of the op's samples for ``dtype``, without making them."""

    def samples(self, info, dtype, index: int | None = None) -> Iterable:
        """The op's samples for ``dtype`` (only sample ``index`` when given),
        made with their inputs requiring grad."""

    def call(self, info, sample, engine: str):
        """The sample as what gradcheck checks: ``func``, ``inputs``,
        ``reference``, ``has_plain_output()``, ``nan_outputs()``."""
