"""The options of one check, validated once: ``Options``.

``check(func, inputs, **keywords)`` builds an ``Options`` from its keywords
(``Options.from_keywords``); ``gradcheck()`` and ``gradgradcheck()`` build it
from PyTorch's flags. Everything below ``check`` reads attributes of this one
frozen object: the defaults and the validation live here and nowhere else.

Example::

    from adcheck.gradcheck.core.options import Options
    options = Options.from_keywords(precise=True, check_forward_ad=True)
    options.order, options.fast     # 1, False
    Options.from_keywords(presice=True)   # TypeError naming the known keywords
"""
from __future__ import annotations

import numbers
import time
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, fields
from typing import Any, Callable

from adcheck.gradcheck.core.budget import DEFAULT_BUDGET

#: bytes one check may hold in arrays it makes (``memory_budget``): 512 MiB
DEFAULT_MEMORY_BUDGET = DEFAULT_BUDGET
#: the least budget accepted: below it a single evaluation's arrays may not fit
MIN_MEMORY_BUDGET = 2**20
#: seconds ``explore=True`` may spend looking for failing inputs (``gradcheck.explore``)
DEFAULT_EXPLORE_BUDGET = 20.0
#: ``check()``'s ``explore`` when not given: the quick pass (docs/explore.md); an
#: ``Options`` made otherwise (``gradcheck()``, a run's checks) does not explore
CHECK_EXPLORE = "quick"
#: how the Jacobians are built (``jacobian``), see ``gradcheck.producers``
JACOBIAN_KINDS = ("auto", "dense", "compressed", "probed")


#: how ``precise=True`` takes the numerical side of a formula narrower than double
#: precision: "auto" (float64 when the function accepts it, else its own dtype),
#: "float64" (refuse a function that does not accept it), "dtype" (its own dtype)
LOW_PRECISION = ("auto", "float64", "dtype")


@dataclass(frozen=True)
class Options:
    """Everything ``check`` may be asked to do, with PyTorch's defaults where
    PyTorch has the keyword (see ``gradcheck.check`` for each one's meaning)."""

    eps: float = 1e-6
    atol: float = 1e-5
    rtol: float = 1e-3
    nondet_tol: float = 0.0
    check_undefined_grad: bool = True
    check_grad_dtypes: bool = False
    check_batched_grad: bool = False
    check_batched_forward_grad: bool = False
    check_forward_ad: bool = False
    check_backward_ad: bool = True
    fast_mode: bool = False
    precise: bool = False
    low_precision: str = "auto"
    reference: Callable | None = None
    probes: int = 1
    seed: int | None = None
    name: str | None = None
    check_scaling: bool = True
    check_adjoint: bool = True
    check_detached: bool = True
    check_vmap_rule: bool = True
    #: each input alone requiring grad gets the gradient it gets with all of them
    #: (``verdict.alone``); ``check()`` turns it on, torch's ``gradcheck`` has none
    check_inputs_alone: bool = False
    order: int = 1
    grad_outputs: Any = None
    buffers: bool = False
    input_names: tuple | None = None
    memory_budget: int = DEFAULT_MEMORY_BUDGET
    jacobian: str = "auto"
    time_limit: float | None = None
    explore: bool | str = False
    explore_budget: float = DEFAULT_EXPLORE_BUDGET
    #: an mpmath reference (``numerics.reference``'s convention) that judges a failing
    #: explored point again: a point where it agrees with the formula and not with
    #: finite differences is not failed (``gradcheck.explore.arbiter``)
    explore_reference: Callable | None = None
    #: a function whose derivatives this one must have, already checked against
    #: differences (an in-place variant's out-of-place op): the AD Jacobians are
    #: compared with its autograd Jacobian instead (``gradcheck.core.sameas``)
    same_as: Callable | None = None
    #: build Jacobians in batches (one vmapped evaluation for many vectors); False:
    #: one vector at a time. Never changes what a check finds, only its speed
    batching: bool = True

    def __post_init__(self):
        if self.order not in (1, 2):
            raise ValueError(f"check: order must be 1 or 2, not {self.order!r}")
        if not self.check_forward_ad and not self.check_backward_ad:
            also = (" (gradgradcheck's check_fwd_over_rev and check_rev_over_rev)"
                    if self.order == 2 else "")
            raise ValueError(f"check: at least one of check_forward_ad and check_backward_ad"
                             f"{also} must be True")
        if not _number(self.eps) or not self.eps > 0:
            raise ValueError(f"check: eps must be a positive number (the finite-difference "
                             f"step), not {self.eps!r}")
        for name in ("atol", "rtol", "nondet_tol"):
            value = getattr(self, name)
            if not _number(value) or not value >= 0:
                raise ValueError(f"check: {name} must be a number >= 0, not {value!r}")
        if self.low_precision not in LOW_PRECISION:
            raise ValueError(f"check: low_precision must be one of "
                             f"{', '.join(map(repr, LOW_PRECISION))}, not {self.low_precision!r}")
        if self.input_names is not None:
            names = self.input_names
            if isinstance(names, str) or not all(isinstance(n, str) for n in names):
                raise ValueError(f"check: input_names must be a sequence of strings, one per "
                                 f"input, not {names!r}")
            object.__setattr__(self, "input_names", tuple(names))
        if not _integer(self.probes) or self.probes < 1:
            raise ValueError(f"check: probes must be an integer >= 1 (the number of random "
                             f"probes), not {self.probes!r}")
        if not _integer(self.memory_budget) or self.memory_budget < MIN_MEMORY_BUDGET:
            raise ValueError(f"check: memory_budget must be a number of bytes >= "
                             f"{MIN_MEMORY_BUDGET} (1 MiB), not {self.memory_budget!r}; "
                             "for example memory_budget=512 * 2**20")
        if self.explore not in (False, True, "quick"):
            raise ValueError(f"check: explore must be True, False or 'quick' (exact zeros, "
                             f"ties and three magnitudes only), not {self.explore!r}")
        if not _number(self.explore_budget) or not 0 < self.explore_budget < float("inf"):
            raise ValueError(f"check: explore_budget must be a number of seconds > 0, not "
                             f"{self.explore_budget!r}; for example explore_budget=20")
        if self.time_limit is not None and (not _number(self.time_limit)
                                            or not self.time_limit >= 0):
            raise ValueError(f"check: time_limit must be a number of seconds >= 0 or None, "
                             f"not {self.time_limit!r}")
        if self.same_as is not None and not callable(self.same_as):
            raise ValueError(f"check: same_as must be a function with the same derivatives "
                             f"(an in-place variant's out-of-place op), not {self.same_as!r}")
        if not isinstance(self.batching, bool):
            raise ValueError(f"check: batching must be True or False, not {self.batching!r}")
        if self.jacobian not in JACOBIAN_KINDS:
            raise ValueError(f"check: jacobian must be one of {', '.join(JACOBIAN_KINDS)}, "
                             f"not {self.jacobian!r}")
        if self.jacobian in ("compressed", "probed") and self.reference is not None:
            raise ValueError(f"check: jacobian={self.jacobian!r} compares finite differences "
                             "along directions; an mpmath reference gives whole Jacobians "
                             "only: pass jacobian='auto' or 'dense' with reference=")

    @classmethod
    def from_keywords(cls, **keywords) -> Options:
        """The options named by ``keywords``, the defaults for the others.

        Raises ``TypeError`` for a keyword that is not an option (naming the
        known ones) and ``ValueError`` for a value out of range.
        """
        memo = _memo_key(cls, keywords)
        if memo is not None:
            found = _MEMO.get(memo)
            if found is not None:
                return found
        known = _names(cls)
        unknown = sorted(set(keywords) - set(known))
        if "against" in unknown:   # issue 32: not reference=, which is an mpmath reference
            raise TypeError("check: against= judges a kernel by its float64 reference: call "
                            "adcheck.gradcheck.kernels.check(kernel, inputs, against=ref); "
                            "check(reference=...) takes an mpmath reference")
        if unknown:
            raise TypeError(f"check: unknown keyword{'s' if len(unknown) > 1 else ''} "
                            f"{', '.join(unknown)}; the known keywords are {', '.join(known)}")
        for name, value in _CALLER_DEFAULTS.get().items():
            if name not in keywords and not _own_plan(name, keywords):
                keywords[name] = value() if callable(value) else value
        options = cls(**keywords)
        if memo is not None:
            if len(_MEMO) >= MEMO_SIZE:
                _MEMO.clear()
            _MEMO[memo] = options
        return options

    def derive(self, **keywords) -> Options:
        """These options as the defaults of another check: ``keywords`` over them,
        validated as ``from_keywords`` validates (the caller's defaults of
        ``caller_defaults`` apply where neither gives a value). How a run's
        options (``runner.checks.Policy``) become each check's."""
        base = self.keywords()
        base = {k: v for k, v in base.items() if not _own_plan(k, keywords)}
        return Options.from_keywords(**{**base, **keywords})

    def keywords(self) -> dict:
        """The keywords that differ from the defaults: ``check(func, inputs,
        **options.keywords())`` runs these options (``explore`` always given:
        ``check``'s default is not this class's, ``CHECK_EXPLORE``)."""
        return {f.name: getattr(self, f.name) for f in fields(self)
                if f.name == "explore" or not _same(getattr(self, f.name), f.default)}

    @property
    def fast(self) -> bool:
        """Whether fast mode applies: asked for, and neither ``precise`` nor a
        ``reference`` (both need whole Jacobians)."""
        return self.fast_mode and not self.precise and self.reference is None

    def settings(self) -> dict:
        """Every option but the functions (references, ``same_as``), for ``Report.settings``."""
        # (the instance's dict holds the fields in their order, set once by
        # __init__: a copy of it is a tenth of the cost of a getattr per field)
        found = dict(self.__dict__)
        found.pop("reference", None)
        found.pop("explore_reference", None)
        found.pop("same_as", None)
        return found


#: ``Options`` made from keywords of plain values, by those keywords (their types
#: included: ``probes=True`` is refused where ``probes=1`` is not): a frozen
#: dataclass of 35 fields costs 2 % of a small check to build and validate, and
#: ``gradcheck()`` asks for the same options call after call
_MEMO: dict = {}
MEMO_SIZE = 256
_PLAIN = (bool, int, float, str, type(None))


def _memo_key(cls, keywords: dict) -> tuple | None:
    """The key of ``keywords`` in ``_MEMO``, or ``None`` when they are not kept: a
    value not of a plain type (a reference function, grad_outputs, input names),
    or defaults given by a caller (``caller_defaults``, a time limit per check)."""
    if cls is not Options or _CALLER_DEFAULTS.get():
        return None
    key = []
    for name, value in keywords.items():
        kind = type(value)
        if kind not in _PLAIN:
            return None
        key.append((name, kind, value))
    return tuple(key)


def _names(cls) -> tuple:
    """The field names of ``cls``, looked up once (``dataclasses.fields`` builds
    its list anew on every call: a tenth of a small check's option handling)."""
    names = cls.__dict__.get("_field_names")
    if names is None:
        names = tuple(f.name for f in fields(cls))
        setattr(cls, "_field_names", names)
    return names


#: keywords a caller running many checks gives each of them where the check's own
#: keywords leave them out (``caller_defaults``); a callable value is called per check
_CALLER_DEFAULTS: ContextVar[dict] = ContextVar("adcheck_caller_defaults", default={})


@contextmanager
def caller_defaults(jacobian: str | None = None, deadline: float | None = None):
    """In the block, ``check`` takes ``jacobian`` as its default plan, and a
    ``time_limit`` of the seconds left until ``deadline`` (``time.monotonic()``),
    unless a call gives them: how ``adcheck``'s runner passes ``--jacobian`` and
    ``--timeout`` to every check of a task."""
    given = {}
    if jacobian is not None:
        given["jacobian"] = jacobian
    if deadline is not None:
        given["time_limit"] = lambda: max(deadline - time.monotonic(), 0.0)
    token = _CALLER_DEFAULTS.set({**_CALLER_DEFAULTS.get(), **given})
    try:
        yield
    finally:
        _CALLER_DEFAULTS.reset(token)


def _same(value, default) -> bool:
    # a Jacobian's grad_outputs or a reference compare by identity (an array's == is
    # elementwise); plain values by value, a bool never equal to an int
    if value is default:
        return True
    plain = (bool, int, float, str, tuple, type(None))
    return isinstance(value, plain) and type(value) is type(default) and value == default


def _own_plan(name: str, keywords: dict) -> bool:
    """Whether a default for ``name`` gives way: an mpmath reference gives whole
    Jacobians, so a check with one keeps its own plan unless its keywords name one."""
    return name == "jacobian" and "jacobian" not in keywords \
        and keywords.get("reference") is not None


def _number(value) -> bool:
    if type(value) is float or type(value) is int:   # (the usual: no ABC's check)
        return True
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def _integer(value) -> bool:
    """An integer, not a bool (an ``int`` answers without ``numbers.Integral``'s
    check, a microsecond a call, several a check)."""
    if type(value) is int:
        return True
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)
